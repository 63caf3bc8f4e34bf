"""Malformed input through the real daemon: answered or ignored as JSON-RPC says, never more.

Each malformed message is followed by good requests in the same write: they must all be
answered, and the daemon must keep serving.
"""

import json
import time

import pytest

FRAMINGS = ["ndjson", "content-length"]


def req(rid, method="getState", params=None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode()


def follow_ups(d, first: int, count: int = 20) -> bytes:
    return b"".join(d.frame(req(first + i)) for i in range(count))


def assert_answered(d, first: int, count: int = 20) -> None:
    for i in range(count):
        assert "result" in d.wait_response(first + i), d.responses.get(first + i)


def wait_null_errors(d, count: int = 1, timeout: float = 5.0) -> list[dict]:
    """The replies with ``id: null`` seen so far, once there are ``count`` of them."""
    def found():
        with d._cond:
            errors = [m for m in parsed(d) if "id" in m and m["id"] is None]
        return errors if len(errors) >= count else None
    return d._wait(found, timeout, f"{count} null-id errors")


def parsed(d) -> list[dict]:
    """Every message on stdout, re-read from the raw bytes (which must be nothing but frames)."""
    raw, out = bytes(d.raw_stdout), []
    if d.framing == "ndjson":
        return [json.loads(line) for line in raw.splitlines()]
    while raw:
        header, sep, rest = raw.partition(b"\r\n\r\n")
        assert sep and header.startswith(b"Content-Length: "), raw[:80]
        length = int(header[len(b"Content-Length: "):])
        out.append(json.loads(rest[:length]))
        raw = rest[length:]
    return out


# --- 1. a malformed message never takes the rest of the write with it -----------------

BAD_MESSAGES = [
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": [1]}},
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {}}},
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": [1]},
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1.5}},
    {"jsonrpc": "2.0", "id": "permission-nobody", "error": {"code": "x"}},
    {"jsonrpc": "2.0", "id": 3, "error": "boom"},
    {"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": ["not", "text"]}},
    {"jsonrpc": "2.0", "id": 3, "result": {"deep": [1]}, "error": None},
    b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":' + b"[" * 1000 + b"]" * 1000 + b"}}",
    b'{"jsonrpc":"2.0","id":"permission-x","error":' + b"[" * 1000 + b"]" * 1000 + b"}",
]


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("bad", BAD_MESSAGES, ids=range(len(BAD_MESSAGES)))
def test_a_malformed_message_does_not_lose_the_requests_after_it(spawn, framing, bad):
    d = spawn("--model", "faux/echo", framing=framing)
    body = bad if isinstance(bad, bytes) else json.dumps(bad).encode()
    d.send_raw(d.frame(body) + follow_ups(d, 100))
    assert_answered(d, 100)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_reply_with_the_id_of_a_running_request_is_ignored(spawn, tmp_path, framing):
    # waitForIdle stays pending while a run is active; a "reply" to its id must not touch it.
    from client import text, write_script

    script = write_script(tmp_path / "s.json", [text("slow")], delayMs=300)
    d = spawn("--model", "faux/script", "--faux-script", str(script), framing=framing)
    d.call("prompt", {"text": "go"})
    d.send_raw(d.frame(req(50, "waitForIdle")) + d.frame(b'{"jsonrpc":"2.0","id":50,"result":1}')
               + d.frame(b'{"jsonrpc":"2.0","id":50,"error":{"code":1,"message":"x"}}') + follow_ups(d, 100))
    assert_answered(d, 100)
    assert "result" in d.wait_response(50)
    assert d.response_counts[50] == 1


# --- 2. deep nesting -----------------------------------------------------------------

@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("where", ["first frame", "top level", "in params"])
def test_deep_nesting_is_a_clear_error_and_the_daemon_lives(spawn, framing, where):
    d = spawn("--model", "faux/echo", framing=framing)
    deep = b"[" * 100_000 + b"]" * 100_000
    if where != "first frame":
        d.call("getState")
    frame = deep if where != "in params" else b'{"jsonrpc":"2.0","id":7,"method":"getState","params":{"a":' + deep + b"}}"
    d.send_raw(d.frame(frame) + follow_ups(d, 100))
    assert_answered(d, 100)
    error = wait_null_errors(d)[0]["error"]
    assert error["code"] == -32700 and "nested deeper than" in error["message"], error
    assert "result" in d.request("initialize", {"protocolVersion": 1})


# --- 3. bad Content-Length -----------------------------------------------------------

