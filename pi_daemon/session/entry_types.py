"""The session file's lines as types: the header and every entry type (docs/protocol.md, "The file").

The store keeps entries as the dicts it read or wrote, and ``session/entries`` sends them
exactly so (a field or entry type this build does not know included); these classes declare
the shape those dicts have, for the protocol schema and the client types generated from it.
An entry is read like a method's params: a field may be missing, unknown fields are allowed.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

import attrs

from ..json_types import JsonObject, JsonValue
from ..messages import AgentMessageUnion, Usage


class ShapedAs:
    """Marks a JSON value passed through as read whose shape the schema gives by ``tp``."""

    def __init__(self, tp: object) -> None:
        self.tp = tp


@attrs.define(kw_only=True)
class _Entry:
    id: str
    timestamp: str | None = None


@attrs.define(kw_only=True)
class _TreeEntry(_Entry):
    """An entry in the tree: ``parentId`` is the entry it hangs under (none: the root)."""

    parent_id: str | None = None


@attrs.define
class SessionHeader:
    """Line 1 of a session file."""

    version: int
    id: str
    type: Literal["session"] = attrs.field(default="session", init=False)
    timestamp: str | None = None
    cwd: str | None = None
    parent_session: str | None = None  # the file this one was forked or cloned from
    parent_session_id: str | None = None  # a subagent's: the session whose task tool call started it
    parent_tool_call_id: str | None = None  # ... and that call


@attrs.define
class FilesTouched:
    """What a summarised stretch of the conversation read and modified."""

    read_files: list[str] | None = None
    modified_files: list[str] | None = None


@attrs.define(kw_only=True)
class MessageEntry(_TreeEntry):
    """A message at its ``message_end``; ``queueId`` when it was delivered from the queue."""

    message: AgentMessageUnion
    type: Literal["message"] = attrs.field(default="message", init=False)
    queue_id: str | None = None


@attrs.define(kw_only=True)
class ModelChangeEntry(_TreeEntry):
    provider: str
    model_id: str
    type: Literal["model_change"] = attrs.field(default="model_change", init=False)


@attrs.define(kw_only=True)
class ThinkingLevelChangeEntry(_TreeEntry):
    thinking_level: str
    type: Literal["thinking_level_change"] = attrs.field(default="thinking_level_change", init=False)


@attrs.define(kw_only=True)
class SessionInfoEntry(_TreeEntry):
    type: Literal["session_info"] = attrs.field(default="session_info", init=False)
    name: str | None = None


@attrs.define(kw_only=True)
class _SummaryEntry(_TreeEntry):
    """A summary the model wrote of a stretch of the conversation, what that stretch read and
    modified, and what writing it cost."""

    summary: str
    details: FilesTouched | None = None
    usage: Usage | None = None


@attrs.define(kw_only=True)
class CompactionEntry(_SummaryEntry):
    """The context before ``firstKeptEntryId`` is replaced by ``summary``."""

    type: Literal["compaction"] = attrs.field(default="compaction", init=False)
    first_kept_entry_id: str | None = None
    tokens_before: int | None = None


@attrs.define(kw_only=True)
class BranchSummaryEntry(_SummaryEntry):
    """Written under the new position by ``session/navigate{summarize}``; ``fromId`` is the leaf left."""

    type: Literal["branch_summary"] = attrs.field(default="branch_summary", init=False)
    from_id: str | None = None


@attrs.define(kw_only=True)
class LabelEntry(_Entry):
    """A label on ``targetId`` (none: the label is removed); outside the tree."""

    target_id: str
    type: Literal["label"] = attrs.field(default="label", init=False)
    label: str | None = None


@attrs.define(kw_only=True)
class CustomEntry(_TreeEntry):
    """An extension's own data, in Pi's format; not part of the model's context."""

    custom_type: str
    type: Literal["custom"] = attrs.field(default="custom", init=False)
    data: JsonValue = None


@attrs.define(kw_only=True)
class CustomMessageEntry(_TreeEntry):
    """An extension's message to the model, in Pi's format: ``content`` is text or content blocks."""

    custom_type: str
    content: JsonValue
    type: Literal["custom_message"] = attrs.field(default="custom_message", init=False)
    display: bool | None = None
    details: JsonValue = None


@attrs.define(kw_only=True)
class QueueAddEntry(_Entry):
    """A steering or follow-up message accepted into the queue; outside the tree."""

    queue_id: str
    kind: Literal["steer", "followUp"]
    message: AgentMessageUnion
    type: Literal["queue_add"] = attrs.field(default="queue_add", init=False)


