"""Several clients on one session, through real ``attach`` bridges to a real server: the same
events with the same seq, a run that outlives its client, catching up with ``fromSeq``, requests
to the user answered by one client and withdrawn on the others, the editor that leaves."""

from __future__ import annotations

import json
import socket

from client import text, write_script
from servers import wait_until

PERMISSIONS = {"capabilities": {"permissions": True}}
ANSWER = "".join(f"word{n} " for n in range(150))


def slow(rt, *replies, delay_ms=10):
    """A faux model that streams its replies one character at a time."""
    return str(write_script(rt.workspace.parent / "slow.json", list(replies), modelId="slow", chunkSize=1,
                            delayMs=delay_ms))


def of(bridge, session_id):
    return [(e["seq"], json.dumps(e["event"], sort_keys=True)) for e in bridge.events
            if e["sessionId"] == session_id and not e.get("replay")]


def deltas(events):
    return "".join(json.loads(e)["assistantMessageEvent"]["delta"] for _, e in events
                   if json.loads(e)["type"] == "message_update"
                   and json.loads(e)["assistantMessageEvent"]["type"] == "text_delta")


def test_two_bridges_on_one_session_get_the_same_events_with_the_same_seq(rt):
    script = slow(rt, text("the same for both"))
    a = rt.attach("--faux-script", script, "--model", "faux/slow")
    started = a.call("initialize", {})
    assert started["server"]["shared"] is True and started["server"]["pid"] == rt.server_pid()
    sid = a.call("session/new")["sessionId"]
    b = rt.attach("--faux-script", script, "--model", "faux/slow")
    b.call("initialize", {})
    loaded = b.call("session/load", {"sessionId": sid})
    assert loaded["sessionId"] == sid and loaded["nextSeq"] == 1 and "catchUp" not in loaded
    a.call("prompt", {"sessionId": sid, "text": "hi"})
    for bridge in (a, b):
        bridge.wait_event("agent_settled", session_id=sid, timeout=30)
    assert of(a, sid) == of(b, sid)
    assert [seq for seq, _ in of(a, sid)] == list(range(1, len(of(a, sid)) + 1))
    assert deltas(of(b, sid)) == "the same for both"

    assert a.call("session/close", {"sessionId": sid}) == {"closed": True}  # A lets go; B still holds it
    assert b.call("getState", {"sessionId": sid})["sessionId"] == sid
    assert a.request("session/stats", {})["error"]["code"] == -32002  # A has no current session any more
    b.call("session/close", {"sessionId": sid})  # the last holder: closed for real
    assert b.request("getState", {"sessionId": sid})["error"]["code"] == -32002


def test_a_bridge_killed_mid_run_the_run_goes_on_and_a_new_one_gets_exactly_the_missed_events(rt):
    script = slow(rt, text(ANSWER), delay_ms=8)
    a = rt.attach("--faux-script", script, "--model", "faux/slow")
    a.call("initialize", {})
    sid = a.call("session/new")["sessionId"]
    a.call("prompt", {"sessionId": sid, "text": "go"})
    a.wait_for(lambda e: len(deltas(of(a, sid))) > 20, "some deltas")
    a.kill()  # SIGKILL: the editor's bridge is gone mid-answer
    seen = of(a, sid)
    last = seen[-1][0]
    assert last == len(seen)

    c = rt.attach("--faux-script", script, "--model", "faux/slow")
    c.call("initialize", {})
    loaded = c.call("session/load", {"sessionId": sid, "fromSeq": last + 1})
    assert loaded["catchUp"] == "events"
    assert loaded["state"]["isStreaming"] is True  # the run went on without a client
    c.wait_event("agent_settled", session_id=sid, timeout=60)
    caught = of(c, sid)
    assert [seq for seq, _ in caught] == list(range(last + 1, last + 1 + len(caught)))  # no gap, no repeat
    assert deltas(seen + caught) == ANSWER
    assert not any(e.get("replay") for e in c.events)

    c.proc.stdin.close()  # the last client goes: the settled session is closed, the server idles
    assert c.proc.wait(20) == 0
    wait_until(lambda: (rt.info() or {}).get("sessions") == 0 and rt.info().get("connections") == 0,
               "the session nobody holds to close")


