"""A conversation in a 4,096-token window, through the daemon, against a model server that
behaves as llama-server started with ``-c 4096`` does: a prompt that does not fit is
refused, an answer stops where the window (or the request's ``max_tokens``) ends with
``finish_reason: "length"``, and its summaries are long. Every compaction must end smaller
than it began, no answer may be cut by the window, and a context that compacting cannot
bring under the threshold is said once, not compacted at every request."""

import json

from client import user_models
from loopback import LoopbackServer, Recorded, Reply, openai_text
from run_events import events, final_message

SUMMARY_SYSTEM = "You summarise coding-agent conversations"
# What a small model writes when nothing stops it: far more than the conversation it summarises.
LONG_SUMMARY = "## Goal\n" + "".join(f"- the user asked about topic {n} and the details of it were discussed\n"
                                     for n in range(200))


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


class WindowedServer(LoopbackServer):
    """Answers every request within a ``window``-token context, as llama-server does."""

    def __init__(self, window: int) -> None:
        super().__init__()
        self.window = window
        self.answer = self.reply
        self.answered = 0

    @staticmethod
    def prompt_tokens(body: dict) -> int:
        """As a chat template renders the request: each message's text and tool calls, and the tools' schemas."""
        text = "".join(json.dumps(m.get("content")) + json.dumps(m.get("tool_calls") or "") for m in body["messages"])
        return tokens(text) + 4 * len(body["messages"]) + tokens(json.dumps(body.get("tools", [])))

    @staticmethod
    def is_summary(body: dict) -> bool:
        return SUMMARY_SYSTEM in json.dumps(body["messages"][0])

    def reply(self, request: Recorded) -> Reply:
        body = request.body
        prompt = self.prompt_tokens(body)
        if prompt >= self.window:
            return Reply(400, json.dumps({"error": {
                "code": 400, "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": self.window}}).encode(),
                "application/json")
        if self.is_summary(body):
            text = LONG_SUMMARY
        else:
            self.answered += 1
            text = f"answer {self.answered}: " + "the build passes and the tests are green. " * 6
        room = min(body.get("max_tokens") or self.window, self.window - prompt)
        cut = tokens(text) > room
        text = text[: room * 4] if cut else text
        return Reply(body=openai_text(text, finish="length" if cut else "stop", usage=(prompt, tokens(text))))


def workspace(tmp_path, server: WindowedServer) -> str:
    # maxTokens as a local server reports it: the whole window
    config = {"providers": {"llama": {"baseUrl": server.url + "/v1", "api": "openai-completions", "models": [
        {"id": "smol", "contextWindow": server.window, "maxTokens": server.window}]}}}
    return user_models(tmp_path, config)


def test_a_conversation_in_a_4096_token_window_goes_on_with_every_compaction_making_room(spawn, tmp_path):
    server = WindowedServer(4096)
    try:
        d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server))
        d.call("setAutoRetry", {"enabled": False})
        for turn in range(1, 11):
            d.call("prompt", {"text": f"question {turn}: " + "what does the module do and why is it slow? " * 12})
            final = final_message(d, turn)
            assert final["stopReason"] == "stop", final
            assert final["content"][-1]["text"].startswith(f"answer {turn}: ")
        answers = [e["message"] for e in events(d, "message_end") if e["message"]["role"] == "assistant"]
        assert [a["stopReason"] for a in answers] == ["stop"] * 10  # none cut by the window, none refused
        ends = events(d, "compaction_end")
        done = [e for e in ends if "result" in e]
        figures = [(e["result"]["tokensBefore"], e["result"]["estimatedTokensAfter"]) for e in done]
        print("compactions (tokensBefore, estimatedTokensAfter):", figures, [e.get("errorMessage") for e in ends])
        assert len(done) >= 2, ends  # the conversation needed compacting, more than once
        assert all(after < before for before, after in figures), figures
        assert all(e["reason"] == "threshold" for e in ends)
        assert sum("nothing to compact" in e.get("errorMessage", "") for e in ends) <= 1, ends
        summaries = [r.body for r in server.requests if server.is_summary(r.body)]
        assert len(summaries) == len(ends) - sum("nothing to compact" in e.get("errorMessage", "") for e in ends)
        # asked for within the messages' share of the window, not up to the model's maxTokens (the window)
        assert all(body["max_tokens"] <= 1024 for body in summaries), [body["max_tokens"] for body in summaries]
        for body in server.requests:  # each request's output limit fits what its prompt leaves of the window
            if not server.is_summary(body.body):
                assert body.body["max_tokens"] <= 4096 - WindowedServer.prompt_tokens(body.body), body.body
    finally:
        server.close()


def test_a_compaction_that_would_not_shrink_is_refused_and_says_why(spawn, tmp_path):
    server = WindowedServer(4096)
    try:
        d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server))
        for turn in range(1, 4):
            d.call("prompt", {"text": f"short question {turn}"})
            final_message(d, turn)
        before = d.call("getMessages")["messages"]
        reply = d.request("compact", {})
        assert "error" in reply and reply["error"]["message"].startswith(  # the reply says why itself
            "compaction did not happen: the compaction would not make the context smaller"), reply
        end = events(d, "compaction_end")[-1]
        assert "result" not in end and end["errorMessage"].startswith(
            "the compaction would not make the context smaller: its summary"), end
        assert "the context is unchanged" in end["errorMessage"]
        assert d.call("getMessages")["messages"] == before  # the context is unchanged
        session_file = d.call("getState")["sessionFile"]
        assert '"type":"compaction"' not in open(session_file).read().replace(" ", "")
        assert server.is_summary(server.requests[-1].body)  # the summary was asked for, then refused
    finally:
        server.close()


def test_a_window_the_tools_nearly_fill_is_said_once_and_not_compacted_at_every_request(spawn, tmp_path):
    probe, probe_dir = WindowedServer(32_768), tmp_path / "probe"  # how much the system prompt and tools take
    probe_dir.mkdir()
    try:
        d = spawn("--model", "llama/smol", cwd=workspace(probe_dir, probe))
        d.call("prompt", {"text": "hi"})
        final_message(d)
        overhead = WindowedServer.prompt_tokens(probe.requests[0].body)
    finally:
        probe.close()
    # room for a few short turns, not for a conversation to compact into
    server = WindowedServer(overhead + 400)
    try:
        d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server))
        for turn in range(1, 6):
            d.call("prompt", {"text": f"q{turn}"})
            final_message(d, turn)
        ends = events(d, "compaction_end")
        assert len(events(d, "compaction_start")) == len(ends) == 1, [e.get("errorMessage") for e in ends]
        assert ends[0]["errorMessage"].startswith("cannot compact: the system prompt and the tools' schemas take about")
        assert "leaves too little for the conversation" in ends[0]["errorMessage"]
        assert not any(server.is_summary(r.body) for r in server.requests)  # no summary asked for in vain
        assert len(server.requests) == 5
    finally:
        server.close()
