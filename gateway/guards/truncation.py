"""Invariant 3: arguments not fully received are never executed.

A tool call is *withheld* (removed from the message, listed in ``withheld_tool_calls``,
never forwarded as executable) when the upstream stopped for length while the message holds
tool calls, or when the call's raw arguments are not one complete JSON object. Arguments are
never repaired: no bracket or quote is ever closed.

Stop reason after withholding (a decision, documented here):

* some calls remain executable: the stop reason is kept;
* every call was withheld: ``length`` stays ``length`` (also ``content_filter``, ``error``
  and ``aborted`` are kept); a normal stop (the upstream said it finished, or finished to
  call tools) becomes ``error``, because the upstream claimed complete calls but sent
  arguments that are not complete JSON — claiming ``length`` would be untrue, and keeping
  the tool stop would announce calls that are not there.

An empty or whitespace-only raw argument string counts as "no arguments" (complete), since
some upstreams stream no argument fragment at all for a tool without parameters.
"""

from __future__ import annotations

from collections.abc import KeysView, Sequence
from dataclasses import dataclass, field

import orjson

from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Response,
    StopReason,
    StreamError,
    StreamEvent,
    ToolCallPart,
    WithheldToolCall,
)

LENGTH_REASON = "upstream stopped for length while emitting this tool call"
INCOMPLETE_REASON = "arguments are not complete JSON"

_KEEP_WHEN_ALL_WITHHELD: frozenset[str] = frozenset({"length", "content_filter", "error", "aborted"})


def arguments_complete(raw: str) -> bool:
    """True when ``raw`` is exactly one complete JSON object, or empty/whitespace (no
    arguments). A JSON array, string or number is not a complete arguments object."""
    if not raw.strip():
        return True
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict)


def withhold_reason(stop: StopReason, raw_arguments: str) -> str | None:
    """Why a call with ``raw_arguments`` in a message that ended with stop reason ``stop``
    must be withheld (:data:`LENGTH_REASON` / :data:`INCOMPLETE_REASON`), or None to
    release it."""
    if stop == "length":
        return LENGTH_REASON
    if not arguments_complete(raw_arguments):
        return INCOMPLETE_REASON
    return None


def stop_after_withholding(stop: StopReason, kept: int, withheld: int) -> StopReason:
    """The stop reason the client sees once ``withheld`` calls were removed and ``kept``
    remain (see the module docstring for the rule)."""
    if not withheld or kept or stop in _KEEP_WHEN_ALL_WITHHELD:
        return stop
    return "error"


def check_truncation(response: Response) -> Response:
    """Withhold every tool call of ``response`` that must not be executed (invariant 3).

    Returns ``response`` itself when nothing is withheld, else a new Response whose message
    lacks the withheld calls (other parts keep their order), whose ``withheld_tool_calls``
    lists them (after any already listed) with id, name, raw arguments byte-exact and reason,
    and whose stop reason follows :func:`stop_after_withholding`. Never raises.
    """
    message = response.message
    if not any(type(p) is ToolCallPart for p in message.content):  # exact class: no ABCMeta call
        return response
    content = []
    withheld: list[WithheldToolCall] = []
    kept = 0
    for part in message.content:
        if type(part) is ToolCallPart:
            reason = withhold_reason(response.stop_reason, part.raw_arguments)
            if reason is not None:
                withheld.append(
                    WithheldToolCall(
                        id=part.id, name=part.name, raw_arguments=part.raw_arguments, reason=reason
                    )
                )
                continue
            kept += 1
        content.append(part)
    if not withheld:
        return response
    # keyword form: schema field names, written without quotes (see tests/gateway/test_layering.py)
    return response.model_copy(
        update=dict(
            message=message.model_copy(update={"content": content}),
            stop_reason=stop_after_withholding(response.stop_reason, kept, len(withheld)),
            withheld_tool_calls=[*response.withheld_tool_calls, *withheld],
        )
    )


@dataclass
class _HeldCall:
    id: str
    name: str
    fragments: list[str] = field(default_factory=list)


