"""``pi-daemon --acp`` driven by the official ACP Python SDK's client side, over real pipes."""

from __future__ import annotations

import asyncio
import tempfile

import pytest
from acp import RequestError, embedded_text_resource, image_block, resource_block, resource_link_block, text_block

from client import Daemon
from sdk_client import Recorder, agent, script

THINK_AND_TALK = {"content": [{"type": "thinking", "thinking": "Let me think about it."},
                              {"type": "text", "text": "Hello from the ACP face, in many chunks."}]}


def tool(name: str, args: dict, call_id: str = "c1") -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}], "stopReason": "toolUse"}


def text(t: str) -> dict:
    return {"content": [{"type": "text", "text": t}]}


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_new_session_and_a_streamed_prompt(workspace, tmp_path):
    faux = script(tmp_path / "s.json", [THINK_AND_TALK], chunkSize=5)
    async with agent(workspace, faux) as (conn, rec):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes.current_mode_id == "ask"
        assert {o.root.id if hasattr(o, "root") else o.id for o in session.config_options} >= {"model", "thought_level"}
        reply = await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                                   prompt=[text_block("Say hello")]), 30)
        assert reply.stop_reason == "end_turn"
        assert rec.text() == "Hello from the ACP face, in many chunks."
        assert len(rec.of("agent_message_chunk")) > 3  # streamed, not one block
        assert rec.text("agent_thought_chunk") == "Let me think about it."
        assert rec.of("available_commands_update")[0]["availableCommands"][0]["name"] == "compact"
    files = list((workspace / ".pi" / "sessions").glob(f"*_{session.session_id}.jsonl"))
    assert len(files) == 1 and "Say hello" in files[0].read_text()


async def test_edit_asks_permission_and_goes_through_the_editor(workspace, tmp_path):
    (workspace / "a.txt").write_text("on disk\n")
    faux = script(tmp_path / "s.json", [
        tool("read", {"path": "a.txt"}, "r1"),
        tool("edit", {"path": "a.txt", "edits": [{"oldText": "unsaved buffer", "newText": "edited buffer"}]}, "e1"),
        text("Done."),
    ])
    async with agent(workspace, faux, fs=True) as (conn, rec):
        rec.buffers[str(workspace / "a.txt")] = "unsaved buffer\n"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("edit it")]), 30)
        assert reply.stop_reason == "end_turn"
    # the read saw the editor's unsaved text; the edit was written through the editor, not to the disk
    assert rec.reads and rec.reads[0] == str(workspace / "a.txt")
    assert rec.writes == [(str(workspace / "a.txt"), "edited buffer\n")]
    assert (workspace / "a.txt").read_text() == "on disk\n"
    # one permission request, for the edit only, with the four ACP option kinds (and reject-and-stop, a reject)
    assert len(rec.permission_requests) == 1
    asked = rec.permission_requests[0]
    assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once", "reject_always",
                                                     "reject_once"]
    assert asked["toolCall"]["kind"] == "edit" and asked["toolCall"]["toolCallId"] == "e1"
    # the request shows the change, so the client can offer its diff view (#26, defect 2)
    assert asked["toolCall"]["content"] == [{"type": "diff", "path": str(workspace / "a.txt"),
                                             "oldText": "unsaved buffer", "newText": "edited buffer"}]
    calls = {u["toolCallId"]: u for u in rec.of("tool_call")}
    assert calls["r1"]["kind"] == "read" and calls["r1"]["locations"] == [{"path": str(workspace / "a.txt")}]
    assert calls["e1"]["rawInput"]["path"] == "a.txt"
    finals = {u["toolCallId"]: u for u in rec.of("tool_call_update") if u.get("status") in ("completed", "failed")}
    assert finals["r1"]["status"] == "completed"
    assert "unsaved buffer" in finals["r1"]["content"][0]["content"]["text"]
    diff = finals["e1"]["content"][0]
    assert diff == {"type": "diff", "path": str(workspace / "a.txt"), "oldText": "unsaved buffer",
                    "newText": "edited buffer"}


def _texts(rec: Recorder) -> dict[str, str]:
    """The text each finished tool call answered with (not an edit's diff), by id."""
    return {u["toolCallId"]: u["content"][0]["content"]["text"] for u in rec.of("tool_call_update")
            if u.get("status") in ("completed", "failed") and u["content"][0]["type"] == "content"}