BODY = req(99)
BAD_HEADERS = {
    "negative": b"Content-Length: -5\r\n\r\n" + BODY,
    "non-numeric": b"Content-Length: abc\r\n\r\n" + BODY,
    "missing": b"Content-Type: application/json\r\n\r\n" + BODY,
    "too small": b"Content-Length: %d\r\n\r\n" % (len(BODY) - 7) + BODY,
    "too large": b"Content-Length: %d\r\n\r\n" % (len(BODY) + 40) + BODY,
    "a few bytes too large": b"Content-Length: %d\r\n\r\n" % (len(BODY) + 3) + BODY,
    "over the cap, body short": b"Content-Length: 999999999999\r\n\r\n" + BODY,
    "huge number": b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + BODY,
    "no header at all": BODY,
}


@pytest.mark.parametrize("case", BAD_HEADERS)
@pytest.mark.parametrize("split", [False, True])
def test_a_bad_content_length_resynchronises_on_the_next_header(spawn, case, split):
    d = spawn("--model", "faux/echo", "--max-frame-bytes", "4096", framing="content-length")
    d.call("getState")
    data = BAD_HEADERS[case] + follow_ups(d, 100)
    if split:  # the same bytes, in small writes
        for i in range(0, len(data), 7):
            d.send_raw(data[i:i + 7])
    else:
        d.send_raw(data)
    assert_answered(d, 100)
    errors = wait_null_errors(d)
    assert all(e["error"]["message"] and len(e["error"]["message"]) < 300 for e in errors), errors
    assert d.response_counts.get(99, 0) <= 1
    assert d.call("getState")["isStreaming"] is False


def test_an_oversize_frame_is_answered_before_its_body_arrives(spawn):
    d = spawn("--model", "faux/echo", "--max-frame-bytes", "4096", framing="content-length")
    d.call("getState")
    body = b'{"jsonrpc":"2.0","id":9,"method":"prompt","params":{"text":"' + b"x" * 3_000_000 + b'"}}'
    d.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body[:100])
    error = wait_null_errors(d)[0]["error"]  # answered from the header alone
    assert error["code"] == -32005 and "4096" in error["message"]
    d.send_raw(body[100:] + follow_ups(d, 100))
    assert_answered(d, 100)
    assert 9 not in d.responses


# --- 4. lone surrogates --------------------------------------------------------------

@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_lone_surrogate_is_refused_with_the_requests_id(spawn, framing):
    d = spawn("--model", "faux/echo", framing=framing)
    d.send_raw(d.frame(b'{"jsonrpc":"2.0","id":9,"method":"prompt","params":{"text":"a\\ud800b"}}')
               + d.frame(b'{"jsonrpc":"2.0","id":"x\\udc00","method":"getState"}')
               + d.frame(b'{"jsonrpc":"2.0","id":10,"method":"get\\ud800State"}')
               + follow_ups(d, 100))
    assert_answered(d, 100)
    error = d.wait_response(9)["error"]
    assert error["code"] == -32602 and "params.text" in error["message"] and "lone surrogate" in error["message"]
    error = d.wait_response("x\udc00")["error"]
    assert error["code"] == -32600 and "id" in error["message"] and "lone surrogate" in error["message"]
    error = d.wait_response(10)["error"]
    assert error["code"] == -32600 and "method" in error["message"]
    assert d.call("getState")["messageCount"] == 0


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_long_integer_is_read_exactly_with_the_same_refusals(spawn, framing):
    d = spawn("--model", "faux/echo", framing=framing)
    d.call("session/new")
    big = b"123456789012345678901"  # 21 digits: no 64-bit integer, and a double would round it
    d.send_raw(d.frame(b'{"jsonrpc":"2.0","id":9,"method":"session/entries","params":{"limit":' + big + b"}}")
               + d.frame(b'{"jsonrpc":"2.0","id":10,"method":"prompt","params":{"text":"a\\ud800","n":' + big + b"}}")
               + d.frame(b'{"jsonrpc":"2.0","id":11,"method":"getState","params":{"a":NaN,"n":' + big + b"}}")
               + d.frame(b'{"jsonrpc":"2.0","id":12,"method":"getState","params":{"a":1e400,"n":' + big + b"}}")
               + follow_ups(d, 100))
    assert_answered(d, 100)
    assert len(d.wait_response(9)["result"]["entries"]) == 2  # the limit is the integer sent, not a float
    error = d.wait_response(10)["error"]
    assert error["code"] == -32602 and "params.text" in error["message"] and "lone surrogate" in error["message"]
    assert [e["error"]["code"] for e in wait_null_errors(d, 2)] == [-32700, -32700]
    assert 11 not in d.responses and 12 not in d.responses


# --- 5. ids are validated the same at start-up and later ------------------------------------------

