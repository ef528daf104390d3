"""Session entries: the append-only log behind invariant 5.

A session is a tree of entries (``id``, ``parent_id``) with a leaf pointer. Every entry has a
``type`` and an internal-schema ``payload``:

* ``message``        — ``{"message": <gateway.schema Message>}``
* ``compaction``     — :class:`CompactionPayload` (summary of what fell out of the context)
* ``model_change``   — :class:`ModelChangePayload`
* ``branch_summary`` — :class:`BranchSummaryPayload` (what a left branch did)
* ``label``          — :class:`LabelPayload` (a name for another entry)
* ``thread``         — :class:`ThreadPayload` (what an Anthropic message thread keeps from
  its create: system prompt, tools; :mod:`gateway.sessions.threads`)

Entries are never updated or deleted (the store's database enforces it with triggers); the
only mutable thing about a session is its leaf pointer. ``created_at`` is Unix time in seconds.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from gateway.schema import Message, SystemMessage, ToolDefinition

EntryType = Literal["message", "compaction", "model_change", "branch_summary", "label", "thread"]
ENTRY_TYPES: tuple[str, ...] = ("message", "compaction", "model_change", "branch_summary", "label", "thread")

_MESSAGE = TypeAdapter(Message)


class MessagePayload(BaseModel):
    """One conversation message in the internal schema."""

    model_config = ConfigDict(extra="forbid")

    message: Message


class CompactionPayload(BaseModel):
    """What replaced the part of the history that no longer fits.

    ``summary`` is the structured summary text; ``first_kept_entry_id`` the first entry on the
    path (before this one) still sent verbatim, or None when nothing before it is kept;
    ``tokens_before``/``tokens_after`` are estimated context sizes (tokens) of the view before
    and after compaction; ``deployment`` the deployment that wrote the summary; ``reason`` is
    ``window``, ``request`` or ``overflow``.
    """

    model_config = ConfigDict(extra="forbid")

    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    deployment: str | None = None
    reason: str = "request"


class ModelChangePayload(BaseModel):
    """The session moved to another deployment / model."""

    model_config = ConfigDict(extra="forbid")

    deployment: str | None = None
    model: str | None = None


class BranchSummaryPayload(BaseModel):
    """Summary of a branch that was left (``from_entry_id`` is the leaf it summarises)."""

    model_config = ConfigDict(extra="forbid")

    summary: str
    from_entry_id: str | None = None


class LabelPayload(BaseModel):
    """A label on entry ``target_id``; ``label`` None clears an earlier one."""

    model_config = ConfigDict(extra="forbid")

    target_id: str
    label: str | None = None


class ThreadPayload(BaseModel):
    """The create-only fields of an Anthropic message thread, as its create sent them: the
    top-level ``system`` prompt, the ``tools`` and the MCP servers of its ``mcp`` tool entries.
    A continuation of the thread sends none of them; they come from here."""

    model_config = ConfigDict(extra="forbid")

    system: list[SystemMessage] = Field(default_factory=list)
    tools: list[ToolDefinition] = Field(default_factory=list)
    mcp_servers: list[str] = Field(default_factory=list)


PAYLOADS: dict[str, type[BaseModel]] = {
    "message": MessagePayload,
    "compaction": CompactionPayload,
    "model_change": ModelChangePayload,
    "branch_summary": BranchSummaryPayload,
    "label": LabelPayload,
    "thread": ThreadPayload,
}


def validate_payload(entry_type: str, payload: Any) -> BaseModel:
    """Validate ``payload`` (a dict or model) for ``entry_type``.

    Raises ``ValueError`` for an unknown type and pydantic ``ValidationError`` for a bad payload.
    """
    model = PAYLOADS.get(entry_type)
    if model is None:
        raise ValueError(f"unknown entry type {entry_type!r} (known: {', '.join(ENTRY_TYPES)})")
    if isinstance(payload, model):
        return payload
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(mode="json")
    return model.model_validate(payload)


def encode_payload(payload: BaseModel) -> str:
    """The stored JSON text of a payload: internal schema, defaults dropped, keys sorted."""
    data = payload.model_dump(mode="json", exclude_defaults=False)
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()


class Entry(BaseModel):
    """One stored entry. ``seq`` is the store's insertion order (global, increasing)."""

    model_config = ConfigDict(frozen=True)

    id: str
    session_id: str
    parent_id: str | None
    type: EntryType
    created_at: float
    payload: dict[str, Any] = Field(default_factory=dict)
    seq: int = 0

    def message(self) -> Message | None:
        """The message of a ``message`` entry, else None."""
        if self.type != "message":
            return None
        return _MESSAGE.validate_python(self.payload["message"])

    def compaction(self) -> CompactionPayload | None:
        """The payload of a ``compaction`` entry, else None."""
        return CompactionPayload.model_validate(self.payload) if self.type == "compaction" else None

    def thread(self) -> ThreadPayload | None:
        """The payload of a ``thread`` entry, else None."""
        return ThreadPayload.model_validate(self.payload) if self.type == "thread" else None

    def public(self) -> dict[str, Any]:
        """The entry as the HTTP API and CLI show it."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "parent_id": self.parent_id,
            "type": self.type,
            "created_at": self.created_at,
            "payload": self.payload,
        }


class Owner(BaseModel):
    """Who a session belongs to: the virtual key (``key_id``) and its team (``team_id``) of the
    caller that created it; both None for an anonymous caller (:mod:`gateway.sessions.owners`)."""

    model_config = ConfigDict(frozen=True)

    key_id: str | None = None
    team_id: str | None = None


ANONYMOUS = Owner()
"""The owner of a session an anonymous caller created."""


class SessionInfo(BaseModel):
    """A session row: its leaf pointer, for a fork where it came from, and who owns it
    (``owner_key``, ``owner_team``: the virtual key and team of the caller that created it,
    None for an anonymous caller; :mod:`gateway.sessions.owners`)."""

    model_config = ConfigDict(frozen=True)

    id: str
    created_at: float
    leaf_id: str | None = None
    forked_from_session: str | None = None
    forked_from_entry: str | None = None
    title: str | None = None
    entry_count: int = 0
    owner_key: str | None = None
    owner_team: str | None = None

    def public(self) -> dict[str, Any]:
        """The session as the HTTP API and CLI show it."""
        return self.model_dump(mode="json")


__all__ = [
    "ANONYMOUS",
    "ENTRY_TYPES",
    "PAYLOADS",
    "BranchSummaryPayload",
    "CompactionPayload",
    "Entry",
    "EntryType",
    "LabelPayload",
    "MessagePayload",
    "ModelChangePayload",
    "Owner",
    "SessionInfo",
    "ThreadPayload",
    "encode_payload",
    "validate_payload",
]