async def test_a_read_of_a_window_of_an_unsaved_buffer_gets_the_buffer_s_lines(workspace, tmp_path):
    long = workspace / "long.py"
    long.write_text("".join(f"disk {n}\n" for n in range(1, 101)))
    (workspace / "paged.txt").write_text("one\n\x0ctwo\nthree\n")  # a form feed: str.splitlines breaks there
    faux = script(tmp_path / "s.json", [
        tool("read", {"path": "long.py", "offset": 40, "limit": 3}, "r1"),
        tool("read", {"path": "long.py", "offset": 99}, "r2"),
        tool("edit", {"path": "long.py", "edits": [{"oldText": "buffer 90\n", "newText": "ninety\n"}]}, "e1"),
        tool("read", {"path": "paged.txt", "offset": 2, "limit": 1}, "r3"),
        text("Done."),
    ])
    async with agent(workspace, faux, "--allow", "edit", fs=True) as (conn, rec):
        rec.buffers[str(long)] = "".join(f"buffer {n}\n" for n in range(1, 101))
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("read")]), 30)
        assert reply.stop_reason == "end_turn"
    # a window asks for its lines and one more (does the file go on?); the buffer's answer is not the
    # saved file's window, so it cannot be checked: the whole buffer is read and cut by the tool
    asked = list(zip(rec.reads, rec.windows))
    assert asked[:4] == [(str(long), (40, 4)), (str(long), (None, None)), (str(long), (99, 2001)),
                         (str(long), (None, None))]
    assert asked[4:] and all(window == (None, None) for _, window in asked[4:])
    assert asked[-1][0] == str(workspace / "paged.txt")
    finals = _texts(rec)
    assert finals["r1"].splitlines() == ["    40\tbuffer 40", "    41\tbuffer 41", "    42\tbuffer 42",
                                         "[Showing lines 40-42 of 100. Use offset=43 to read on.]"]
    assert finals["r2"].splitlines() == ["    99\tbuffer 99", "   100\tbuffer 100"]
    assert "ninety\n" in rec.buffers[str(long)] and "buffer 89\nninety\nbuffer 91\n" in rec.buffers[str(long)]
    # editors do not count a form feed as a line end: the whole file is read and numbered by the tool
    assert finals["r3"].splitlines() == ["     2\t", "[Showing lines 2-2 of 4. Use offset=3 to read on.]"]


async def test_a_client_that_ignores_the_window_still_gets_the_lines_asked_for(workspace, tmp_path):
    (workspace / "long.py").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    (workspace / "short.py").write_text("one\ntwo\nthree\n")
    faux = script(tmp_path / "s.json", [tool("read", {"path": "long.py", "offset": 50, "limit": 2}, "r1"),
                                        tool("read", {"path": "short.py", "offset": 2, "limit": 5}, "r2"),
                                        text("Done.")])
    async with agent(workspace, faux, fs=True) as (conn, rec):
        rec.honours_windows = False
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("read")]), 30)
    assert rec.windows == [(50, 3), (None, None), (2, 6), (None, None)]  # the window is not taken on trust
    assert _texts(rec)["r1"].splitlines() == ["    50\tline 50", "    51\tline 51",
                                               "[Showing lines 50-51 of 100. Use offset=52 to read on.]"]
    assert _texts(rec)["r2"].splitlines() == ["     2\ttwo", "     3\tthree"]  # not "2 one"


async def test_always_answers_are_remembered(workspace, tmp_path):
    home = tempfile.mkdtemp(prefix="pi-home-")
    faux = script(tmp_path / "s.json", [
        tool("write", {"path": "x.txt", "content": "1"}, "w1"), text("first"),
        tool("write", {"path": "x.txt", "content": "2"}, "w2"), text("second"),
    ])
    async with agent(workspace, faux, home=home) as (conn, rec):
        rec.answer = "reject_always"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("write")]), 30)
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("again")]), 30)
    assert len(rec.permission_requests) == 1  # the second write was refused without asking
    assert not (workspace / "x.txt").exists()
    failed = [u for u in rec.of("tool_call_update") if u.get("status") == "failed"]
    assert [u["toolCallId"] for u in failed] == ["w1", "w2"]
    assert "declined" in failed[1]["content"][0]["content"]["text"]


