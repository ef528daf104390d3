"""Tool-call ids a client may send: refused when no upstream could take them as ids.

The rule is :func:`gateway.call_id_rule.unusable_call_id` (empty, whitespace or invisible
characters only, a control character, longer than 256 bytes of UTF-8; its module docstring says
what each upstream accepts and why). The same rule makes the truncation guard replace such an id
when an upstream sends it (:mod:`gateway.guards.upstream_ids`), so an id a client received is
never refused here. An id that breaks it is refused at the edge with HTTP 400 naming every place
it occurs, before anything goes upstream, whatever the pairing policy; an id that merely breaks
one upstream's rule is rewritten for that upstream and mapped back
(:mod:`gateway.providers.naming`).
"""

from __future__ import annotations

import orjson

from gateway.call_id_rule import MAX_CALL_ID_BYTES, plain_call_id, unusable_call_id
from gateway.errors import InvalidRequest


class BadIds:
    """The tool-call ids of one request that no upstream accepts, noted while an edge parses
    it (``problems``: ``(location, id, reason)`` in request order) and refused together after
    the messages are read (:func:`refusal`). Each edge's parse state derives from it."""

    __slots__ = ("bad_ids",)

    def __init__(self) -> None:
        self.bad_ids: list[tuple[str, str, str]] = []

    def check_id(self, call_id: str, location: str) -> None:
        """Note ``call_id`` (at ``location``) when no upstream accepts it (callers test
        :func:`plain_call_id` first: the common id needs no call)."""
        reason = unusable_call_id(call_id)
        if reason is not None:
            self.bad_ids.append((location, call_id, reason))


def refusal(problems: list[tuple[str, str, str]]) -> InvalidRequest:
    """The HTTP 400 for ``problems``: ``(location, id, reason)`` in request order, e.g.
    ``("messages[1].tool_calls[0].id", "", "is empty")``. The message names every location;
    ``param`` is the first; ``details`` lists ``{"location", "id", "reason"}`` (an id longer
    than 64 characters is shown by its first 64)."""
    parts = []
    details = []
    for location, value, reason in problems:
        shown = value if len(value) <= 64 else value[:64] + "..."
        parts.append(f"{location}: the tool-call id {orjson.dumps(shown).decode()} {reason}")
        details.append({"location": location, "id": shown, "reason": reason})
    message = (
        "; ".join(parts) + "; no upstream accepts such a tool-call id (send the id the call was made with)"
    )
    return InvalidRequest(message, param=problems[0][0], details=details)


__all__ = ["MAX_CALL_ID_BYTES", "BadIds", "plain_call_id", "refusal", "unusable_call_id"]
