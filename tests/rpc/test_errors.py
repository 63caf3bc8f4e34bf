"""Bad input gets a specific error and the daemon keeps serving; one reply per request."""

import sys

import pytest

from client import Daemon


@pytest.fixture
def d(spawn):
    daemon = spawn("--model", "faux/echo")
    yield daemon
    # After all the abuse: still serving, and never more than one reply per id.
    assert daemon.call("getState")["isStreaming"] is False
    assert all(n == 1 for key, n in daemon.response_counts.items() if key is not None)


def error_of(d, raw: bytes):
    before = len([1 for _ in d.raw_stdout.splitlines()])
    d.send_raw(raw + b"\n")
    d._wait(lambda: len(d.raw_stdout.splitlines()) > before, 5, "a reply")
    import json
    return json.loads(d.raw_stdout.splitlines()[before])


def test_invalid_json_is_parse_error_with_null_id(d):
    reply = error_of(d, b'{"jsonrpc":"2.0","id":1,"method":')
    assert reply["id"] is None and reply["error"]["code"] == -32700
    reply = error_of(d, b"\xff\xfe not utf-8")
    assert reply["error"]["code"] == -32700


@pytest.mark.parametrize("raw, needle", [
    (b"42", "must be a JSON object"),
    (b'"text"', "must be a JSON object"),
    (b"[]", "batch arrays are not supported"),
    (b'[{"jsonrpc":"2.0","id":1,"method":"getState"}]', "batch arrays are not supported"),
    (b'{"jsonrpc":"2.0","id":5}', "needs a method"),
    (b'{"jsonrpc":"1.0","id":5,"method":"getState"}', 'jsonrpc must be "2.0"'),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"getState"}', "id must be"),
    (b'{"jsonrpc":"2.0","id":5,"method":7}', "method must be a string"),
])
def test_invalid_requests(d, raw, needle):
    reply = error_of(d, raw)
    assert reply["error"]["code"] == -32600 and needle in reply["error"]["message"]


def test_unknown_method(d):
    reply = d.request("noSuchMethod")
    assert reply["error"]["code"] == -32601


@pytest.mark.parametrize("params, field, text", [
    ({"text": 5}, "params.text", "expected str, got integer"),
    ({}, "params.text", "required field missing"),
    ({"text": "x", "streamingBehavior": "later"}, "params.streamingBehavior", "must be one of 'steer', 'followUp'"),
    ({"text": "x", "images": [{"mimeType": "image/png"}]}, "params.images[0].data", "required field missing"),
    ("not an object", "params", "must be an object"),
])
def test_invalid_params_name_the_field(d, params, field, text):
    reply = d.request("prompt", params)
    error = reply["error"]
    assert error["code"] == -32602, error
    assert field in error["message"] and text in error["message"], error["message"]


def test_request_without_params_is_answered(d):
    reply = d.request("getState", omit_params=True)
    assert "result" in reply and reply["result"]["sessionId"]
    reply = d.request("listModels", omit_params=True)
    assert any(m["id"] == "echo" for m in reply["result"]["models"])


def test_notification_gets_no_reply_even_when_bad(d):
    d.notify("noSuchMethod")
    d.notify("prompt", {"text": 5})
    assert d.call("getState")["messageCount"] == 0
    assert d.responses.keys() == {1}


def test_a_failing_handler_answers_cleanly_without_traceback(tmp_path):
    code = (
        "import attrs\n"
        "from pi_daemon.rpc import methods\n"
        "methods.load_all()\n"
        "from pi_daemon.rpc.registry import METHODS\n"
        "async def broken(daemon, p):\n"
        "    raise KeyError('the-secret-key')\n"
        "METHODS['listModels'] = attrs.evolve(METHODS['listModels'], handler=broken)\n"
        "from pi_daemon.cli import main\n"
        "main(['--model', 'faux/echo'])\n"
    )
    d = Daemon(cmd=[sys.executable, "-c", code], cwd=str(tmp_path))
    try:
        error = d.request("listModels")["error"]
        assert error["code"] == -32603
        assert error["message"] == "listModels failed: KeyError: 'the-secret-key'"
        assert "data" not in error and "Traceback" not in str(error)
        assert d.call("getState")["isStreaming"] is False
        assert d.close() == 0
        assert b"Traceback" in d.stderr  # the log has the whole story
    finally:
        d.kill()