class StreamTruncationGuard:
    """The streaming form of :func:`check_truncation`, for one upstream stream.

    :meth:`feed` takes internal stream events in order and returns the events to forward
    now. Message start, text, thinking and redacted-thinking events pass at once. Every
    event of a tool-call part (its start, deltas and end) is held until the message end:
    then the calls that may be executed are released in their original order just before
    the (possibly rewritten) :class:`MessageEnd`, and the others are dropped and listed in
    ``MessageEnd.withheld_tool_calls`` with the stop reason of
    :func:`stop_after_withholding` — exactly what :func:`check_truncation` decides for the
    collected response. On a :class:`StreamError` the held calls are dropped and the error
    passes. Events after the end pass unchanged.

    Part indices are not renumbered: a withheld call leaves a gap, and released calls come
    after text that followed them; consumers order parts by ``index`` (as
    :func:`gateway.invariants.collect` does) and the edges map indices to their dialect.
    """

    def __init__(self) -> None:
        self._held: list[PartStart | PartDelta | PartEnd] = []
        self._calls: dict[int, _HeldCall] = {}
        self._held_bytes = 0
        self._done = False

    @property
    def held_bytes(self) -> int:
        """UTF-8 bytes of tool-call argument fragments currently held (observability)."""
        return self._held_bytes

    @property
    def holding(self) -> bool:
        """True while some tool-call event is held."""
        return bool(self._held)

    @property
    def held_parts(self) -> KeysView[int]:
        """The indexes of the parts whose events are being held (tool calls before the message
        end): a live view, valid for the guard's lifetime. A :class:`PartDelta` of a part not
        in it passes :meth:`feed` unchanged and without any effect on the guard, so a caller
        may forward it without feeding it."""
        return self._calls.keys()

    def feed(self, event: StreamEvent) -> list[StreamEvent]:
        """Take one event; return the events to forward now, in order (possibly none)."""
        if self._done or isinstance(event, MessageStart):
            return [event]
        if isinstance(event, PartStart):
            if event.kind != "tool_call":
                return [event]
            self._calls[event.index] = _HeldCall(event.id or "", event.name or "")
            self._held.append(event)
            return []
        if isinstance(event, PartDelta | PartEnd):
            call = self._calls.get(event.index)
            if call is None:
                return [event]
            if isinstance(event, PartDelta) and event.arguments:
                call.fragments.append(event.arguments)
                self._held_bytes += len(event.arguments.encode("utf-8"))
            self._held.append(event)
            return []
        self._done = True
        if isinstance(event, MessageEnd):
            return self._release(event)
        assert isinstance(event, StreamError)
        self._clear()
        return [event]

    def _release(self, end: MessageEnd) -> list[StreamEvent]:
        withheld: list[WithheldToolCall] = []
        blocked: set[int] = set()
        for index in sorted(self._calls):
            call = self._calls[index]
            raw = "".join(call.fragments)
            reason = withhold_reason(end.stop_reason, raw)
            if reason is not None:
                blocked.add(index)
                withheld.append(
                    WithheldToolCall(id=call.id, name=call.name, raw_arguments=raw, reason=reason)
                )
        out: list[StreamEvent] = [e for e in self._held if e.index not in blocked]
        kept = len(self._calls) - len(blocked)
        self._clear()
        if withheld:
            end = end.model_copy(
                update=dict(
                    stop_reason=stop_after_withholding(end.stop_reason, kept, len(withheld)),
                    withheld_tool_calls=[*end.withheld_tool_calls, *withheld],
                )
            )
        out.append(end)
        return out

    def _clear(self) -> None:
        self._held = []
        self._calls.clear()  # in place: held_parts stays a view of it
        self._held_bytes = 0


def guard_stream(events: Sequence[StreamEvent]) -> list[StreamEvent]:
    """Run a whole (already received) event sequence through a fresh
    :class:`StreamTruncationGuard`; the forwarded events, in order."""
    guard = StreamTruncationGuard()
    out: list[StreamEvent] = []
    for event in events:
        out.extend(guard.feed(event))
    return out
