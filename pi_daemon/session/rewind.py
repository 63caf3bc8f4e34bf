"""Rewinding a session: the conversation back to an earlier entry, and the workspace's files
to how they were at that entry.

What the files were at any entry of the tree is known from the ``turn_changes`` records.
Each hangs beside the tree at the entry that was the leaf when it was written (the run's
latest message), and a file's content at an entry is the ``after`` of the latest record for
it on the path to that entry; a file no record on that path touched is as it was before the
first record of the other branch touched it. A rewind from the leaf to a target compares,
for each file a record on only one of the two paths touched, its content at the leaf (what
should be in the workspace now) with its content at the target (what it becomes). A file
whose current content (the editor's buffer where the client keeps one) is neither was
changed by someone else since: it is a conflict, left as it is.

A rewind appends a ``rewind`` entry holding its plan (each file's content now and wanted,
as blob names) and moves the leaf, both synced, before it writes a file; ``rewind_end``
follows the writes. A rewind cut short (the daemon killed) is pending: ``getState`` says so
and the next ``session/rewind`` finishes it first — a file already at its wanted content is
done, one still at its old content is written, anything else is a conflict.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..guard.repositories import in_git_folder
from ..worktree.snapshot import UNKNOWN
from ..guard.workspace import PathRefused
from .blobs import UNKNOWN_BLOB
from .store import SessionStore

if TYPE_CHECKING:
    from .agent_session import AgentSession

NOT_KEPT = "its content at that point was not kept"
NOT_RESTORABLE = "not restorable: "  # then why a run's record could not read the file


def _records(store: SessionStore) -> list[tuple[str | None, dict[str, Any]]]:
    """Every ``turn_changes`` entry with the tree entry that was the leaf when it was written."""
    leaf: str | None = None
    out = []
    for entry in store.entries:
        if entry.get("type") == "turn_changes":
            out.append((leaf, entry))
        leaf = store.leaf_after(entry, leaf)
    return out


def _listed(entry: dict[str, Any], *keys: str) -> list[tuple[Any, ...]]:
    """``(path, *values of keys)`` of each file an entry lists with an absolute path (a damaged one is left out)."""
    files = entry.get("files")
    if not isinstance(files, list):
        return []
    return [(f["path"], *(f.get(k) for k in keys)) for f in files
            if isinstance(f, dict) and isinstance(f.get("path"), str) and os.path.isabs(f["path"])]


def _touches(entry: dict[str, Any]) -> list[tuple[Any, ...]]:
    return _listed(entry, "before", "after")


def plan(store: SessionStore, leaf: str | None, target: str | None) -> list[tuple[str, Any, Any]]:
    """``[(absolute path, blob name now, blob name wanted)]`` for a move from ``leaf`` to
    ``target`` (None: before the first entry; a name None: the file does not exist)."""
    here = {e["id"] for e in store.branch(leaf)} if leaf else set()
    there = {e["id"] for e in store.branch(target)} if target else set()
    timelines: dict[str, list[tuple[str | None, Any, Any]]] = {}  # path -> its records, oldest first
    for anchor, entry in _records(store):
        for path, before, after in _touches(entry):
            timelines.setdefault(path, []).append((anchor, before, after))
    out = []
    for path, timeline in sorted(timelines.items()):
        if all((anchor in here) == (anchor in there) for anchor, _, _ in timeline):
            continue  # no record on only one of the two paths touched it
        now = _content_at(timeline, here, there)
        wanted = _content_at(timeline, there, here)
        if now != wanted:
            out.append((path, now, wanted))
    return out


def _content_at(timeline: list[tuple[str | None, Any, Any]], path_ids: set[str], other: set[str]) -> Any:
    """A file's content at the end of a path: the latest record's on it; for a file no record
    on it touched, what the other path's first record found there."""
    on_path = [after for anchor, _, after in timeline if anchor in path_ids]
    if on_path:
        return on_path[-1]
    return next((before for anchor, before, _ in timeline if anchor in other), UNKNOWN_BLOB)


def pending(store: SessionStore) -> dict[str, Any] | None:
    """The last ``rewind`` entry when no ``rewind_end`` followed it (the daemon stopped mid-way)."""
    last = None
    for entry in store.of_type("rewind", "rewind_end"):
        if entry.get("type") == "rewind":
            last = entry
        elif entry.get("type") == "rewind_end" and last is not None and entry.get("rewindId") == last.get("id"):
            last = None
    return last


def _same(current: bytes | None, stored: Any) -> bool:
    """Whether the file as the user sees it is ``stored``: an editor that ends every file with a
    newline (Neovim's 'fixeol') shows one more than the tool wrote; that is no change by anyone."""
    if current == stored:
        return True
    return isinstance(current, bytes) and isinstance(stored, bytes) and current == stored + b"\n"


def _action(before: Any, after: Any) -> str:
    return "create" if before is None else "delete" if after is None else "write"


