"""OpenAI Responses API streams as the API sends them: ``event:`` names, ``sequence_number``,
the full response object in ``response.created`` / ``completed`` / ``incomplete`` / ``failed``,
output items opened, filled by deltas and closed with their final content."""

from __future__ import annotations

import json
from typing import Any

from loopback import Reply


def sse(events: list[dict]) -> bytes:
    out = []
    for n, event in enumerate(events):
        event = {"type": event["type"], "sequence_number": n, **{k: v for k, v in event.items() if k != "type"}}
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    return b"".join(out)


def response_object(status: str, output: list[dict], usage: dict | None, **extra: Any) -> dict:
    return {"id": "resp_68f0a1", "object": "response", "created_at": 1764745200, "status": status,
            "background": False, "error": None, "incomplete_details": None, "instructions": None,
            "max_output_tokens": 4096, "model": "gpt-test-2026-01-01", "output": output,
            "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
            "store": False, "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled", "usage": usage,
            "user": None, "metadata": {}, **extra}


def usage(input_tokens: int, output_tokens: int, cached: int = 0, reasoning: int = 0) -> dict:
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output_tokens}


def reasoning_item(n: int, summary: list[str], encrypted: str = "gAAAAAB-enc-1") -> tuple[list[dict], dict]:
    item_id = f"rs_{n:04d}"
    done = {"id": item_id, "type": "reasoning", "encrypted_content": encrypted,
            "summary": [{"type": "summary_text", "text": s} for s in summary]}
    events = [{"type": "response.output_item.added", "output_index": n,
               "item": {"id": item_id, "type": "reasoning", "summary": []}}]
    for i, text in enumerate(summary):
        events.append({"type": "response.reasoning_summary_part.added", "item_id": item_id, "output_index": n,
                       "summary_index": i, "part": {"type": "summary_text", "text": ""}})
        for piece in (text[: len(text) // 2], text[len(text) // 2:]):
            events.append({"type": "response.reasoning_summary_text.delta", "item_id": item_id, "output_index": n,
                           "summary_index": i, "delta": piece})
        events.append({"type": "response.reasoning_summary_text.done", "item_id": item_id, "output_index": n,
                       "summary_index": i, "text": text})
        events.append({"type": "response.reasoning_summary_part.done", "item_id": item_id, "output_index": n,
                       "summary_index": i, "part": {"type": "summary_text", "text": text}})
    events.append({"type": "response.output_item.done", "output_index": n, "item": done})
    return events, done


def message_item(n: int, text: str, pieces: int = 3) -> tuple[list[dict], dict]:
    item_id = f"msg_{n:04d}"
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    done = {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    events = [{"type": "response.output_item.added", "output_index": n,
               "item": {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}},
              {"type": "response.content_part.added", "item_id": item_id, "output_index": n, "content_index": 0,
               "part": {**part, "text": ""}}]
    size = max(1, len(text) // pieces)
    for i in range(0, len(text), size):
        events.append({"type": "response.output_text.delta", "item_id": item_id, "output_index": n,
                       "content_index": 0, "delta": text[i: i + size], "logprobs": []})
    events += [{"type": "response.output_text.done", "item_id": item_id, "output_index": n, "content_index": 0,
                "text": text, "logprobs": []},
               {"type": "response.content_part.done", "item_id": item_id, "output_index": n, "content_index": 0,
                "part": part},
               {"type": "response.output_item.done", "output_index": n, "item": done}]
    return events, done


def function_call_item(n: int, call_id: str, name: str, arguments: dict) -> tuple[list[dict], dict]:
    item_id = f"fc_{n:04d}"
    args = json.dumps(arguments)
    done = {"id": item_id, "type": "function_call", "status": "completed", "arguments": args,
            "call_id": call_id, "name": name}
    events = [{"type": "response.output_item.added", "output_index": n,
               "item": {**done, "status": "in_progress", "arguments": ""}}]
    for i in range(0, len(args), 5):  # split mid-token
        events.append({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": n,
                       "delta": args[i: i + 5]})
    events += [{"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": n,
                "arguments": args},
               {"type": "response.output_item.done", "output_index": n, "item": done}]
    return events, done


def response(items: list[tuple[list[dict], dict]], *, use: dict | None = None, status: str = "completed",
             **extra: Any) -> bytes:
    """A whole streamed response made of ``items`` (from the *_item helpers above)."""
    events = [{"type": "response.created", "response": response_object("in_progress", [], None)},
              {"type": "response.in_progress", "response": response_object("in_progress", [], None)}]
    for item_events, _ in items:
        events += item_events
    final = response_object(status, [done for _, done in items], use or usage(40, 12), **extra)
    events.append({"type": f"response.{status}", "response": final})
    return sse(events)


def text_reply(text: str, **kw: Any) -> Reply:
    return Reply(body=response([message_item(0, text)], **kw))


def error_body(status: int, message: str, type_: str, code: str | None = None,
               headers: dict | None = None) -> Reply:
    body = json.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}}).encode()
    return Reply(status, body, "application/json", headers or {})