async def test_cancel_mid_stream_answers_cancelled_and_the_session_goes_on(workspace, tmp_path):
    faux = script(tmp_path / "s.json", [text("word " * 400), {"echo": True}], chunkSize=3, delayMs=5)
    async with agent(workspace, faux) as (conn, rec):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        running = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("talk")]))
        while not rec.of("agent_message_chunk"):
            await asyncio.wait_for(rec.got_update.wait(), 30)
            rec.got_update.clear()
        await conn.cancel(session_id=session.session_id)
        reply = await asyncio.wait_for(running, 30)
        assert reply.stop_reason == "cancelled"
        assert len(rec.text()) < len("word " * 400)
        again = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("still there?")]), 30)
        assert again.stop_reason == "end_turn"
        assert "You said: still there?" in rec.text()


async def test_cancel_while_permission_is_pending(workspace, tmp_path):
    faux = script(tmp_path / "s.json", [tool("bash", {"command": "echo hi > out.txt"}, "b1"), text("never")])
    async with agent(workspace, faux) as (conn, rec):
        rec.answer = None  # the user never answers
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        running = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("run it")]))
        await asyncio.wait_for(rec.asked.wait(), 30)
        assert rec.permission_requests[0]["toolCall"]["kind"] == "execute"
        assert rec.permission_requests[0]["toolCall"]["content"] == [
            {"type": "content", "content": {"type": "text", "text": "echo hi > out.txt"}}]
        await conn.cancel(session_id=session.session_id)
        assert (await asyncio.wait_for(running, 30)).stop_reason == "cancelled"
    assert not (workspace / "out.txt").exists()


async def test_prompt_during_a_run_is_queued_as_follow_up(workspace, tmp_path):
    faux = script(tmp_path / "s.json", [text("first answer " * 30), {"echo": True}], chunkSize=3, delayMs=5)
    async with agent(workspace, faux) as (conn, rec):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        first = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("one")]))
        await asyncio.wait_for(rec.got_update.wait(), 30)
        second = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("two")]), 30)
        assert second.stop_reason == "end_turn"
        assert (await asyncio.wait_for(first, 30)).stop_reason == "end_turn"
        assert "You said: two" in rec.text()  # the queued text reached the model


async def test_load_replays_the_conversation(workspace, tmp_path):
    (workspace / "n.txt").write_text("notes\n")
    faux = script(tmp_path / "s.json", [
        {"content": [{"type": "thinking", "thinking": "read first"},
                     {"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "n.txt"}}],
         "stopReason": "toolUse"},
        text("The notes say notes."),
    ])
    async with agent(workspace, faux) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("what do the notes say?")]), 30)
    async with agent(workspace) as (conn, rec):
        await asyncio.wait_for(conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[]), 30)
        kinds = [Recorder._kind(u) for u in rec.updates if Recorder._kind(u) != "available_commands_update"]
        assert kinds == ["user_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
                         "agent_message_chunk", "usage_update"]
        assert rec.text("user_message_chunk") == "what do the notes say?"
        assert rec.of("tool_call_update")[0]["status"] == "completed"
        assert rec.text() == "The notes say notes."
        reply = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("and now?")]), 30)
        assert reply.stop_reason == "end_turn" and "You said: and now?" in rec.text()


async def test_bad_input_gets_errors_and_the_connection_stays_up(workspace):
    async with agent(workspace) as (conn, rec):
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        assert unknown.value.code == -32002
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        raw = conn._conn  # the SDK validates what it sends; a broken client would not
        with pytest.raises(RequestError) as malformed:
            await raw.send_request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text"}]})
        assert malformed.value.code == -32602 and "prompt[0].text" in str(malformed.value)
        with pytest.raises(RequestError) as unknown_block:
            await raw.send_request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "video"}]})
        assert unknown_block.value.code == -32602
        with pytest.raises(RequestError) as outside:
            await conn.new_session(cwd="/", mcp_servers=[])
        assert outside.value.code == -32602 and "outside the workspace" in str(outside.value)
        with pytest.raises(RequestError) as bad_meta:
            await raw.send_request("session/new", {"cwd": str(workspace), "mcpServers": [],
                                                   "_meta": {"pi": {"model": 5}}})
        assert bad_meta.value.code == -32602 and "_meta.pi.model" in str(bad_meta.value)
        named = await raw.send_request("session/new", {"cwd": str(workspace), "mcpServers": [],
                                                       "_meta": {"pi": {"name": "from meta", "model": "faux/echo"}}})
        state = await conn.ext_method("pi/getState", {"sessionId": named["sessionId"]})
        assert state["name"] == "from meta" and state["model"] == "faux/echo"
        with pytest.raises(RequestError) as no_method:
            await raw.send_request("session/teleport", {})
        assert no_method.value.code == -32601
        reply = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("fine?")]), 30)
        assert reply.stop_reason == "end_turn"


