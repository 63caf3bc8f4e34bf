"""Random client traffic for the fuzz test and the soak (``bench/fuzz_soak.py``).

Valid requests, malformed JSON, wrong types, odd ids, bad headers, oversize and deeply
nested frames, client replies and notifications, cut into split or merged writes.
Written against ``random.Random`` so the hypothesis test (``st.randoms()``, shrinkable)
and the soak (a seeded ``Random``) share one generator.

Each piece says what it expects: ``tracked`` ids must get exactly one reply, ``at_most_once``
ids (requests inside a damaged frame) one reply or none.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

# Methods that answer at once and change nothing worth protecting (no bash, no files).
METHODS = ["getState", "listModels", "getMessages", "session/list", "session/stats", "session/tree",
           "waitForIdle", "noSuchMethod", "prompt", "setThinkingLevel", "setAutoRetry", "abort",
           "initialize", "$/cancelRequest", "m" * 300]
REQUEST_ONLY = ["getState", "session/setName", "prompt", "listModels"]
BAD_IDS = ["true", "false", "1.5", "-0.0", "123456789012345678901234567890", "9007199254740993",
           "[1]", "{}", '{"a":1}', "1e400"]
STRANGE_TEXT = ["", "é", "\u2028", "\u2029", "\x00", "\x1f", "🙂", "\\ud800", "\ud800", "\udc00x", '"', "\\"]


@dataclass
class Traffic:
    framing: str
    max_frame: int
    prefix: str = "f"
    base: int = 10**12  # integer ids are base + n: unique within one daemon when bases differ
    tracked: list[Any] = field(default_factory=list)
    at_most_once: list[Any] = field(default_factory=list)
    _n: int = 0

    # --- ids ------------------------------------------------------------------------

    def new_id(self, rnd: random.Random) -> Any:
        self._n += 1
        if rnd.random() < 0.5:
            return self.base + self._n
        return f"{self.prefix}-{self._n}{rnd.choice(STRANGE_TEXT[:7])}"

    def _track(self, rnd: random.Random) -> Any:
        rid = self.new_id(rnd)
        self.tracked.append(rid)
        return rid

    def _maybe(self, rnd: random.Random) -> Any:
        rid = f"{self.prefix}-u{self._n}-{rnd.randrange(10**6)}"
        self._n += 1
        self.at_most_once.append(rid)
        return rid

    # --- values ---------------------------------------------------------------------

    def value(self, rnd: random.Random, depth: int = 0) -> Any:
        kind = rnd.randrange(9 if depth < 3 else 6)
        if kind == 0:
            return None
        if kind == 1:
            return rnd.random() < 0.5
        if kind == 2:
            return rnd.choice([0, -1, 2**31, 2**63, 10**30, rnd.randrange(-10**6, 10**6)])
        if kind == 3:
            return rnd.choice([0.5, -1e300, 1e-300])
        if kind in (4, 5):
            return "".join(rnd.choice(STRANGE_TEXT + ["a", "text", "b c"]) for _ in range(rnd.randrange(4)))
        if kind == 6:
            return [self.value(rnd, depth + 1) for _ in range(rnd.randrange(4))]
        keys = ["text", "sessionId", "level", "id", "jsonrpc", "method", "enabled", "x"]
        return {rnd.choice(keys + STRANGE_TEXT): self.value(rnd, depth + 1) for _ in range(rnd.randrange(4))}

    def params(self, rnd: random.Random, method: str) -> Any:
        choice = rnd.randrange(6)
        if choice == 0:
            return {}
        if choice == 1:
            return self.value(rnd)  # often not an object: -32602
        if choice == 2 and method == "prompt":
            return {"text": rnd.choice(STRANGE_TEXT), "streamingBehavior": rnd.choice(["steer", "later", 5])}
        if choice == 3:
            return {"level": rnd.choice(["off", "high", "max", 1])}
        return {"sessionId": rnd.choice(["", "nope", 5, None])}

    # --- frames ---------------------------------------------------------------------

    def frame(self, body: bytes) -> bytes:
        if self.framing == "content-length":
            return b"Content-Length: %d\r\n\r\n" % len(body) + body
        return body + b"\n"

    @staticmethod
    def dumps(message: Any, rnd: random.Random) -> bytes:
        if rnd.random() < 0.5:
            try:
                return json.dumps(message, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: only the escape can carry it
                pass
        return json.dumps(message, separators=(",", ":") if rnd.random() < 0.5 else None).encode()

    def request(self, rnd: random.Random, rid: Any) -> dict:
        method = rnd.choice(METHODS)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if rnd.random() < 0.8:
            message["params"] = self.params(rnd, method)
        return message

    def piece(self, rnd: random.Random, previous: Any) -> bytes:
        kind = rnd.randrange(16)
        if kind <= 3:  # a request, valid or not in its params or method
            return self.frame(self.dumps(self.request(rnd, self._track(rnd)), rnd))
        if kind == 4:  # wrong types in the envelope, but a usable id
            message = self.request(rnd, self._track(rnd))
            message[rnd.choice(["jsonrpc", "method"])] = self.value(rnd)
            if message.get("method") is None and message.get("jsonrpc") == "2.0":
                message["method"] = 7
            return self.frame(self.dumps(message, rnd))
        if kind == 5:  # an id that is not one: answered with id null
            body = self.dumps(self.request(rnd, 0), rnd).replace(b'"id": 0', b'"id":0', 1)
            return self.frame(body.replace(b'"id":0', b'"id":' + rnd.choice(BAD_IDS).encode(), 1))
        if kind == 6:  # a notification: a real one, a request without id, or unknown
            method = rnd.choice(["$/cancelRequest", "$/cancelRequest", "$/unknown", "noSuch", *REQUEST_ONLY])
            params = {"id": rnd.choice([previous, [1], {}, None, 1.5, "x"])} if method == "$/cancelRequest" \
                else self.params(rnd, method)
            return self.frame(self.dumps({"jsonrpc": "2.0", "method": method, "params": params}, rnd))
        if kind == 7:  # a client reply, well formed or not, to nothing or to a running request
            rid = rnd.choice([previous, "permission-nobody", 5, None])
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
            if rnd.random() < 0.5:
                message["error"] = rnd.choice([{"code": "x"}, "boom", {"code": 1, "message": 2}, None,
                                               {"code": -32000, "message": "no"}, self.value(rnd)])
            else:
                message["result"] = self.value(rnd)
            return self.frame(self.dumps(message, rnd))
        if kind == 8:  # truncated JSON
            body = self.dumps(self.request(rnd, self._maybe(rnd)), rnd)
            return self.frame(body[: rnd.randrange(1, len(body))])
        if kind == 9:  # garbage bytes
            junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
            if self.framing == "ndjson":
                return junk + b"\n"
            return junk if rnd.random() < 0.5 else self.frame(junk)
        if kind == 10:  # deep nesting, at the top or in params
            depth = rnd.choice([1100, 3000, self.max_frame // 2 - 100])
            deep = b"[" * depth + b"]" * depth
            if rnd.random() < 0.5:
                return self.frame(deep)
            rid = json.dumps(self._maybe(rnd)).encode()
            return self.frame(b'{"jsonrpc":"2.0","id":' + rid + b',"method":"getState","params":{"a":' + deep + b"}}")
        if kind == 11:  # oversize
            text = "x" * (self.max_frame + rnd.randrange(1, 2 * self.max_frame))
            return self.frame(self.dumps({"jsonrpc": "2.0", "id": self._maybe(rnd), "method": "prompt",
                                          "params": {"text": text}}, rnd))
        if kind == 12:  # a batch array or a scalar
            return self.frame(rnd.choice([b"[]", b"[" + self.dumps(self.request(rnd, 1), rnd) + b"]", b"42",
                                          b'"s"', b"null", b"\xff\xfe"]))
        if kind == 13:  # a lone surrogate somewhere in a request with a good id
            rid = self._track(rnd)
            where = rnd.choice(["params", "method", "id"])
            message = self.request(rnd, rid if where != "id" else "x")
            if where == "id":
                self.tracked.pop()
                rid = f"{self.prefix}-s{self._n}\ud800"
                self._n += 1
                self.tracked.append(rid)
                message["id"] = rid
            elif where == "method":
                message["method"] = "get\udc00State"
            else:
                message["params"] = {"text": "a\ud800b"}
            return self.frame(json.dumps(message).encode())
        if kind == 14:
            return self.bad_header(rnd)
        return b"\n" if self.framing == "ndjson" else b"\r\n"  # a blank between frames

    def bad_header(self, rnd: random.Random) -> bytes:
        body = self.dumps(self.request(rnd, self._maybe(rnd)), rnd)
        header = rnd.choice([
            b"Content-Length: -5", b"Content-Length: abc", b"Content-Type: application/json",
            b"Content-Length: %d" % max(0, len(body) - rnd.randrange(1, 20)),
            b"Content-Length: %d" % (len(body) + rnd.randrange(1, 200)),
            b"Content-Length: 999999999999", b"Content-Length: " + b"9" * 300, b"content-length:%d" % len(body),
        ])
        return header + rnd.choice([b"\r\n\r\n", b"\n\n"]) + body + (b"\n" if self.framing == "ndjson" else b"")

    def get_state(self, rid: Any) -> bytes:
        """The frame of the ``getState`` that closes a round."""
        return self.frame(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "getState"}).encode())

    # --- writes ---------------------------------------------------------------------

    def writes(self, rnd: random.Random, pieces: int) -> list[bytes]:
        """The bytes of ``pieces`` pieces, cut into writes at random places."""
        data, previous = bytearray(), None
        for _ in range(pieces):
            data += self.piece(rnd, previous)
            previous = self.tracked[-1] if self.tracked else None
        if rnd.random() < 0.3:
            return [bytes(data)]
        cuts = sorted(rnd.randrange(len(data)) for _ in range(rnd.randrange(1, 12)))
        return [bytes(data[a:b]) for a, b in zip([0, *cuts], [*cuts, len(data)]) if b > a]
