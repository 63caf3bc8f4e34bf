"""The change log of a session: what each run did to the workspace's files, for review.

A run's changes are, per file, its content before the run's first change and after the
run's latest one. ``write`` and ``edit`` report both exactly through the file-access seam
(:meth:`..tools.file_access.FileAccess.note_write`); what ``bash`` changed is found by
comparing the workspace with a snapshot taken before the run's first command
(:mod:`pi_daemon.worktree.snapshot`), at the end of each command (in the command's own time),
and at the run's end what its commands wrote through names a watch does not see. The runs
the session file recorded are read back for review and revert by :mod:`.stored_runs`.

After each tool batch that touched a file, and at ``agent_end`` of a run that changed any,
the session emits ``turn_diff``; before it is told, the files touched since the last one
are appended to the session file as a ``turn_changes`` entry (for a file, a later entry
of the run replaces an earlier one), with the contents stored under ``.pi/blobs``
(:mod:`.blobs`: the JSONL lines stay small; the tools cannot write under ``.pi/``; a
command's changes go into one pack per scan, and a committed before-content is a reference
to git's blob). ``turn_review`` entries record hunks the user accepted. A file's contents
are stored and its diff computed when it is recorded (for ``write``/``edit``, in the tool's
own time; for ``bash``, by the scan at the command's ``tool_execution_end``) and kept until
the file is touched again, so an event only gathers: it writes the entry and lists what is
ready.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from ..converter import from_wire
from ..events import AgentEnd, AgentStart, ChangedFile, SkippedFolder, ToolExecutionEnd, TurnDiff, TurnEnd
from ..worktree.diffs import FileDiff
from ..worktree.snapshot import UNKNOWN
from ..worktree.unread import MAX_DIFF_BYTES, Unread, too_large, unread
from ..worktree.watched_snapshot import WatchSnapshot, left_out, take_async
from ..guard.workspace import READ, PathRefused, Workspace
from .blobs import GIT_PREFIX, UNKNOWN_BLOB, Blobs
from .store import SessionStore
from .stored_runs import StoredRuns, diff_of, unread_fields, wire

_WRITER = ThreadPoolExecutor(1, thread_name_prefix="pi-blobs")
log = logging.getLogger(__name__)


class Tracked:
    """One file of the live run."""

    __slots__ = ("before", "ref", "after", "diff", "blobs", "before_blob", "wire", "unsaved", "stamp")

    def __init__(self, before: Any, after: Any, ref: str | None = None) -> None:
        self.before = before
        self.ref = ref  # git's blob id of ``before`` when git keeps it (committed): not copied
        self.after = after
        self.diff: FileDiff | None = None  # None: touched since it was last computed
        self.blobs: tuple[str | None, str | None] | None = None  # None: ``after`` not yet stored
        self.before_blob: tuple[str | None] | None = None  # None: ``before`` not yet stored
        self.wire: dict[str, Any] | None = None  # the diff as turn_diff lists it
        self.unsaved = True  # touched since the run's last turn_changes entry
        self.stamp = 0  # when it was last recorded (ChangeLog's count of records)


def _elided(path: str, keep: int = 120) -> str:
    """A long path (a crafted chain runs to thousands of characters) cut in its middle."""
    return path if len(path) <= keep else f"{path[:keep // 2]}…{path[-keep // 2:]}"


def _ran(event: ToolExecutionEnd) -> bool:
    """Whether the ended ``bash`` call ran a command (a refused or invalid one has no exit details)."""
    details = event.result.details
    return isinstance(details, dict) and "exitCode" in details


class ChangeLog(StoredRuns):
    def __init__(self, workspace: Workspace, store: SessionStore, state_dir: Path) -> None:
        self.workspace = workspace
        self.store = store
        self.blobs = Blobs(state_dir / "blobs", str(workspace.root))
        self.run_id: str | None = None
        self.files: dict[str, Tracked] = {}
        self.snapshot: Any = None
        self._bash_ran = False
        self._unsaved = False
        self._scanning = asyncio.Lock()
        self._records = 0
        self.skipped: dict[str, str] = {}  # folders the run's record left out (shown path -> why)
        self._skips_unsent = False

    # --- the live run ----------------------------------------------------------------

    def start(self) -> str:
        self.run_id = uuid.uuid4().hex[:12]
        self.files = {}
        self._unsaved = False
        self.skipped, self._skips_unsent = {}, False
        return self.run_id

    def record(self, target: Path, before: Callable[[], object], after: Any,
               prepare: bool = True, ref: str | None = None) -> Tracked | None:
        """A tool changed ``target``: its contents are stored and its diff computed now (unless
        not ``prepare``), in the tool's own time, so the next ``turn_diff`` only gathers."""
        if self.run_id is None:
            return None  # a write outside a run (a revert): not part of any run
        tracked = self.files.get(str(target))
        if tracked is None:
            tracked = self.files[str(target)] = Tracked(before(), after, ref)
        else:
            tracked.after, tracked.diff, tracked.blobs, tracked.wire = after, None, None, None
        tracked.unsaved = True
        self._unsaved = True
        self._records += 1
        tracked.stamp = self._records
        if prepare:
            self._try_store(tracked)
            self._wire(str(target), tracked)
        return tracked

    async def before_bash(self, confined: bool = True) -> str | None:
        """A command is allowed and about to run (the tool calls this): snapshot the workspace
        first (once per run). A refused command never gets here, so it causes no work. Returns
        a note for the command's result when the record leaves folders out that it had not said.
        Not ``confined`` (no sandbox, or more places it may write than the workspace), it could
        write through a name outside the tree, which a watched snapshot then looks for."""
        self._bash_ran = True
        async with self._scanning:  # two commands of a batch: one snapshot
            if self.snapshot is None and self.run_id is not None:
                self.snapshot = await take_async(str(self.workspace.root))
        if not confined and isinstance(self.snapshot, WatchSnapshot):
            self.snapshot.unconfined = True
        new = self._note_skips()
        if not new:
            return None
        shown = "; ".join(f"{_elided(path)} ({why})" for path, why in new)
        return f"[changes in these folders are not in the turn diff: {shown}]"

    def _note_skips(self) -> list[tuple[str, str]]:
        """The folders the snapshot's walks left out that the run had not noted yet (now noted)."""
        if self.snapshot is None:
            return []
        new = [(path, why) for path, why in left_out(self.snapshot) if path not in self.skipped]
        self.skipped.update(new)
        self._skips_unsent = self._skips_unsent or bool(new)
        return new

    async def scan(self, hidden: bool = False) -> None:
        """After a command (and, for one that ended unseen, after its batch): add what it changed.
        With ``hidden`` (the run's end), also what its commands wrote through names a watched
        snapshot does not see (:meth:`.WatchSnapshot.hidden_changes`): once a run, not per command."""
        async with self._scanning:  # commands of a batch may end together
            snapshot = self.snapshot
            if snapshot is None or not (self._bash_ran or hidden and isinstance(snapshot, WatchSnapshot)):
                return
            found = []
            since, had = self._records, set(self.files)  # a tool's write from now on is newer than the scan's read
            if self._bash_ran:
                self._bash_ran = False
                found += await asyncio.to_thread(self._changed, snapshot.changes)
            if hidden and isinstance(snapshot, WatchSnapshot):
                found += await asyncio.to_thread(self._changed, snapshot.hidden_changes)
            touched = []
            for path, before, ref, after in found:
                known = self.files.get(path)
                if known is not None and known.stamp > since:  # a tool of the batch wrote it while it was read:
                    # that write is the newer content (its stat moved: a later scan reads it again) ...
                    if path not in had:  # ... and its before was the command's change: the run's is the snapshot's
                        known.before, known.ref = before, ref
                        known.before_blob = known.blobs = known.diff = known.wire = None
                        touched.append((path, known))
                    continue
                tracked = self.record(Path(path), lambda: before, after, prepare=False, ref=ref)  # called at once
                if tracked is not None:
                    touched.append((path, tracked))
            await asyncio.to_thread(self._prepare_all, touched)
            self._note_skips()

    def _changed(self, changes: Callable[[], list[tuple[str, object, str | None]]]
                 ) -> list[tuple[str, object, str | None, Any]]:
        """What ``changes`` (a snapshot's) found: (path, content before the run, git's blob id of
        that content when git keeps it, content now: bytes, None when gone, an Unread when it
        could not be read)."""
        out = []
        for path, before, ref in changes():
            if self.workspace.show(Path(path)).split(os.sep)[0] == ".pi":
                continue
            out.append((path, before, ref, self._now(path)))
        return out

    def _now(self, path: str) -> bytes | Unread | None:
        """A changed file's content, read as the tools read (no symlink or hard link out of the
        workspace followed), never more than the diff's limit; what is not read says why."""
        if not os.path.lexists(path):
            return None
        try:
            with self.workspace.open_file(path, READ) as file:
                big = too_large(path, os.fstat(file.fd))
                if big is not None:
                    return big
                data = file.read(limit=MAX_DIFF_BYTES + 1)
                if len(data) > MAX_DIFF_BYTES:  # it grew while it was read
                    return too_large(path, os.fstat(file.fd)) or unread(path, "it grew past the limit as it was read")
                return data
        except PathRefused as exc:
            if not os.path.lexists(path):
                return None
            return unread(path, str(exc).replace(path, self.workspace.show(Path(path))))
        except OSError as exc:
            return unread(path, f"it could not be read ({exc.strerror or exc})")

    def _prepare_all(self, touched: list[tuple[str, Tracked]]) -> None:
        """Many files at once (a command's): a second thread stores them, all in one pack, while
        this one diffs (hashing and file writes release the GIL), so the batch costs the larger
        of the two. A file's names are given only once the pack is in place; if writing it
        fails, the next ``turn_diff`` stores the files one by one (or reports why not)."""
        def store() -> None:
            pack = self.blobs.pack()
            named = []
            try:
                for _, tracked in touched:
                    if tracked.blobs is None:
                        before = tracked.before_blob[0] if tracked.before_blob is not None else \
                            self._before_name(tracked, pack.add)
                        after = None
                        if isinstance(tracked.after, Unread):
                            after = UNKNOWN_BLOB
                        elif tracked.after is not None:  # as a delta against the before-content, when smaller
                            base = (tracked.before, before) if isinstance(tracked.before, bytes) and before else None
                            after = pack.add(tracked.after, base)
                        named.append((tracked, before, after))
                pack.close()
            except OSError:
                pack.discard()
                return
            for tracked, before, after in named:
                tracked.before_blob = (before,)
                tracked.blobs = (before, after)

        storing = _WRITER.submit(store)
        for path, tracked in touched:
            self._wire(path, tracked)
        storing.result()

    def turn_diff(self, always: bool = False) -> list[dict[str, Any]] | None:
        """The run's files as ``turn_diff`` shows them, after storing the files touched since the
        last call; None when nothing was touched and no folder newly left out since (unless
        ``always`` and the run has files)."""
        if self.run_id is None or not (self._unsaved or self._skips_unsent or (always and self.files)):
            return None
        self._skips_unsent = False
        stored = []
        out = []
        for path, tracked in self.files.items():
            if tracked.unsaved:
                try:
                    self._store_one(tracked)  # already done when the file was recorded, unless that failed
                    assert tracked.blobs is not None
                    names = tracked.blobs
                except OSError as exc:  # .pi/blobs cannot be written (disk full, a file or symlink in the way)
                    log.warning("the contents of %s could not be stored, it is recorded as not kept: %s", path, exc)
                    names = (tracked.before_blob[0] if tracked.before_blob is not None else
                             self._before_name(tracked, lambda data: UNKNOWN_BLOB),
                             None if tracked.after is None else UNKNOWN_BLOB)
                record = {"path": path, "before": names[0], "after": names[1]}
                if isinstance(tracked.after, Unread):
                    record.update(unread_fields(tracked.after))
                stored.append(record)
            wired = self._wire(path, tracked)
            if wired is not None:
                out.append(wired)
        if stored and self.store.read_only is None:
            self.store.append("turn_changes", runId=self.run_id, files=stored)
        for tracked in self.files.values():
            tracked.unsaved = False
        self._unsaved = False
        return out

    def _wire(self, path: str, tracked: Tracked) -> dict[str, Any] | None:
        """The file's entry in turn_diff (None: no change to show), computed once per change."""
        if tracked.diff is None:
            tracked.diff = diff_of(self.workspace.show(Path(path)), tracked.before, tracked.after)
            tracked.wire = wire(tracked.diff, after=tracked.after) if tracked.diff.diff else None
        return tracked.wire

    def _try_store(self, tracked: Tracked) -> None:
        try:
            self._store_one(tracked)
        except OSError:
            pass  # stored (or the failure reported) by the next turn_diff

    def _store_one(self, tracked: Tracked) -> None:
        if tracked.blobs is not None:
            return
        if tracked.before_blob is None:  # the same for the whole run: stored once
            tracked.before_blob = (self._before_name(tracked, self.blobs.put),)
        after = tracked.after
        tracked.blobs = (tracked.before_blob[0], None if after is None else UNKNOWN_BLOB if isinstance(after, Unread)
                         else self.blobs.put(after))

    @staticmethod
    def _before_name(tracked: Tracked, store: Callable[[bytes], str]) -> str | None:
        """The before-content's name: ``store`` keeps it unless git does (or there is none)."""
        if tracked.before is UNKNOWN:
            return UNKNOWN_BLOB
        if tracked.before is None:
            return None
        return GIT_PREFIX + tracked.ref if tracked.ref is not None else store(tracked.before)

    async def on_event(self, event: Any, emit: Callable[[Any], Any]) -> None:
        """Follow the run: start, snapshot before a command, ``turn_diff`` after a batch / at the end."""
        if isinstance(event, AgentStart):
            if self.run_id is None:
                self.start()
        elif isinstance(event, ToolExecutionEnd):
            if event.tool_name == "bash" and self.snapshot is not None and _ran(event):
                self._bash_ran = True  # this one's changes, found in its own time (another may still run)
                await self.scan()
        elif isinstance(event, AgentEnd) or (isinstance(event, TurnEnd) and event.tool_results):
            await self.scan(hidden=isinstance(event, AgentEnd))
            files = self.turn_diff(always=isinstance(event, AgentEnd))
            if files is not None:
                skipped = [SkippedFolder(path, why) for path, why in self.skipped.items()] or None
                await emit(TurnDiff(run_id=self.run_id or "", files=from_wire(files, list[ChangedFile]),
                                    skipped=skipped))

    def finish(self) -> None:
        self.run_id = None
        self.files = {}
        if self.snapshot is not None:
            self.snapshot.close()
            self.snapshot = None