@attrs.define(kw_only=True)
class QueueDoneEntry(_Entry):
    """A queued message taken out without being delivered; outside the tree."""

    queue_id: str
    type: Literal["queue_done"] = attrs.field(default="queue_done", init=False)
    reason: str | None = None


@attrs.define(kw_only=True)
class LeafEntry(_Entry):
    """``session/navigate`` moved the current position to ``targetId``; outside the tree."""

    target_id: str
    type: Literal["leaf"] = attrs.field(default="leaf", init=False)


@attrs.define(kw_only=True)
class SessionSettingsEntry(_Entry):
    """The settings group that changed (the names and values of ``setQueueModes``,
    ``setAutoRetry``, ``setAutoCompaction``, ``setMode``); outside the tree."""

    type: Literal["session_settings"] = attrs.field(default="session_settings", init=False)
    queue_modes: JsonObject | None = None
    auto_retry: JsonObject | None = None
    auto_compaction: JsonObject | None = None
    mode: str | None = None


@attrs.define
class StoredFileChange:
    """A file a run touched (absolute path), its content before the run and now, each named as
    ``.pi/blobs`` stores it: a SHA-256 (a blob file), ``<sha256>@<pack>:<offset>:<size>[+<base>]``
    (bytes in a pack, maybe a delta) or ``git:<blob id>`` (committed content read back from git);
    none: the file does not exist; ``"?"``: not kept."""

    path: str
    before: str | None = None
    after: str | None = None


@attrs.define(kw_only=True)
class TurnChangesEntry(_Entry):
    """The files a run touched since its last such entry; outside the tree."""

    run_id: str
    files: list[StoredFileChange]
    type: Literal["turn_changes"] = attrs.field(default="turn_changes", init=False)
    reverted: bool | None = None


@attrs.define(kw_only=True)
class SubagentEntry(_Entry):
    """A subagent (a child session) started by a ``task`` call ended; outside the tree. Its
    ``usage`` counts in this session's totals."""

    tool_call_id: str
    session_id: str
    status: Literal["completed", "failed", "aborted"]
    type: Literal["subagent"] = attrs.field(default="subagent", init=False)
    usage: Usage | None = None


@attrs.define(kw_only=True)
class TurnReviewEntry(_Entry):
    """Hunks marked reviewed by ``changes/accept``; outside the tree."""

    run_id: str
    path: str
    hunk_ids: list[str]
    state: Literal["accepted"]
    type: Literal["turn_review"] = attrs.field(default="turn_review", init=False)


@attrs.define
class RewoundFileChange:
    """A file a rewind takes from its content ``before`` to ``after`` (blob names as in
    :class:`StoredFileChange`; none: the file does not exist)."""

    path: str
    before: str | None = None
    after: str | None = None


@attrs.define(kw_only=True)
class RewindEntry(_Entry):
    """``session/rewind`` began: the leaf moves from ``fromId`` to ``targetId`` and these files
    follow; written before any file is. Outside the tree."""

    from_id: str | None
    target_id: str | None
    files: list[RewoundFileChange]
    type: Literal["rewind"] = attrs.field(default="rewind", init=False)


@attrs.define(kw_only=True)
class RewindEndEntry(_Entry):
    """The rewind ``rewindId`` wrote its files; ``conflicts`` lists those it left alone. Outside the tree."""

    rewind_id: str
    conflicts: list[str]
    type: Literal["rewind_end"] = attrs.field(default="rewind_end", init=False)


@attrs.define
class UnknownEntry:
    """An entry of a type this build does not know, kept and passed on exactly as read."""

    data: JsonObject


SessionEntry = Union[  # noqa: UP007 (a named union the schema refers to)
    MessageEntry, ModelChangeEntry, ThinkingLevelChangeEntry, SessionInfoEntry, CompactionEntry,
    BranchSummaryEntry, LabelEntry, CustomEntry, CustomMessageEntry, QueueAddEntry, QueueDoneEntry,
    LeafEntry, SessionSettingsEntry, TurnChangesEntry, TurnReviewEntry, RewindEntry, RewindEndEntry, SubagentEntry,
    UnknownEntry,
]

ENTRY_CLASSES: tuple[type, ...] = SessionEntry.__args__[:-1]  # type: ignore[attr-defined]  # the known ones


def known_entry_types() -> list[str]:
    return sorted(str(attrs.fields_dict(cls)["type"].default) for cls in ENTRY_CLASSES)


StoredHeader = Annotated[dict[str, JsonValue], ShapedAs(SessionHeader)]
"""The header as read from the file, with the shape of :class:`SessionHeader`."""

StoredEntry = Annotated[dict[str, JsonValue], ShapedAs(SessionEntry)]
"""An entry as read from the file, with the shape of one of :data:`SessionEntry`."""