async def test_embedded_resources_and_links_reach_the_model(workspace):
    async with agent(workspace) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        prompt = [text_block("look at "), resource_link_block("a.py", f"file://{workspace}/src/a.py"),
                  text_block(" and "),
                  resource_block(embedded_text_resource(f"file://{workspace}/b.py", "print('b')\n"))]
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=prompt), 30)
        said = rec.text()
        assert "You said: look at @src/a.py and @b.py" in said
        assert "b.py:\n```\nprint('b')\n```" in said


async def test_sessions_cross_between_the_two_faces(workspace, tmp_path):
    home = tempfile.mkdtemp(prefix="pi-home-")
    async with agent(workspace, home=home) as (conn, rec):
        acp_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=acp_id, prompt=[text_block("from zed")]), 30)
    native = Daemon("--model", "faux/echo", cwd=str(workspace), env={"PI_DAEMON_HOME": home})
    try:
        listed = native.call("session/list", {})["sessions"]
        assert acp_id in [s["sessionId"] for s in listed]
        native.call("session/load", {"sessionId": acp_id})
        messages = native.call("getMessages", {"sessionId": acp_id})
        assert "from zed" in str(messages)
        native_id = native.call("session/new", {})["sessionId"]
        native.call("prompt", {"sessionId": native_id, "text": "from vs code"})
        native.wait_event("agent_settled", session_id=native_id, timeout=30)
        assert native.close() == 0
    finally:
        native.kill()
    async with agent(workspace, home=home) as (conn, rec):
        listed = await conn.list_sessions()
        assert {acp_id, native_id} <= {s.session_id for s in listed.sessions}
        await asyncio.wait_for(conn.load_session(cwd=str(workspace), session_id=native_id, mcp_servers=[]), 30)
        assert rec.text("user_message_chunk") == "from vs code"
        assert "You said: from vs code" in rec.text()


async def test_modes_and_model_options(workspace, tmp_path):
    faux = script(tmp_path / "s.json", [tool("write", {"path": "m.txt", "content": "x"}, "w1"), text("ok")])
    async with agent(workspace, faux) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
        assert rec.of("current_mode_update")[0]["currentModeId"] == "plan"
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("write")]), 30)
        assert rec.permission_requests == [] and not (workspace / "m.txt").exists()
        changed = await conn.set_config_option(session_id=session_id, config_id="model", value="faux/echo")
        model = next(o.root if hasattr(o, "root") else o for o in changed.config_options
                     if (o.root if hasattr(o, "root") else o).id == "model")
        assert model.current_value == "faux/echo"
        state = await conn.ext_method("pi/getState", {"sessionId": session_id})
        assert state["model"] == "faux/echo" and state["mode"] == "plan"


async def test_the_first_session_names_the_workspace(workspace, tmp_path):
    elsewhere = tmp_path / "editor-started-here"
    elsewhere.mkdir()
    async with agent(workspace, started_in=elsewhere) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("where am I?")]), 30)
        with pytest.raises(RequestError) as other:
            await conn.new_session(cwd=str(elsewhere), mcp_servers=[])
        assert other.value.code == -32602 and "one pi-daemon --acp serves one workspace" in str(other.value)
    assert list((workspace / ".pi" / "sessions").glob(f"*_{session_id}.jsonl"))
    assert not (elsewhere / ".pi" / "sessions").exists()


async def test_editor_writes_are_confined_like_disk_writes(workspace, tmp_path):
    (workspace / ".pi").mkdir()
    faux = script(tmp_path / "s.json", [
        tool("write", {"path": "../escape.txt", "content": "x"}, "w1"),
        tool("write", {"path": ".pi/settings.json", "content": "{}"}, "w2"),
        tool("read", {"path": "/etc/hostname"}, "r1"),
        text("tried"),
    ])
    async with agent(workspace, faux, fs=True) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("escape")]), 30)
    assert rec.writes == [] and rec.reads == []  # the editor was never asked
    failed = {u["toolCallId"]: u["content"][0]["content"]["text"] for u in rec.of("tool_call_update")
              if u.get("status") == "failed"}
    assert "outside the workspace" in failed["w1"] and "daemon's own state" in failed["w2"]
    assert "outside the workspace" in failed["r1"]
    assert not (tmp_path / "escape.txt").exists()


