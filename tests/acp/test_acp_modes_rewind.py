"""The session's modes and rewind on the ACP face, over the real ``pi-daemon --acp``: the mode
is both ACP's mode and the ``mode`` config option, is told with ``current_mode_update`` and
kept with the session; ``_pi/session/tree`` gives the entry ids ``_pi/session/rewind`` takes."""

from __future__ import annotations

from acp.schema import SetSessionConfigOptionResponse

from test_acp_lifecycle import new_session, start, stop, text, tool, ws  # noqa: F401 (ws: the fixture)


def test_auto_edit_from_the_mode_option_then_rewind_takes_the_write_back(ws):
    (ws / "a.txt").write_text("old\n")
    daemon = start(ws, [tool("write", {"path": "a.txt", "content": "new\n"}, "w1"), text("written")])
    session_id = new_session(daemon, ws)
    answer = daemon.request("session/set_config_option", {"sessionId": session_id, "configId": "mode",
                                                          "value": "auto-edit"})
    SetSessionConfigOptionResponse.model_validate(answer["result"])
    assert {o["id"]: o["currentValue"] for o in answer["result"]["configOptions"]}["mode"] == "auto-edit"
    daemon.wait(lambda m: m.get("method") == "session/update"
                and m["params"]["update"].get("currentModeId") == "auto-edit")
    reply = daemon.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    assert reply["result"]["stopReason"] == "end_turn"
    assert (ws / "a.txt").read_text() == "new\n"  # auto-edit: written without a permission request
    assert not any(m.get("method") == "session/request_permission" for m in daemon.log)

    nodes = daemon.request("_pi/session/tree", {"sessionId": session_id})["result"]["nodes"]
    user = next(n for n in nodes if n.get("role") == "user")
    preview = daemon.request("_pi/session/rewind", {"sessionId": session_id, "entryId": user.get("parentId"),
                                                    "dryRun": True})["result"]
    assert preview["files"] == [{"path": "a.txt", "action": "write"}] and (ws / "a.txt").read_text() == "new\n"
    done = daemon.request("_pi/session/rewind", {"sessionId": session_id, "entryId": user.get("parentId")})
    assert done["result"]["conflicts"] == [] and (ws / "a.txt").read_text() == "old\n"
    bad = daemon.request("_pi/session/rewind", {"sessionId": session_id, "entryId": 7})
    assert bad["error"]["code"] == -32602 and "params.entryId" in bad["error"]["message"]
    stop(daemon)

    again = start(ws)
    loaded = again.request("session/load", {"sessionId": session_id, "cwd": str(ws), "mcpServers": []})["result"]
    assert loaded["modes"]["currentModeId"] == "auto-edit"  # kept with the session
    assert [m["id"] for m in loaded["modes"]["availableModes"]] == ["ask", "plan", "auto-edit"]
    unknown = again.request("session/set_mode", {"sessionId": session_id, "modeId": "read-only"})
    assert unknown["error"]["code"] == -32602 and "params.modeId" in unknown["error"]["message"]
    stop(again)
