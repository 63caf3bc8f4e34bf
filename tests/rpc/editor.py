"""A test editor: open buffers that answer the daemon's ``fs/readTextFile`` and apply its
``workspace/applyEdit`` the way an LSP client does (versions checked, all or nothing)."""

from __future__ import annotations

import os
import re
import threading
from urllib.parse import unquote, urlparse


def _offset(text: str, line: int, character: int) -> int:
    lines = text.splitlines(keepends=True)
    if line >= len(lines):
        return len(text)
    return sum(len(x) for x in lines[:line]) + min(character, len(lines[line].rstrip("\r\n")))


def apply_text_edits(text: str, edits: list[dict]) -> str:
    spans = sorted(((_offset(text, e["range"]["start"]["line"], e["range"]["start"]["character"]),
                     _offset(text, e["range"]["end"]["line"], e["range"]["end"]["character"]), e["newText"])
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def window(text: str, params: dict) -> str:
    """The lines an ``fs/readTextFile`` asks for: from ``line`` (1-based), ``limit`` of them;
    lines end at LF, as in an editor."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    start = params.get("line", 1) - 1
    return "".join(lines[start:start + params["limit"] if "limit" in params else None])


def path_of(uri: str) -> str:
    return unquote(urlparse(uri).path)


class Editor:
    """Buffers by absolute path: ``{path: [text, version, dirty]}``."""

    def __init__(self, daemon, *, read: bool = True, apply_edit: bool = True, save: bool = False,
                 permissions: bool = False) -> None:
        self.daemon = daemon
        self.buffers: dict[str, list] = {}
        self.refuse: str | None = None  # a failureReason to refuse every edit with
        self.edits: list[dict] = []
        self.reads: list[dict] = []
        self.after_read = None  # called (under the lock) after each read is answered: a user typing
        self.lock = threading.Lock()
        daemon.on_request["fs/readTextFile"] = self.read_text_file
        daemon.on_request["workspace/applyEdit"] = self.apply_edit
        daemon.on_request["fs/save"] = self.save
        self.saves: list[dict] = []
        self.unsavable: dict[str, str] = {}  # path -> the reason its save fails
        daemon.call("initialize", {"capabilities": {"permissions": permissions, "fs": {
            "readTextFile": read, "applyEdit": apply_edit, "save": save}}})

    def open(self, path, text: str, dirty: bool = True) -> None:
        with self.lock:
            self.buffers[str(path)] = [text, 1, dirty]

    def type(self, path, text: str) -> None:
        with self.lock:
            buf = self.buffers[str(path)]
            buf[0], buf[1], buf[2] = text, buf[1] + 1, True

    def text(self, path) -> str:
        return self.buffers[str(path)][0]

    def save(self, params: dict) -> dict:
        """Writes each dirty buffer named to the disk, as an editor's save does."""
        with self.lock:
            self.saves.append(params)
            saved, failed = [], []
            for path in params["paths"]:
                buf = self.buffers.get(path)
                if path in self.unsavable:
                    failed.append({"path": path, "reason": self.unsavable[path]})
                elif buf is not None and buf[2]:
                    with open(path, "w", encoding="utf-8", newline="") as f:
                        f.write(buf[0])
                    buf[2] = False
                    saved.append(path)
            return {"saved": saved, "failed": failed}

    def read_text_file(self, params: dict) -> dict:
        with self.lock:
            self.reads.append(params)
            buf = self.buffers.get(params["path"])
            answer = {"content": None} if buf is None else {"content": window(buf[0], params), "version": buf[1]}
            if self.after_read is not None:
                self.after_read(params["path"])
            return answer

    def apply_edit(self, params: dict) -> dict:
        with self.lock:
            self.edits.append(params)
            if self.refuse:
                return {"applied": False, "failureReason": self.refuse}
            staged = {k: list(v) for k, v in self.buffers.items()}
            deleted = set()
            for n, change in enumerate(params["edit"]["documentChanges"]):
                kind = change.get("kind")
                if kind == "create":
                    path = path_of(change["uri"])
                    if path in staged or os.path.exists(path):
                        return {"applied": False, "failureReason": f"{path} exists", "failedChange": n}
                    staged[path] = ["", 0, True]
                elif kind == "delete":
                    deleted.add(path_of(change["uri"]))
                    staged.pop(path_of(change["uri"]), None)
                else:
                    path = path_of(change["textDocument"]["uri"])
                    buf = staged.get(path)
                    if buf is None:  # not open: the editor opens it from the disk
                        with open(path, encoding="utf-8", newline="") as f:
                            buf = staged[path] = [f.read(), 1, False]
                    version = change["textDocument"].get("version")
                    if version is not None and version != buf[1]:
                        return {"applied": False, "failedChange": n,
                                "failureReason": f"version {version} is stale: the buffer is at {buf[1]}"}
                    buf[0], buf[1], buf[2] = apply_text_edits(buf[0], change["edits"]), buf[1] + 1, True
            self.buffers = staged
            for path in deleted:
                os.unlink(path)
            return {"applied": True}
