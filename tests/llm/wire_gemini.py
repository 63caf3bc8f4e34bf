"""Gemini ``streamGenerateContent?alt=sse`` streams as the API sends them: ``data:`` lines of
whole GenerateContentResponse chunks (``\\r\\n`` line ends), usage on every chunk, the
finish reason on the last, no ``[DONE]``; and Google's error bodies."""

from __future__ import annotations

import json

from loopback import Reply


def chunk(parts: list[dict] | None, *, finish: str | None = None, usage: dict | None = None,
          model: str = "gemini-test") -> dict:
    data: dict = {}
    if parts is not None or finish:
        candidate: dict = {"content": {"parts": parts or [], "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        data["candidates"] = [candidate]
    data["usageMetadata"] = usage or {"promptTokenCount": 30, "totalTokenCount": 30,
                                      "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 30}]}
    data["modelVersion"] = model
    data["responseId"] = "hp0wafLbBvGr1dkP4fWy8Ao"
    return data


def usage(prompt: int, candidates: int, thoughts: int = 0, cached: int = 0) -> dict:
    found = {"promptTokenCount": prompt, "candidatesTokenCount": candidates,
             "totalTokenCount": prompt + candidates + thoughts,
             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
    if thoughts:
        found["thoughtsTokenCount"] = thoughts
    if cached:
        found["cachedContentTokenCount"] = cached
    return found


def sse(chunks: list[dict]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


def text_reply(text: str, finish: str = "STOP", use: dict | None = None) -> Reply:
    half = len(text) // 2
    return Reply(body=sse([chunk([{"text": text[:half]}]),
                           chunk([{"text": text[half:]}], finish=finish, usage=use or usage(30, 8))]))


def error_body(code: int, message: str, status: str, headers: dict | None = None) -> Reply:
    body = json.dumps({"error": {"code": code, "message": message, "status": status}}, indent=2).encode()
    return Reply(code, body, "application/json; charset=UTF-8", headers or {})