async def test_a_prompt_queued_when_the_run_is_cancelled_never_fires_later(workspace, tmp_path):
    faux = script(tmp_path / "s.json", [text("long " * 300), {"echo": True}, {"echo": True}], chunkSize=3, delayMs=5)
    async with agent(workspace, faux) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        first = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("one")]))
        await asyncio.wait_for(rec.got_update.wait(), 30)
        second = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("queued two")]))
        state = None
        for _ in range(300):
            state = await conn.ext_method("pi/getState", {"sessionId": session_id})
            if state["pendingMessageCount"]:
                break
            await asyncio.sleep(0.01)
        assert state["pendingMessageCount"] == 1
        await conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(first, 30)).stop_reason == "cancelled"
        assert (await asyncio.wait_for(second, 30)).stop_reason == "cancelled"
        assert (await conn.ext_method("pi/getState", {"sessionId": session_id}))["pendingMessageCount"] == 0
        third = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("three")]), 30)
        assert third.stop_reason == "end_turn"
        said = rec.text()
        assert "You said: three" in said and "You said: queued two" not in said  # one answer, to what was asked


@pytest.mark.parametrize("reply, outcome", [
    ({"content": [{"type": "text", "text": "cut"}], "stopReason": "length"}, "max_tokens"),
    ({"content": [], "stopReason": "error",
      "errorMessage": "the model declined to answer (stop_reason: refusal)"}, "refusal"),
    ({"content": [], "stopReason": "error", "errorMessage": "simulated failure"}, -32603),
])
async def test_stop_reasons(workspace, tmp_path, reply, outcome):
    faux = script(tmp_path / "s.json", [reply, {"echo": True}])
    async with agent(workspace, faux) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        if isinstance(outcome, str):
            answer = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("hi")]), 60)
            assert answer.stop_reason == outcome
        else:
            with pytest.raises(RequestError) as failed:
                await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("hi")]), 60)
            assert failed.value.code == outcome and "simulated failure" in str(failed.value)
        again = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("next")]), 60)
        assert again.stop_reason == "end_turn"


async def test_load_after_compaction_replays_the_summary(workspace, tmp_path):
    faux = script(tmp_path / "s.json", [text("first answer"), text("second answer"), text("THE SUMMARY")])
    async with agent(workspace, faux) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("one")]), 30)
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("two")]), 30)
        compacted = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("/compact")]), 30)
        assert compacted.stop_reason == "end_turn" and "Compacted the conversation" in rec.text()
    async with agent(workspace) as (conn, rec):
        await asyncio.wait_for(conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[]), 30)
        assert rec.text("user_message_chunk") == "onetwo"
        assert rec.text().startswith("first answersecond answer")
        # the summary is a paragraph of its own, not glued to the last answer (#26, defect 4)
        assert "second answer\n\n---\n\n**Earlier conversation, summarised**\n\nTHE SUMMARY\n\n---\n\n" in rec.text()


async def test_a_missing_key_is_authentication_required(workspace):
    async with agent(workspace, None, "--model", "anthropic/claude-sonnet-4-5") as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as needed:
            await conn.prompt(session_id=session_id, prompt=[text_block("hi")])
        assert needed.value.code == -32000 and "ANTHROPIC_API_KEY" in str(needed.value)
        with pytest.raises(RequestError) as checked:
            await conn.authenticate(method_id="anthropic")
        assert checked.value.code == -32000 and "ANTHROPIC_API_KEY is not set" in str(checked.value)
        changed = await conn.set_config_option(session_id=session_id, config_id="model", value="faux/echo")
        assert changed.config_options
        reply = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("now?")]), 30)
        assert reply.stop_reason == "end_turn"


async def test_images_reach_the_session(workspace):
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    async with agent(workspace) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        reply = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[
            text_block("what is this?"), image_block(png, "image/png")]), 30)
        assert reply.stop_reason == "end_turn"
    stored = next((workspace / ".pi" / "sessions").glob(f"*_{session_id}.jsonl")).read_text()
    assert png in stored and '"mimeType":"image/png"' in stored.replace(" ", "")