class Rewinder:
    """One ``session/rewind`` of a session: its writes go through the session's file access."""

    def __init__(self, session: "AgentSession") -> None:
        self.session = session
        self.changes = session.changes
        self.files: list[dict[str, Any]] = []
        self.conflicts: list[dict[str, Any]] = []
        self.unread: dict[str, str | None] = {}  # path -> why its latest record could not read it
        for _, entry in _records(session.store):
            self.unread.update((path, why if isinstance(why, str) else None) for path, why in _listed(entry, "reason"))

    def _shown(self, path: str) -> str:
        return str(self.changes.workspace.show(Path(path)))

    async def _check(self, path: str, now: Any, wanted: Any) -> tuple[bool, Any]:
        """Whether ``path`` can be (or already is) moved from ``now`` to ``wanted``; records a conflict."""
        if in_git_folder(path) or in_git_folder(os.path.realpath(path)):  # a session file can be crafted
            self._conflict(path, "it is inside .git/, whose configuration and hooks git runs as programs")
            return False, None
        if now is UNKNOWN or wanted is UNKNOWN:
            why = self.unread.get(path)
            self._conflict(path, NOT_RESTORABLE + why[:500] if why is not None else NOT_KEPT)
            return False, None
        try:
            current, _ = await self.session.files.current(path)
        except PathRefused as exc:
            self._conflict(path, str(exc))
            return False, None
        except OSError as exc:
            self._conflict(path, f"it could not be read ({exc.strerror or exc})")
            return False, None
        if _same(current, wanted):
            return True, wanted
        if not _same(current, now):
            self._conflict(path, "it no longer exists" if current is None else "it was created by someone else"
                           if now is None else "it was changed since")
            return False, None
        return True, current

    def _conflict(self, path: str, reason: str) -> None:
        self.conflicts.append({"path": self._shown(path), "reason": reason})

    async def preview(self, moves: list[tuple[str, Any, Any]]) -> None:
        contents = iter(self.changes.blobs.get_many(n for _, now, wanted in moves for n in (now, wanted)))
        for path, now_name, wanted_name in moves:
            now, wanted = next(contents), next(contents)
            ok, current = await self._check(path, now, wanted)
            if ok and current != wanted:
                self.files.append({"path": self._shown(path), "action": _action(now_name, wanted_name)})

    async def apply(self, moves: list[tuple[str, Any, Any]]) -> None:
        """Write each file's wanted content (newest run's files are as good as any: whole files)."""
        contents = iter(self.changes.blobs.get_many(n for _, now, wanted in moves for n in (now, wanted)))
        access = self.session.files
        for path, now_name, wanted_name in moves:
            now, wanted = next(contents), next(contents)
            ok, current = await self._check(path, now, wanted)
            if not ok or current == wanted:
                continue
            if wanted is None:
                await access.delete(path)
            else:
                await access.write(path, wanted, "edit" if current is not None else "write")
            self.files.append({"path": self._shown(path), "action": _action(now_name, wanted_name)})


async def rewind(session: "AgentSession", entry_id: str | None, files: str = "revert", dry_run: bool = False
                 ) -> dict[str, Any]:
    """Move the leaf to ``entry_id`` (None: before the first entry, an empty conversation) and
    (``files="revert"``) the workspace's files with it."""
    from .agent_session import EntryError, SessionError
    from .navigation import follow_leaf

    session.check_writable()
    if session.busy:
        raise SessionError("busy", "a run is active: abort it or wait for agent_settled before rewinding")
    store = session.store
    if entry_id is not None and entry_id not in store.by_id:
        raise EntryError(f"no entry with id {entry_id!r} in this session (session/tree lists them)")
    rewinder = Rewinder(session)
    async with session.changes.reverting:
        unfinished = pending(store)
        if unfinished is not None and not dry_run:
            await _finish(session, rewinder, unfinished)
        leaf = store.leaf_id
        moves = plan(store, leaf, entry_id) if files == "revert" and session.files is not None else []
        if dry_run:
            await rewinder.preview(moves)
            return {"leafId": leaf, "dryRun": True, "files": rewinder.files, "conflicts": rewinder.conflicts}
        started = None
        if moves:
            started = store.append("rewind", fromId=leaf, targetId=entry_id,
                                   files=[{"path": p, "before": now, "after": wanted} for p, now, wanted in moves])
        if entry_id != leaf:
            store.set_leaf(entry_id)
        store.sync()
        follow_leaf(session)
        if started is not None:
            await _apply(rewinder, moves)
            _end(store, started, rewinder)
        await session.observers.emit(session.plan.event())  # the plan as it stood at the new position
    return {"leafId": store.leaf_id, "dryRun": False, "files": rewinder.files, "conflicts": rewinder.conflicts}


async def _finish(session: "AgentSession", rewinder: Rewinder, started: dict[str, Any]) -> None:
    """Complete a rewind the daemon did not finish: the leaf moves to its target unless the
    session went on from somewhere else since, and each file is taken where it was going."""
    from .navigation import follow_leaf

    store = session.store
    target = started.get("targetId")
    if store.leaf_id == started.get("fromId") != target and (target is None or target in store.by_id):
        store.set_leaf(target)
        store.sync()
        follow_leaf(session)
    await _apply(rewinder, _listed(started, "before", "after"))
    _end(store, started, rewinder)


async def _apply(rewinder: Rewinder, moves: list[tuple[Any, ...]]) -> None:
    """The writes; one that fails (the editor refused, the disk is full) leaves the rewind pending."""
    from .agent_session import SessionError

    try:
        await rewinder.apply(moves)
    except OSError as exc:
        raise SessionError("state", f"a file could not be written ({exc.strerror or exc}); the rewind is "
                                    "pending: session/rewind again finishes it") from None


def _end(store: SessionStore, started: dict[str, Any], rewinder: Rewinder) -> None:
    store.append("rewind_end", rewindId=started["id"], conflicts=[c["path"] for c in rewinder.conflicts])
    store.sync()


def pending_state(session: "AgentSession") -> dict[str, Any] | None:
    """``{entryId, files}`` of a rewind the daemon did not finish, for ``getState``."""
    started = pending(session.store)
    if started is None:
        return None
    paths = [str(session.changes.workspace.show(Path(path))) for path, in _listed(started)]
    return {"entryId": started.get("targetId"), "files": paths}
