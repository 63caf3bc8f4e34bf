"""SIGKILL at random moments: sessions load, accepted prompts survive, no process is left."""

from sigkill_loop import kill_loop


def test_ten_kills_during_streams_and_tool_runs(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    figures = kill_loop(workspace, kills=10, seed=10)
    assert figures["orphans"] == 0 and figures["sessions_loaded"] == 10 and figures["prompts_checked"] == 10
    assert figures["during_tool"] >= 1