@pytest.mark.parametrize("trusted", [False, True])
async def test_an_untrusted_workspace_cannot_lower_protections(workspace, tmp_path, trusted):
    (workspace / ".pi").mkdir()
    (workspace / ".pi" / "settings.json").write_text('{"permissions": {"ask": []}}')  # "never ask"
    faux = script(tmp_path / "s.json", [tool("write", {"path": "w.txt", "content": "x"}, "w1"), text("ok")])
    flags = ["--trust-workspace"] if trusted else []
    async with agent(workspace, faux, *flags) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("write")]), 30)
    assert len(rec.permission_requests) == (0 if trusted else 1)
    assert (workspace / "w.txt").read_text() == "x"


def test_stdin_closing_mid_run_aborts_answers_and_exits_cleanly(workspace, tmp_path):
    import json
    import subprocess
    import sys

    from client import clean_env

    faux = script(tmp_path / "s.json", [text("slow " * 500)], chunkSize=2, delayMs=5)
    proc = subprocess.Popen([sys.executable, "-m", "pi_daemon", "--acp", "--faux-script", str(faux), "--model",
                             "faux/acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=workspace, env=clean_env())

    def send(message):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        proc.stdin.flush()

    def until(predicate):
        while True:
            line = proc.stdout.readline()
            assert line, "stdout ended early"
            message = json.loads(line)
            if predicate(message):
                return message

    send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    send({"id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}})
    session_id = until(lambda m: m.get("id") == 2)["result"]["sessionId"]
    send({"id": 3, "method": "session/prompt",
          "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "keep talking"}]}})
    until(lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk")
    proc.stdin.close()
    answer = until(lambda m: m.get("id") == 3)
    assert answer["result"] == {"stopReason": "cancelled"}
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in proc.stdout.read().splitlines())  # protocol only
    assert proc.wait(30) == 0
    assert b"Traceback" not in proc.stderr.read()
    stored = next((workspace / ".pi" / "sessions").glob(f"*_{session_id}.jsonl")).read_text()
    assert "keep talking" in stored and '"stopReason":"aborted"' in stored.replace(" ", "")


async def test_a_sessions_own_mcp_server_gives_the_agent_its_tools(workspace, tmp_path):
    import sys
    from pathlib import Path
    from acp.schema import McpServerStdio

    demo = Path(__file__).resolve().parents[1] / "rpc" / "mcp_demo_server.py"
    faux = script(tmp_path / "s.json", [text("ready"), tool("demo__add", {"a": 2, "b": 40}, "m1"), text("It is 42.")])
    async with agent(workspace, faux) as (conn, rec):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[
            McpServerStdio(name="demo", command=sys.executable, args=[str(demo)], env=[])])
        for _ in range(300):  # the server starts in the background
            states = (await conn.ext_method("pi/getState", {"sessionId": session.session_id}))["mcpStates"]
            if states and states[0]["state"] == "ready":
                break
            await asyncio.sleep(0.1)
        assert states[0]["state"] == "ready" and "demo__add" in states[0]["tools"], states
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("warm up")]), 30)
        rec.answer = "allow_once"
        reply = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("add")]), 60)
        assert reply.stop_reason == "end_turn" and rec.text().endswith("It is 42.")
        assert len(rec.permission_requests) == 1  # an MCP tool is asked about like bash
        done = [u for u in rec.of("tool_call_update") if u.get("status") == "completed"]
        assert done and "42" in str(done[-1].get("content")), rec.of("tool_call_update")


async def test_a_malformed_mcp_server_entry_is_a_clear_error(workspace, tmp_path):
    from acp.schema import McpServerStdio

    async with agent(workspace) as (conn, rec):
        with pytest.raises(RequestError) as caught:
            await conn.new_session(cwd=str(workspace), mcp_servers=[McpServerStdio(name="bad name!", command="x",
                                                                                    args=[], env=[])])
        assert "mcpServers" in str(caught.value.data or caught.value)
        assert (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id  # still serving


async def test_an_edit_through_the_editor_is_in_the_runs_changes(workspace, tmp_path):
    (workspace / "a.txt").write_text("on disk\n")
    faux = script(tmp_path / "s.json", [
        tool("edit", {"path": "a.txt", "edits": [{"oldText": "unsaved buffer", "newText": "edited buffer"}]}, "e1"),
        text("Done."),
    ])
    home = str(tmp_path / "home")
    async with agent(workspace, faux, "--allow", "edit", fs=True, home=home) as (conn, rec):
        rec.buffers[str(workspace / "a.txt")] = "unsaved buffer\n"
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("edit it")]), 30)
    native = Daemon("--model", "faux/echo", cwd=str(workspace), env={"PI_DAEMON_HOME": home})
    try:
        native.call("session/load", {"sessionId": session_id})
        changes = native.call("changes/get", {"sessionId": session_id})
        [changed] = changes["files"]
        assert changed["path"].endswith("a.txt") and changed["status"] == "modified"
        assert "-unsaved buffer" in changed["diff"] and "+edited buffer" in changed["diff"]
        assert native.close() == 0
    finally:
        native.kill()


