"""What opening a session needs to know, kept beside its file so a long session opens without
reading every entry (``<session>.jsonl.index``).

A full load finds the model and thinking level in force, the name, the entries that kept
settings and an unfinished rewind come from, the lines set aside, how many messages the
context holds, whether the last run was cut off and the branch's plan (:class:`Facts`). They
are written beside the file for its exact bytes (size and SHA-256), with this user's mark: an
HMAC under a key in the daemon's home, which no repository can hold. An index is used only
when it carries that mark and the file still has those bytes; one that came with a cloned
repository, one from another version, a damaged, linked or stale one is ignored (the file is
read whole). The index is written when the session closes (the daemon closes its files when
it stops), if its file changed since the index was written.
The index never holds the conversation (the plan is its steps only): the session file stays the source of truth, and its
entries are read from it when first needed (:meth:`.store.SessionStore.read_all`).

The index is a cache: failing to read or write it only costs the next load its speed.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Any

import attrs
import orjson

from .. import __version__
from ..home import home_dir
from .entry_lines import blocks, check_header  # hashed a block at a time: never held whole

log = logging.getLogger(__name__)

FORMAT = 2  # 2: the plan
KEY_FILE = "session-index.key"
MAX_INDEX_BYTES = 1 << 20  # facts larger than this (a file with very many damaged lines) are not kept


@attrs.frozen
class Facts:
    """What a full load of the file found (see the module's docstring)."""

    model: tuple[str, str] | None
    thinking_level: str | None
    name: str | None
    side: list[dict[str, Any]]  # the entries of :data:`.store.INDEXED_SIDE_ENTRIES`, in file order
    skipped: list[dict[str, Any]]
    messages: int
    interrupted: bool
    plan: dict[str, Any] | None  # the branch's plan, in the ``details`` form of its update_plan result


def index_path(session_file: Path) -> Path:
    return session_file.with_name(session_file.name + ".index")


def _key(make: bool) -> bytes | None:
    """This user's index key (made once, readable by the user only); None when there is none."""
    path = home_dir() / KEY_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if not make:
            return None
        key = secrets.token_bytes(32)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            return _key(False)  # another daemon made it just now
        except OSError:
            return None
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        return key
    except OSError:
        return None
    try:
        key = os.read(fd, 64)
    finally:
        os.close(fd)
    return key if len(key) == 32 else None


def _mark(key: bytes, body: dict[str, Any]) -> str:
    return hmac.new(key, orjson.dumps(body, option=orjson.OPT_SORT_KEYS), hashlib.sha256).hexdigest()


def digest(fd: int, size: int) -> tuple[str, bytes]:
    """(SHA-256 of the file's first ``size`` bytes, its first line), read a block at a time."""
    hasher = hashlib.sha256()
    first = None
    for block in blocks(fd, size):
        if first is None:
            first = block[:block.find(b"\n") + 1]
        hasher.update(block)
    return hasher.hexdigest(), first or b""


def read(path: Path, fd: int) -> tuple[dict[str, Any], Facts, int] | None:
    """``(header, facts, size)`` for the session file open at ``fd`` when its index is this
    user's and the file has the bytes it was written for; None otherwise."""
    key = _key(False)
    if key is None:
        return None
    try:
        index_fd = os.open(index_path(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(index_fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_INDEX_BYTES:
            return None
        raw = os.read(index_fd, MAX_INDEX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(index_fd)
    try:
        body = orjson.loads(raw)
        mark = body.pop("mark")
        if not (isinstance(mark, str) and hmac.compare_digest(mark, _mark(key, body))):
            return None
        if body["format"] != FORMAT or body["version"] != __version__:
            return None
        size = os.fstat(fd).st_size
        if body["size"] != size:
            return None
        sha, first = digest(fd, size)
        if sha != body["sha256"] or not first:
            return None
        header = check_header(path, first, len(first) - 1)
        facts = body["facts"]
        model = facts["model"]
        return header, Facts(model=tuple(model) if model else None, thinking_level=facts["thinkingLevel"],
                             name=facts["name"], side=facts["side"], skipped=facts["skipped"],
                             messages=facts["messages"], interrupted=facts["interrupted"],
                             plan=facts["plan"]), size
    except Exception:  # noqa: BLE001 - an index of another shape is one to write anew
        log.debug("the index of %s is not used", path, exc_info=True)
        return None


def write(path: Path, fd: int, size: int, facts: Facts) -> None:
    """Keep ``facts`` beside the session file open at ``fd`` (its first ``size`` bytes); replaces
    the index atomically, never through a link."""
    try:  # the file is read through a descriptor of its own (the store's may be write-only)
        reader = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        mine, theirs = os.fstat(reader), os.fstat(fd)
        if (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino) and stat.S_ISREG(mine.st_mode):
            _write(path, reader, size, facts)
    finally:
        os.close(reader)


def _write(path: Path, fd: int, size: int, facts: Facts) -> None:
    key = _key(True)
    if key is None:
        return
    try:
        if os.fstat(fd).st_size < size:
            return
        sha, _ = digest(fd, size)
        body: dict[str, Any] = {
            "format": FORMAT, "version": __version__, "size": size, "sha256": sha,
            "facts": {"model": list(facts.model) if facts.model else None, "thinkingLevel": facts.thinking_level,
                      "name": facts.name, "side": facts.side, "skipped": facts.skipped,
                      "messages": facts.messages, "interrupted": facts.interrupted, "plan": facts.plan},
        }
        body["mark"] = _mark(key, body)
        data = orjson.dumps(body)
    except (OSError, TypeError):  # TypeError: an entry orjson cannot write; no index then
        return
    if len(data) > MAX_INDEX_BYTES:
        return
    target = index_path(path)
    temp = target.with_name(f"{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view):]
        finally:
            os.close(out)
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC):
            log.debug("cannot write the index of %s: %s", path, exc)


def remove(path: Path) -> None:
    index_path(path).unlink(missing_ok=True)
