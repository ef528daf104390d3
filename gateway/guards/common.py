"""Records shared by the guards: what was repaired, and where things sit in a request."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gateway.schema import Request, ToolCallPart, ToolResultMessage


@dataclass(frozen=True)
class Repair:
    """One change a guard made to a request instead of rejecting it.

    ``code`` names the rule (``orphan_tool_call``: an error result was added;
    ``duplicate_tool_call``: two identical copies of a call were collapsed;
    ``result_out_of_order`` / ``result_not_adjacent``: a result was moved to follow its call
    in call order; ``foreign_thinking_stripped`` / ``foreign_thinking_as_text`` /
    ``foreign_signature_dropped`` / ``thinking_disabled`` / ``thinking_as_own_key``: thinking
    policy). ``id`` is the tool-call id concerned (None for thinking parts), ``location``
    where the item sat in the client's request, ``message`` a sentence for logs.
    """

    code: str
    id: str | None
    location: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        """The record as a plain dict (for logs and the transcript)."""
        return asdict(self)


@dataclass(frozen=True)
class GuardOutcome:
    """What :func:`check_request` returns: the request to send on (a new object; the input
    is never mutated, unchanged messages are shared with it and must be treated as
    immutable) and the repairs made, in the order they were found (empty when the request
    was already valid)."""

    request: Request
    repairs: list[Repair] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        """True when at least one repair was made."""
        return bool(self.repairs)


def call_location(msg_index: int, part_index: int, part: ToolCallPart) -> str:
    """Where a tool call sits: the client's location (``part.src``) when the edge recorded
    it, else the internal position ``messages[i].content[j]``."""
    return part.src or f"messages[{msg_index}].content[{part_index}]"


def result_location(msg_index: int, message: ToolResultMessage) -> str:
    """Where a tool result sits: ``message.src`` or the internal ``messages[i]``."""
    return message.src or f"messages[{msg_index}]"