def test_a_permission_answered_on_one_connection_is_withdrawn_on_the_others(rt):
    script = str(write_script(rt.workspace.parent / "tool.json", [
        {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                      "arguments": {"path": "out.txt", "content": "written\n"}}], "stopReason": "toolUse"},
        text("done")]))
    a = rt.attach("--faux-script", script, "--model", "faux/script")
    a.call("initialize", PERMISSIONS)
    sid = a.call("session/new")["sessionId"]
    b = rt.attach("--faux-script", script, "--model", "faux/script")
    b.call("initialize", PERMISSIONS)
    b.call("session/load", {"sessionId": sid})
    a.call("prompt", {"sessionId": sid, "text": "write it"})
    asked_a, asked_b = a.wait_server_request("permission/request"), b.wait_server_request("permission/request")
    assert asked_a["id"] == asked_b["id"] and asked_a["params"]["sessionId"] == sid

    late = rt.attach("--faux-script", script, "--model", "faux/script")  # attaches while pending: asked, same id
    late.call("initialize", PERMISSIONS)
    late.call("session/load", {"sessionId": sid})
    assert late.wait_server_request("permission/request")["id"] == asked_a["id"]

    b.respond(asked_b["id"], {"outcome": "allow_once"})
    for other in (a, late):
        wait_until(lambda: any(m.get("method") == "$/cancelRequest" and m["params"]["id"] == asked_a["id"]
                               for m in other.other), "the request withdrawn")
    a.respond(asked_a["id"], {"outcome": "reject_once"})  # too late: the first answer won
    a.wait_event("agent_settled", session_id=sid, timeout=30)
    assert (rt.workspace / "out.txt").read_text() == "written\n"
    assert not any(m.get("method") == "$/cancelRequest" for m in b.other)


def test_shutdown_and_exit_end_only_that_connection_and_the_run_goes_on(rt):
    script = slow(rt, text(ANSWER), delay_ms=5)
    a = rt.attach("--faux-script", script, "--model", "faux/slow")
    a.call("initialize", {})
    sid = a.call("session/new")["sessionId"]
    b = rt.attach("--faux-script", script, "--model", "faux/slow")
    b.call("initialize", {})
    b.call("session/load", {"sessionId": sid})
    a.call("prompt", {"sessionId": sid, "text": "go"})
    b.wait_event("message_update", session_id=sid, timeout=30)
    assert a.call("shutdown") == {}
    assert a.request("getState", {"sessionId": sid})["error"]["code"] == -32003
    a.send({"jsonrpc": "2.0", "method": "exit"})
    assert a.proc.wait(20) == 0  # the server ended that connection: its bridge saw the end
    settled = b.wait_event("agent_settled", session_id=sid, timeout=60)
    assert settled["event"]["aborted"] is False and deltas(of(b, sid)) == ANSWER
    assert b.call("getState", {"sessionId": sid})["sessionId"] == sid


def test_the_editor_is_the_last_to_prompt_and_when_it_leaves_files_come_from_the_disk(rt):
    (rt.workspace / "x.txt").write_text("on the disk\n")
    read = {"type": "toolCall", "id": "r", "name": "read", "arguments": {"path": "x.txt"}}
    script = str(write_script(rt.workspace.parent / "read.json", [
        {"content": [{**read, "id": "r1"}], "stopReason": "toolUse"}, text("one"),
        {"content": [{"type": "text", "text": "x" * 400}, {**read, "id": "r2"}], "stopReason": "toolUse"},
        text("two")], chunkSize=1, delayMs=5))
    editors = []
    for name in ("A", "B"):
        editor = rt.attach("--faux-script", script, "--model", "faux/script")
        editor.on_request["fs/readTextFile"] = lambda params, name=name: {"content": f"{name}'s buffer\n"}
        editor.call("initialize", {"capabilities": {"fs": {"readTextFile": True}}})
        editors.append(editor)
    a, b = editors
    sid = a.call("session/new")["sessionId"]
    b.call("session/load", {"sessionId": sid})

    def result(bridge, call_id):
        end = bridge.wait_for(lambda e: e["type"] == "tool_execution_end" and e["toolCallId"] == call_id,
                              f"the result of {call_id}", timeout=30)
        return json.dumps(end["event"]["result"])

    b.call("prompt", {"sessionId": sid, "text": "read it"})  # B prompted last: B is the editor
    assert "B's buffer" in result(a, "r1")
    for bridge in (a, b):
        bridge.wait_event("agent_settled", session_id=sid, timeout=30)
    assert [r["method"] for r in b.server_requests] == ["fs/readTextFile"] and a.server_requests == []

    b.call("prompt", {"sessionId": sid, "text": "again"})
    b.wait_event("message_update", session_id=sid, count=3, timeout=30)
    b.kill()  # the editor goes mid-run: the run goes on, reading the disk
    assert "on the disk" in result(a, "r2")
    a.wait_event("agent_settled", session_id=sid, count=2, timeout=30)
    assert a.server_requests == []


