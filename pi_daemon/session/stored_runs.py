"""A session's stored runs: each run's changed files as the session file recorded them, their
diffs, the hunks the user accepted, and taking hunks back out (revert).

The records are ``turn_changes`` entries (contents under ``.pi/blobs``, :mod:`.blobs`) and
``turn_review`` entries; :class:`StoredRuns` reads them for ``changes/get``, ``changes/accept``
and ``changes/revert`` (:class:`.changes.ChangeLog` is one, beside the live run it records).
"""

from __future__ import annotations

import asyncio
import functools
import os
from pathlib import Path
from typing import AbstractSet, Any, overload

from ..guard.repositories import in_git_folder
from ..guard.workspace import PathRefused, Workspace
from ..worktree.diffs import FileDiff, file_diff, revert_hunks
from ..worktree.snapshot import UNKNOWN
from ..worktree.unread import Unread
from .blobs import Blobs
from .store import SessionStore


class ChangeError(Exception):
    """A changes/* request that names a run, file or hunk that does not exist."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@overload
def as_text(data: bytes) -> str: ...
@overload
def as_text(data: None) -> None: ...
def as_text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "surrogateescape")


def diff_of(shown: str, before: Any, after: Any) -> FileDiff:
    if isinstance(after, Unread):  # changed, but not read: listed with why (not restorable)
        return FileDiff(shown, "added" if before is None else "modified", [],
                        f"--- a/{shown}\n+++ b/{shown}\n({after.reason}: not restorable)\n")
    if before is UNKNOWN:
        return FileDiff(shown, "modified", [], f"--- a/{shown}\n+++ b/{shown}\n"
                                                "(its content before the run was not kept: too large or too many files)\n")
    if after is UNKNOWN:  # its stored content is gone or damaged (a delta's base collected by git, say)
        return FileDiff(shown, "modified", [], f"--- a/{shown}\n+++ b/{shown}\n"
                                                "(its content after the run was not kept)\n")
    if b"\0" in (before or b"")[:8192] or b"\0" in (after or b"")[:8192]:
        status = "added" if before is None else "deleted" if after is None else "modified"
        return FileDiff(shown, status, [], f"Binary file {shown} differs\n")
    return file_diff(shown, as_text(before), as_text(after))


def wire(diff: FileDiff, accepted: AbstractSet[str] = frozenset(), after: Any = None) -> dict[str, Any]:
    """A file as ``turn_diff`` and ``changes/get`` list it; one not read says why (``after``: an Unread)."""
    out = {"path": diff.path, "status": diff.status, "diff": diff.diff,
           "hunks": [{"id": h.id, "oldStart": h.old_start, "oldLines": h.old_lines, "newStart": h.new_start,
                      "newLines": h.new_lines, "header": h.header, "accepted": h.id in accepted}
                     for h in diff.hunks]}
    if isinstance(after, Unread):
        out.update(unread_fields(after))
    return out


def unread_fields(after: Unread) -> dict[str, Any]:
    """What a file not read is listed (and recorded) with: why, its size and modification time."""
    out: dict[str, Any] = {"reason": after.reason}
    if after.size is not None:
        out["size"] = after.size
    if after.mtime_ns is not None:
        out["mtime"] = after.mtime_ns // 1_000_000
    return out


def stored_unread(record: dict[str, Any]) -> Unread | None:
    """The Unread a ``turn_changes`` file record names (its ``reason``), None when it has none."""
    reason = record.get("reason")
    if not isinstance(reason, str):
        return None
    size, mtime = record.get("size"), record.get("mtime")
    return Unread(reason[:500], size if isinstance(size, int) else None,
                  mtime * 1_000_000 if isinstance(mtime, int) else None)


class StoredRuns:
    """The runs a session file recorded, for review and revert (a part of :class:`.changes.ChangeLog`)."""

    workspace: Workspace
    store: SessionStore
    blobs: Blobs


    def runs(self) -> dict[str, dict[str, tuple[Any, Any, Unread | None]]]:
        """run id -> path -> (before blob, after blob, why the file was not read or None), from the
        session file, oldest run first."""
        found: dict[str, dict[str, tuple[Any, Any, Unread | None]]] = {}
        for entry in self.store.entries:
            if entry.get("type") == "turn_changes" and isinstance(entry.get("runId"), str):
                files = found.setdefault(entry["runId"], {})
                listed = entry.get("files")
                for f in listed if isinstance(listed, list) else []:  # a damaged record is left out
                    if isinstance(f, dict) and isinstance(f.get("path"), str) and os.path.isabs(f["path"]):
                        # a before or after that is not a string (a name) is not kept
                        files[f["path"]] = (f.get("before"), f.get("after"), stored_unread(f))
        return found

    def accepted(self, run_id: str) -> dict[str, set[str]]:
        marks: dict[str, set[str]] = {}
        for entry in self.store.entries:
            ids = entry.get("hunkIds")
            if entry.get("type") == "turn_review" and entry.get("runId") == run_id and isinstance(ids, list):
                marks.setdefault(str(entry.get("path")), set()).update(i for i in ids if isinstance(i, str))
        return marks

    def _run(self, run_id: str | None) -> tuple[str, dict[str, tuple[Any, Any, Unread | None]]]:
        runs = self.runs()
        if run_id is None:
            if not runs:
                raise ChangeError("runId", "no run of this session has changed a file")
            run_id = next(reversed(runs))
        if run_id not in runs:
            raise ChangeError("runId", f"no run {run_id!r} with changes in this session")
        return run_id, runs[run_id]

    def diffs(self, run_id: str | None) -> tuple[str, list[tuple[str, FileDiff, Any, Any]]]:
        """(run id, [(absolute path, diff, before bytes, after bytes)]) of a stored run."""
        run_id, files = self._run(run_id)
        contents = iter(self.blobs.get_many(name for before, after, _ in files.values() for name in (before, after)))
        out = []
        for path, (_, _, not_read) in files.items():
            before, after = next(contents), next(contents)
            after = not_read or after
            diff = diff_of(self.workspace.show(Path(path)), before, after)
            if diff.diff:
                out.append((path, diff, before, after))
        return run_id, out

    def get(self, run_id: str | None, path: str | None = None,
            with_content: bool = False) -> tuple[str, list[dict[str, Any]]]:
        run_id, diffs = self.diffs(run_id)
        if path is not None:
            wanted = self._shown(path, "path")
            diffs = [item for item in diffs if item[1].path in (path, wanted)]
        marks = self.accepted(run_id)
        out = []
        for full, diff, before, after in diffs:
            item = wire(diff, marks.get(full, set()), after)
            if with_content:
                for key, data in (("before", before), ("after", after)):
                    if isinstance(data, bytes):
                        item[key] = as_text(data)
            out.append(item)
        return run_id, out

    def _shown(self, path: str, field: str) -> str:
        """A path a request names, as the run's files are shown; ChangeError when it is refused."""
        try:
            return self.workspace.show(self.workspace.resolve(path))
        except PathRefused as exc:
            raise ChangeError(field, str(exc)) from None

    def _chosen(self, run_id: str | None, files: list[dict[str, Any]] | None
                ) -> tuple[str, list[tuple[tuple[str, FileDiff, Any, Any], set[str] | None]]]:
        run_id, diffs = self.diffs(run_id)
        by_shown = {diff.path: item for item in diffs for diff in [item[1]]}
        if files is None:
            return run_id, [(item, None) for item in diffs]
        chosen: list[tuple[tuple[str, FileDiff, Any, Any], set[str] | None]] = []
        for n, f in enumerate(files):
            item = by_shown.get(f["path"]) or by_shown.get(self._shown(f["path"], f"files[{n}].path"))
            if item is None:
                raise ChangeError(f"files[{n}].path", f"run {run_id} did not change {f['path']!r}")
            ids = f.get("hunk_ids")
            if ids is not None:
                unknown = set(ids) - {h.id for h in item[1].hunks}
                if unknown:
                    raise ChangeError(f"files[{n}].hunkIds", f"{f['path']!r} has no hunk {sorted(unknown)[0]!r} "
                                                             f"in run {run_id}")
                ids = set(ids)
            chosen.append((item, ids))
        return run_id, chosen

    def accept(self, run_id: str | None, files: list[dict[str, Any]] | None) -> tuple[str, int]:
        run_id, chosen = self._chosen(run_id, files)
        count = 0
        for (path, diff, _, _), ids in chosen:
            hunk_ids = sorted(ids if ids is not None else {h.id for h in diff.hunks})
            self.store.append("turn_review", runId=run_id, path=path, hunkIds=hunk_ids, state="accepted")
            count += len(hunk_ids)
        self.store.sync()
        return run_id, count

    @functools.cached_property
    def reverting(self) -> asyncio.Lock:
        """Held while a revert writes: a run that starts meanwhile begins recording once it is
        done, or the revert's writes would be recorded as the run's own changes."""
        return asyncio.Lock()

    async def revert(self, run_id: str | None, files: list[dict[str, Any]] | None, access: Any) -> dict[str, Any]:
        """Take the chosen hunks back out of the files' current content (through ``access``)."""
        async with self.reverting:
            return await self._revert(run_id, files, access)

    async def _revert(self, run_id: str | None, files: list[dict[str, Any]] | None, access: Any) -> dict[str, Any]:
        run_id, chosen = self._chosen(run_id, files)
        reverted: list[dict[str, Any]] = []
        conflicts: list[dict[str, Any]] = []
        stored: list[dict[str, Any]] = []
        try:
            await self._revert_files(chosen, access, reverted, conflicts, stored)
        finally:  # what was written is recorded, even when a later file's write fails
            if stored:
                self.store.append("turn_changes", runId=run_id, files=stored, reverted=True)
                self.store.sync()
        return {"runId": run_id, "reverted": reverted, "conflicts": conflicts}

    async def _revert_files(self, chosen: list[tuple[tuple[str, FileDiff, Any, Any], set[str] | None]], access: Any,
                            reverted: list[dict[str, Any]], conflicts: list[dict[str, Any]],
                            stored: list[dict[str, Any]]) -> None:
        for (path, diff, before, after), ids in chosen:
            if in_git_folder(path) or in_git_folder(os.path.realpath(path)):  # a session file can be crafted
                conflicts.append({"path": diff.path, "hunkId": None, "reason": "it is inside .git/, whose "
                                  "configuration and hooks git runs as programs: it is not reverted here"})
                continue
            if isinstance(after, Unread):
                conflicts.append({"path": diff.path, "hunkId": None, "reason": f"not restorable: {after.reason}"})
                continue
            try:
                current, _ = await access.current(path)
            except PathRefused as exc:  # a session file naming a path out of the workspace, or in .pi/
                conflicts.append({"path": diff.path, "hunkId": None, "reason": str(exc)})
                continue
            if before is UNKNOWN or after is UNKNOWN:
                conflicts.append({"path": diff.path, "hunkId": None,
                                  "reason": f"its content {'before' if before is UNKNOWN else 'after'} the run "
                                            "was not kept"})
                continue
            if diff.status == "deleted" or not diff.hunks:  # whole-file: recreate, or binary
                if current != after:  # deleted since counts: recreating it would undo the user's delete
                    conflicts.append({"path": diff.path, "hunkId": None, "reason": "the file was changed after the run"
                                      if current is not None else "the file no longer exists"})
                    continue
                new = before
            else:
                if current is None:
                    conflicts.append({"path": diff.path, "hunkId": None, "reason": "the file no longer exists"})
                    continue
                result = revert_hunks(as_text(before), as_text(after), as_text(current), diff, ids)
                conflicts += [{"path": diff.path, "hunkId": h, "reason": why} for h, why in result.conflicts]
                if not result.reverted:
                    continue
                reverted.append({"path": diff.path, "hunkIds": result.reverted})
                new = result.text.encode("utf-8", "surrogateescape")
                if diff.status == "added" and not new and len(result.reverted) == len(diff.hunks):
                    new = None
            if diff.status == "deleted" or not diff.hunks:
                reverted.append({"path": diff.path, "hunkIds": [h.id for h in diff.hunks]})
            if new is None:
                await access.delete(path)
            else:
                await access.write(path, new, "edit" if current is not None else "write")
            blob = None if new is None else self.blobs.put(new)
            stored.append({"path": path, "before": self.blobs.put(before) if before is not None else None,
                           "after": blob})
