"""A stored message read without the converter is the message the converter reads, or left to it.

For every message below, ``stored_message.read`` either gives ``None`` (the converter reads
it) or an object equal to — and with the same field types as — what ``message_from_wire``
gives; and whenever the converter refuses a message, the fast reader never accepts it.
"""

import copy

import pytest

from pi_daemon.messages import message_from_wire
from pi_daemon.session import stored_message

USAGE = {"input": 10, "output": 20, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 37,
         "cost": {"input": 0.5, "output": 1, "cacheRead": 0, "cacheWrite": 0.25, "total": 1.75}}
USER = {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1767225600000}
ASSISTANT = {"role": "assistant", "api": "openai-completions", "provider": "local", "model": "m", "usage": USAGE,
             "stopReason": "toolUse", "timestamp": 1767225600001,
             "content": [{"type": "thinking", "thinking": "hm", "thinkingSignature": "sig", "redacted": False},
                         {"type": "text", "text": "calling", "textSignature": None},
                         {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py", "n": 2},
                          "thoughtSignature": "ts"}]}
TOOL_RESULT = {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False,
               "content": [{"type": "text", "text": "file"}, {"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}],
               "details": {"lines": [1, 2]}, "timestamp": 1767225600002}
COMMON = [USER, ASSISTANT, TOOL_RESULT, {**USER, "content": "plain text"},
          {**ASSISTANT, "stopReason": "error", "errorMessage": "boom"},
          {**ASSISTANT, "usage": {"input": 1}}, {k: v for k, v in ASSISTANT.items() if k != "usage"},
          {**USER, "extra": "unknown fields are ignored"}, {**USER, "command": None}]


def with_field(message, path, value):
    """A deep copy of ``message`` with the field at ``path`` set (``DELETE``: removed)."""
    out = copy.deepcopy(message)
    target = out
    for key in path[:-1]:
        target = target[key]
    if value is DELETE and isinstance(target, dict):
        target.pop(path[-1], None)
    elif value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


DELETE = object()
ODD_VALUES = [None, True, 0, 1.5, 10**30, "s", [], {}, DELETE]
FIELDS = [
    (USER, ("content",)), (USER, ("timestamp",)), (USER, ("content", 0, "text")), (USER, ("content", 0, "type")),
    (USER, ("content", 0)), (USER, ("command",)),
    (ASSISTANT, ("content",)), (ASSISTANT, ("api",)), (ASSISTANT, ("provider",)), (ASSISTANT, ("model",)),
    (ASSISTANT, ("stopReason",)), (ASSISTANT, ("errorMessage",)), (ASSISTANT, ("timestamp",)),
    (ASSISTANT, ("usage",)), (ASSISTANT, ("usage", "input")), (ASSISTANT, ("usage", "totalTokens")),
    (ASSISTANT, ("usage", "cost")), (ASSISTANT, ("usage", "cost", "input")), (ASSISTANT, ("usage", "cost", "total")),
    (ASSISTANT, ("content", 0, "thinking")), (ASSISTANT, ("content", 0, "thinkingSignature")),
    (ASSISTANT, ("content", 0, "redacted")), (ASSISTANT, ("content", 1, "textSignature")),
    (ASSISTANT, ("content", 2, "id")), (ASSISTANT, ("content", 2, "name")), (ASSISTANT, ("content", 2, "arguments")),
    (ASSISTANT, ("content", 2, "thoughtSignature")), (ASSISTANT, ("content", 2, "type")),
    (TOOL_RESULT, ("toolCallId",)), (TOOL_RESULT, ("toolName",)), (TOOL_RESULT, ("isError",)),
    (TOOL_RESULT, ("content",)), (TOOL_RESULT, ("details",)), (TOOL_RESULT, ("content", 1, "mimeType")),
    (TOOL_RESULT, ("content", 1, "data")), (TOOL_RESULT, ("role",)),
]
VARIANTS = COMMON + [with_field(m, path, v) for m, path in FIELDS for v in ODD_VALUES] + [
    {**USER, "content": [{"type": "image", "data": "AAAA"}]},  # an image is user content
    {**ASSISTANT, "content": [{"type": "image", "data": "AAAA"}]},  # but not assistant content
    {**USER, "content": [{"type": "thinking", "thinking": "x"}]},
    {**USER, "command": {"name": "review", "source": "template", "input": "x"}},
    {"role": "bashExecution", "command": "ls", "output": "", "timestamp": 1},
    {"role": "somethingNew", "timestamp": 1}, {"role": ["user"], "timestamp": 1}, [USER], "user",
]


def converter_reads(data):
    try:
        return message_from_wire(copy.deepcopy(data)), None
    except Exception as exc:  # noqa: BLE001 - any refusal counts
        return None, exc


@pytest.mark.parametrize("data", VARIANTS)
def test_the_fast_reader_gives_what_the_converter_gives_or_leaves_it(data):
    expected, refused = converter_reads(data)
    got = stored_message.read(copy.deepcopy(data))
    if refused is not None:
        assert got is None, f"the converter refuses it ({refused}) but the fast reader read {got!r}"
    elif got is not None:
        assert got == expected
        assert repr(got) == repr(expected)  # 1 and 1.0 are equal; their reprs are not


@pytest.mark.parametrize("data", COMMON)
def test_the_usual_messages_take_the_fast_path(data):
    assert stored_message.read(data) is not None


def test_a_read_tool_call_does_not_share_its_arguments_with_the_stored_entry():
    stored = copy.deepcopy(ASSISTANT)
    message = stored_message.read(stored)
    message.content[2].arguments["path"] = "changed.py"
    assert stored["content"][2]["arguments"] == {"path": "a.py", "n": 2}