async def test_a_tool_call_is_in_progress_only_once_it_is_allowed(workspace, tmp_path):
    """``pending`` while the user is asked, ``in_progress`` once the call may run (#26, defect 1)."""
    faux = script(tmp_path / "s.json", [tool("write", {"path": "new.txt", "content": "hi\n"}, "w1"),
                                        tool("read", {"path": "new.txt"}, "r1"), text("Done.")])
    async with agent(workspace, faux) as (conn, rec):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("go")]), 30)
        assert reply.stop_reason == "end_turn"
    asked = rec.permission_requests[0]["toolCall"]
    assert asked["content"] == [{"type": "diff", "path": str(workspace / "new.txt"), "oldText": None,
                                 "newText": "hi\n"}] or asked["content"] == [
        {"type": "diff", "path": str(workspace / "new.txt"), "newText": "hi\n"}]  # a null oldText may be left out
    write = [what for what, call in rec.timeline if call == "w1"]
    assert write == ["tool_call:pending", "request_permission", "tool_call_update:in_progress",
                     "tool_call_update:completed"], write
    read = [what for what, call in rec.timeline if call == "r1"]  # asks nobody: runs at once
    assert read == ["tool_call:pending", "tool_call_update:in_progress", "tool_call_update:completed"], read


async def test_a_session_title_is_one_short_line_and_its_changes_are_sent(workspace):
    """Not the whole first message (#26, defect 5): its first line, shortened; then the name."""
    prompt = "Fix the parser\n\nHere is the context the editor attached:\n```\n" + "x = 1\n" * 50 + "```"
    async with agent(workspace) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block(prompt)]), 30)
        assert [u["title"] for u in rec.of("session_info_update")] == ["Fix the parser"]
        listed = await asyncio.wait_for(conn.list_sessions(), 10)
        assert [s.title for s in listed.sessions] == ["Fix the parser"]
        await conn.ext_method("pi/setName", {"sessionId": session_id, "name": "Parser work"})
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("ok")]), 30)
        assert rec.of("session_info_update")[-1]["title"] == "Parser work"
        long = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=long, prompt=[text_block("word " * 100)]), 30)
        titles = {s.session_id: s.title for s in (await asyncio.wait_for(conn.list_sessions(), 10)).sessions}
        assert titles[session_id] == "Parser work"
        assert len(titles[long]) <= 80 and titles[long].endswith("…") and "\n" not in titles[long]


async def test_a_window_answered_with_a_line_too_many_is_not_mislabelled(workspace, tmp_path):
    """avante answers ``fs/read_text_file{line, limit}`` with one line more than asked (#26, defect 3)."""
    (workspace / "long.py").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    faux = script(tmp_path / "s.json", [tool("read", {"path": "long.py", "offset": 50, "limit": 2}, "r1"),
                                        tool("read", {"path": "long.py", "offset": 98}, "r2"), text("Done.")])
    async with agent(workspace, faux, fs=True) as (conn, rec):
        rec.extra_lines = 1
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("read")]), 30)
    assert _texts(rec)["r1"].splitlines() == ["    50\tline 50", "    51\tline 51",
                                               "[Showing lines 50-51 of 100. Use offset=52 to read on.]"]
    assert _texts(rec)["r2"].splitlines() == ["    98\tline 98", "    99\tline 99", "   100\tline 100"]


async def test_a_window_of_the_saved_file_is_taken_as_it_is(workspace, tmp_path):
    (workspace / "long.py").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    faux = script(tmp_path / "s.json", [tool("read", {"path": "long.py", "offset": 50, "limit": 2}, "r1"), text("Done.")])
    async with agent(workspace, faux, fs=True) as (conn, rec):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("read")]), 30)
    assert rec.windows == [(50, 3)]  # checked against the saved file: no second read
    assert _texts(rec)["r1"].splitlines()[:2] == ["    50\tline 50", "    51\tline 51"]