BAD_IDS = [b"true", b"false", b"123456789012345678901234567890", b"1.5", b"[1]", b"{}", b"9007199254740993"]


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("first", [True, False], ids=["at start-up", "after a request"])
@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_bad_ids_are_refused_at_start_up_and_later(spawn, framing, first, bad_id):
    d = spawn("--model", "faux/echo", framing=framing)
    if not first:
        d.call("getState")
    d.send_raw(d.frame(b'{"jsonrpc":"2.0","id":' + bad_id + b',"method":"initialize","params":{"protocolVersion":1}}'))
    error = wait_null_errors(d)[0]["error"]
    assert error["code"] == -32600 and "id must be" in error["message"]
    assert d.call("initialize", {"protocolVersion": 1})["protocolVersion"] == 1  # the first one counted for nothing


# --- 6. echoed names are short -------------------------------------------------------

@pytest.mark.parametrize("framing", FRAMINGS)
def test_an_unknown_method_error_does_not_echo_a_huge_name(spawn, framing):
    d = spawn("--model", "faux/echo", framing=framing)
    error = d.request("m" * 5_000_000)["error"]
    assert error["code"] == -32601 and len(error["message"]) < 200, len(error["message"])
    assert "mmmm…" in error["message"]
    error = d.request("noSuchMethod")["error"]
    assert error["code"] == -32601 and "noSuchMethod" in error["message"]


# --- 7. replies go through the output bound ------------------------------------------

def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize("framing", FRAMINGS)
def test_unread_replies_keep_memory_bounded(tmp_path, framing):
    import subprocess
    import threading

    from client import clean_env
    from pi_daemon.client import daemon_command

    proc = subprocess.Popen(daemon_command("--model", "faux/echo"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=str(tmp_path), env=clean_env())

    def frame(body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body if framing == "content-length" else body + b"\n"

    try:
        proc.stdin.write(frame(req(0)))
        proc.stdin.flush()
        proc.stdout.read1(1)  # loaded and answering
        time.sleep(0.3)
        before = rss_mib(proc.pid)
        count = 50_000
        data = b"".join(frame(req(i)) for i in range(1, count + 1))
        def write_all():
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
            except (BrokenPipeError, ValueError):  # the daemon is killed before it read everything
                pass

        writer = threading.Thread(target=write_all, daemon=True)
        writer.start()
        peak, last_change, last = before, time.monotonic(), -1.0
        while time.monotonic() - last_change < 1.0 and time.monotonic() - last_change < 20:
            rss = rss_mib(proc.pid)
            peak = max(peak, rss)
            if abs(rss - last) > 1:
                last, last_change = rss, time.monotonic()
            time.sleep(0.05)
        assert peak - before < 60, f"RSS grew from {before:.0f} to {peak:.0f} MiB with unread replies"
        # Reading again releases the daemon: the requests go on being answered.
        out = bytearray()
        needle = b'"id":%d,' % (count // 10)
        while needle not in out:
            chunk = proc.stdout.read1(1 << 20)
            assert chunk, "stdout closed early"
            out += chunk
    finally:
        proc.kill()
        proc.wait()


# --- 8. requests sent as notifications -----------------------------------------------

@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_request_without_an_id_is_not_run(spawn, framing):
    d = spawn("--model", "faux/echo", framing=framing)
    d.notify("session/setName", {"name": "from a notification"})
    d.notify("prompt", {"text": "hi"})
    state = d.call("getState")
    assert "sessionName" not in state and state["messageCount"] == 0 and not state["isStreaming"]
    d._wait(lambda: b"session/setName is a request and was sent without an id" in d.stderr, 5, "the log line")
    assert d.responses.keys() == {1} and not d.other
    # Real notifications still work.
    d.send_raw(d.frame(req(2, "waitForIdle")))
    d.notify("$/cancelRequest", {"id": 2})
    d.wait_response(2)
    d.notify("exit")
    assert d.proc.wait(10) == 0


@pytest.mark.parametrize("error", [{"code": "x"}, "boom", {"code": 1, "message": ["x"]}])
def test_a_malformed_error_reply_ends_the_daemons_request(spawn, tmp_path, error):
    from loopback import LoopbackServer, Reply, openai_text
    from test_tools_e2e import calls, project

    server = LoopbackServer()
    try:
        server.script(calls(("w", "write", {"path": "a.txt", "content": "A"})), Reply(body=openai_text("ok")))
        d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
        d.call("initialize", {"capabilities": {"permissions": True}})
        d.call("prompt", {"text": "go"})
        request = d.wait_server_request("permission/request")
        d.send_raw(d.frame(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode())
                   + follow_ups(d, 100))
        assert_answered(d, 100)
        d.wait_event("agent_settled")  # the write was not approved, and the run went on
        assert not (tmp_path / "a.txt").exists()
        end = next(e["event"] for e in d.events if e["event"]["type"] == "tool_execution_end")
        assert end["isError"]
    finally:
        server.close()
