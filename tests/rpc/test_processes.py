"""Process lifetime through the daemon: nothing a command starts outlives it, or the daemon."""

import os
import signal
import time

import pytest

from agent_shell import alive, bash_call, home_with, script, tool_ends, unique_seconds, wait_alive, wait_gone

SANDBOX = pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])


def start(spawn, tmp_path, sandboxed, *replies):
    home = home_with(tmp_path, {"sandbox": {"enabled": sandboxed}})
    return spawn("--allow", "bash", "--faux-script", script(tmp_path, *replies), "--model", "faux/s",
                 env={"home": home})


@SANDBOX
def test_a_background_child_does_not_hold_the_tool_and_is_killed(spawn, tmp_path, sandboxed):
    mark = unique_seconds()
    d = start(spawn, tmp_path, sandboxed, bash_call(f"sleep {mark} & echo started"))
    began = time.monotonic()
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    assert time.monotonic() - began < 30  # not the background sleep's thousand seconds and more
    end = tool_ends(d)[0]
    assert not end["isError"] and "started" in end["result"]["content"][0]["text"]
    assert wait_gone(mark) == []


@SANDBOX
def test_abort_kills_setsid_children(spawn, tmp_path, sandboxed):
    mark = unique_seconds()
    d = start(spawn, tmp_path, sandboxed, bash_call(f"setsid -f sleep {mark}; sleep {mark}"))
    d.call("prompt", {"text": "go"})
    assert len(wait_alive(mark, 2)) == 2
    d.call("abort")
    d.wait_event("agent_settled")
    assert wait_gone(mark) == []
    assert tool_ends(d)[0]["isError"]


@SANDBOX
def test_a_finished_command_leaves_no_setsid_child_and_eof_exits(spawn, tmp_path, sandboxed):
    mark = unique_seconds()
    d = start(spawn, tmp_path, sandboxed, bash_call(f"setsid -f sleep {mark}; echo ok"))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    assert d.close() == 0
    assert wait_gone(mark) == []


@SANDBOX
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_nothing_outlives_the_daemon(spawn, tmp_path, sandboxed, how):
    mark = unique_seconds()
    d = start(spawn, tmp_path, sandboxed, bash_call("setsid -f true; echo first", "a"),
              bash_call(f"setsid -f sleep {mark}; (setsid sleep {mark} &); sleep {mark}"))
    d.call("prompt", {"text": "go"})
    assert len(wait_alive(mark, 3)) == 3
    os.kill(d.proc.pid, how)
    d.proc.wait(10)
    assert wait_gone(mark) == []


@pytest.mark.parametrize("how", ["eof", signal.SIGTERM, signal.SIGKILL])
def test_a_user_command_never_keeps_the_daemon(spawn, tmp_path, how):
    mark = unique_seconds()
    d = spawn("--model", "faux/echo")
    slow = d.request_async("bash", {"command": f"setsid -f sleep {mark}; sleep {mark}"})
    assert len(wait_alive(mark, 2)) == 2
    if how == "eof":
        d.proc.stdin.close()
    else:
        os.kill(d.proc.pid, how)
    assert d.proc.wait(10) == (0 if how != signal.SIGKILL else -9)
    if how != signal.SIGKILL:
        assert d.wait_response(slow)["result"]["cancelled"] is True
    assert wait_gone(mark) == []


def test_a_user_command_with_a_timeout_finishes_after_eof(spawn):
    d = spawn("--model", "faux/echo")
    done = d.request_async("bash", {"command": "sleep 0.5; echo finished", "timeout": 20})
    d.proc.stdin.close()  # the EOF is read after the request
    assert d.proc.wait(10) == 0
    result = d.wait_response(done)["result"]
    assert result["output"] == "finished\n" and result["exitCode"] == 0


def test_a_user_command_times_out(spawn):
    d = spawn("--model", "faux/echo")
    result = d.call("bash", {"command": "echo before; sleep 30", "timeout": 0.5})
    assert result["cancelled"] is True and result["output"] == "before\n" and "exitCode" not in result


def test_an_orphan_with_a_cleared_environment_is_killed_when_the_command_ends(spawn, tmp_path):
    mark = unique_seconds()  # no sandbox: the subreaper gets the orphan back and sweeps it
    d = start(spawn, tmp_path, False, bash_call(f"env -i setsid -f sleep {mark}; echo ok"))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    assert wait_gone(mark) == []
    assert d.call("getState")["isStreaming"] is False


@SANDBOX
def test_stop_keeps_the_output_the_command_had_printed(spawn, tmp_path, sandboxed):
    mark = unique_seconds()
    # three lines in separate writes, quicker than updates are sent: the last one still shows before the pause
    d = start(spawn, tmp_path, sandboxed,
              bash_call(f"for i in 1 2 3; do echo step $i; sleep 0.02; done; sleep {mark}"))
    d.call("prompt", {"text": "go"})
    d.wait_for(lambda e: e["type"] == "tool_execution_update"
               and "step 3" in e["partialResult"]["content"][0]["text"], "step 3 shown")
    d.call("abort")
    d.wait_event("agent_settled")
    end = tool_ends(d)[0]
    assert end["isError"]
    assert end["result"]["content"][0]["text"] == "step 1\nstep 2\nstep 3\n[stopped by the user]"
    stored = [m for m in d.call("getMessages")["messages"] if m["role"] == "toolResult"]
    assert stored[0]["content"][0]["text"] == "step 1\nstep 2\nstep 3\n[stopped by the user]"