def test_a_client_that_stops_reading_is_let_go_and_the_others_get_the_whole_run(rt):
    big = "".join(f"{n:07d} " for n in range(125_000))  # 1 MB: its message_end, turn_end, agent_end too
    script = str(write_script(rt.workspace.parent / "big.json", [text(big)], modelId="big", chunkSize=10_000,
                              delayMs=0))
    b = rt.attach("--faux-script", script, "--model", "faux/big")
    b.call("initialize", {})
    sid = b.call("session/new")["sessionId"]
    stuck = socket.socket(socket.AF_UNIX)  # a client that sends and then reads nothing
    stuck.connect(str(rt.path(".sock")))
    stuck.sendall(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
                  + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/load",
                                "params": {"sessionId": sid}}).encode() + b"\n")
    wait_until(lambda: (rt.info() or {}).get("connections") == 2, "both connections")
    try:
        b.call("prompt", {"sessionId": sid, "text": "go"})
        settled = b.wait_event("agent_settled", session_id=sid, timeout=90)  # the stuck one let go after 30 s
        assert settled["event"]["aborted"] is False and deltas(of(b, sid)) == big
        stuck.settimeout(30)
        while stuck.recv(1 << 20):  # what was sent to it, then the end: the server closed it
            pass
        wait_until(lambda: (rt.info() or {}).get("connections") == 1, "the stuck connection gone")
    finally:
        stuck.close()


def test_a_permission_pending_when_its_client_left_waits_and_goes_to_the_next_one_that_attaches(rt):
    script = str(write_script(rt.workspace.parent / "tool.json", [
        {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                      "arguments": {"path": "out.txt", "content": "written\n"}}], "stopReason": "toolUse"},
        text("done")]))
    a = rt.attach("--faux-script", script, "--model", "faux/script")
    a.call("initialize", PERMISSIONS)
    sid = a.call("session/new")["sessionId"]
    a.call("prompt", {"sessionId": sid, "text": "write it"})
    asked = a.wait_server_request("permission/request")
    a.kill()  # the window reloads while the card is shown
    wait_until(lambda: (rt.info() or {}).get("connections") == 0, "the first connection gone")
    b = rt.attach("--faux-script", script, "--model", "faux/script")
    b.call("initialize", PERMISSIONS)
    loaded = b.call("session/load", {"sessionId": sid, "fromSeq": a.events[-1]["seq"] + 1})
    assert loaded["catchUp"] == "events" and loaded["state"]["isStreaming"] is True
    again = b.wait_server_request("permission/request")
    assert again["id"] == asked["id"] and again["params"]["toolCallId"] == "w1"
    b.respond(again["id"], {"outcome": "allow_once"})
    b.wait_event("agent_settled", session_id=sid, timeout=30)
    assert (rt.workspace / "out.txt").read_text() == "written\n"


def test_a_client_that_asks_for_events_no_longer_kept_gets_the_file_then_the_message_in_progress(rt):
    script = slow(rt, text(ANSWER), delay_ms=8)
    a = rt.attach("--faux-script", script, "--model", "faux/slow")
    a.call("initialize", {})
    sid = a.call("session/new")["sessionId"]
    a.call("prompt", {"sessionId": sid, "text": "go"})
    a.wait_for(lambda e: len(deltas(of(a, sid))) > 20, "some deltas")
    c = rt.attach("--faux-script", script, "--model", "faux/slow")
    c.call("initialize", {})
    loaded = c.call("session/load", {"sessionId": sid, "fromSeq": 100_000})  # another server's seq
    assert loaded["catchUp"] == "replay"
    c.wait_event("agent_settled", session_id=sid, timeout=60)
    replayed = [e["event"] for e in c.events if e.get("replay")]
    assert [e["type"] for e in replayed] == ["message_start", "message_end", "replay_end"]  # the prompt, stored
    assert replayed[0]["message"]["role"] == "user"
    live = of(c, sid)
    first = json.loads(live[0][1])
    assert first["type"] == "message_start" and first["message"]["role"] == "assistant"
    assert [seq for seq, _ in live] == list(range(live[0][0], live[0][0] + len(live)))  # then every event, no gap
    assert deltas(live) == ANSWER and live == of(a, sid)[-len(live):]
