"""Invariant 3: arguments not fully received are never executed.

Three signals say whether an answer's tool calls were received whole, and all three are read:

* the **stop reason**: ``length`` (the upstream stopped for its output limit);
* the **output usage against the request's output budget**: ``usage.output_tokens`` at or above
  the ``max_output_tokens`` the provider sent (:func:`budget_reached`) means the budget ran out,
  even when the upstream reports ``tool_use`` / ``tool_calls`` / ``STOP`` (OpenAI-compatible
  servers and mock function calling do; arguments can then be complete JSON and still cut, a
  path or a command ending early). Output usage and budget count the same tokens on each API:
  OpenAI ``max_completion_tokens`` bounds "visible output tokens and reasoning tokens" as
  ``completion_tokens`` counts them; Anthropic ``max_tokens`` bounds thinking and text as
  ``output_tokens`` does; Gemini ``maxOutputTokens`` caps thoughts and candidates combined
  (googleapis/python-genai#2062, #782), and the adapter reports both as output;
* **argument completeness**: the raw arguments are one complete JSON object, nesting at most
  :data:`MAX_ARGUMENT_DEPTH` levels (deeper arguments could be neither stored nor rendered to
  the client, and no real tool takes them: an upstream that sends them is judged, not trusted).

A tool call is *withheld* (removed from the message, listed in ``withheld_tool_calls``,
never forwarded as executable) when the upstream stopped for length (or its budget was reached)
while the message holds tool calls, or when the call's raw arguments are not one complete JSON
object. Arguments are never repaired: no bracket or quote is ever closed.

When the budget was reached every tool call of the answer is withheld, whatever the stop
reason, and says so in its reason (:func:`budget_reason`: used and allowed tokens). The client
is told the cause it can act on: the stop reason becomes ``length`` (a stop, tool use or error
stop alike, for text answers too; ``content_filter`` and ``aborted`` are kept, a larger budget
would not cure them). An unknown budget, an upstream that reported no usage, or an estimated
usage decides nothing.

Stop reason after withholding (a decision, documented here):

* some calls remain executable: the stop reason is kept;
* every call was withheld: ``length`` stays ``length`` (also ``content_filter``, ``error``
  and ``aborted`` are kept); a normal stop (the upstream said it finished, or finished to
  call tools) becomes ``error``, because the upstream claimed complete calls but sent
  arguments that are not complete JSON — claiming ``length`` would be untrue, and keeping
  the tool stop would announce calls that are not there.

An empty or whitespace-only raw argument string counts as "no arguments" (complete), since
some upstreams stream no argument fragment at all for a tool without parameters.

Every answer passes here, so this is also where a tool-call id the upstream sent and the edge
would refuse from a client is replaced by a safe one, before anything else is judged
(:mod:`gateway.guards.upstream_ids`): kept and withheld calls alike, the same ids streamed or
whole, each replacement listed in ``replaced_call_ids``.
"""

from __future__ import annotations

from collections.abc import KeysView, Sequence
from dataclasses import dataclass, field

import orjson

from gateway.guards.upstream_ids import replace_unusable
from gateway.json_depth import may_exceed, nesting_exceeds
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    ReplacedCallId,
    Response,
    StopReason,
    StreamError,
    StreamEvent,
    ToolCallPart,
    Usage,
    WithheldToolCall,
    evolve,
)

LENGTH_REASON = "upstream stopped for length while emitting this tool call"
INCOMPLETE_REASON = "arguments are not complete JSON"
NOT_OBJECT_REASON = "arguments must be a JSON object"
"""Prefix of the reason for arguments that are complete JSON but not an object
(``"arguments must be a JSON object, got array"``)."""
_JSON_KINDS: dict[type, str] = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
MAX_ARGUMENT_DEPTH = 64
"""Levels of objects and arrays a call's arguments may nest (the arguments object is level 1):
the same default as a client request's ``server.max_json_depth``."""
DEEP_REASON = f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels of objects and arrays"
BUDGET_REASON = "the output budget (max output tokens) was used up while emitting this tool call"
"""Prefix of :func:`budget_reason`."""

_KEEP_WHEN_ALL_WITHHELD: frozenset[str] = frozenset({"length", "content_filter", "error", "aborted"})
_KEPT_AT_BUDGET: frozenset[str] = frozenset({"content_filter", "aborted", "length"})


def budget_reached(usage: Usage, max_output_tokens: int | None) -> bool:
    """True when ``usage`` (as the upstream reported it, not estimated) shows the output budget
    ``max_output_tokens`` (tokens, as sent upstream) used up: ``output_tokens >= budget``."""
    return (
        max_output_tokens is not None
        and max_output_tokens > 0
        and usage.output_tokens >= max_output_tokens
        and not usage.estimated
    )


def budget_reason(used: int, budget: int) -> str:
    """The withheld reason of a call whose answer used up the output budget:
    ``BUDGET_REASON + " (<used> of <budget> output tokens)"``."""
    return f"{BUDGET_REASON} ({used} of {budget} output tokens)"


def is_length_reason(reason: str) -> bool:
    """True when a withheld call's ``reason`` says the output limit cut it (stop reason
    ``length`` or the budget used up), not that its JSON was incomplete."""
    return reason == LENGTH_REASON or reason.startswith(BUDGET_REASON)


def judged_stop(stop: StopReason, usage: Usage, max_output_tokens: int | None) -> StopReason:
    """The stop reason after reading the usage: ``length`` when the budget was reached (see
    the module docstring for the reasons that are kept), else ``stop``."""
    if stop in _KEPT_AT_BUDGET or not budget_reached(usage, max_output_tokens):
        return stop
    return "length"


def arguments_complete(raw: str) -> bool:
    """True when ``raw`` is exactly one complete JSON object, or empty/whitespace (no
    arguments). A JSON array, string or number is not a complete arguments object."""
    return _arguments_problem(raw) is None


def _arguments_problem(raw: str) -> str | None:
    """Why ``raw`` cannot be a call's arguments (:data:`INCOMPLETE_REASON`, :data:`NOT_OBJECT_REASON`
    naming the JSON type it is, :data:`DEEP_REASON`), or None when it is one complete JSON object
    (or empty: no arguments)."""
    if not raw.strip():
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return INCOMPLETE_REASON
    if type(value) is not dict:
        return f"{NOT_OBJECT_REASON}, got {_JSON_KINDS.get(type(value), 'null')}"
    if may_exceed(raw, MAX_ARGUMENT_DEPTH) and nesting_exceeds(value, MAX_ARGUMENT_DEPTH):
        return DEEP_REASON
    return None


def withhold_reason(stop: StopReason, raw_arguments: str, budget_note: str | None = None) -> str | None:
    """Why a call with ``raw_arguments`` in a message that ended with stop reason ``stop``
    must be withheld: ``budget_note`` (given when the output budget was reached and the
    upstream did not say ``length``: :func:`budget_reason`), :data:`LENGTH_REASON`,
    :data:`INCOMPLETE_REASON`, :data:`NOT_OBJECT_REASON` (with the JSON type) or
    :data:`DEEP_REASON`; None to release it."""
    if budget_note is not None:
        return budget_note
    if stop == "length":
        return LENGTH_REASON
    return _arguments_problem(raw_arguments)


def stop_after_withholding(stop: StopReason, kept: int, withheld: int) -> StopReason:
    """The stop reason the client sees once ``withheld`` calls were removed and ``kept``
    remain (see the module docstring for the rule)."""
    if not withheld or kept or stop in _KEEP_WHEN_ALL_WITHHELD:
        return stop
    return "error"


def _budget_note(stop: StopReason, usage: Usage, budget: int | None) -> str | None:
    """The withheld reason for the budget when it was reached and the upstream's own stop
    reason (``stop``) did not already say ``length``."""
    if stop != "length" and budget is not None and budget_reached(usage, budget):
        return budget_reason(usage.output_tokens, budget)
    return None


def _with_usable_ids(response: Response, deployment: str | None) -> Response:
    """``response`` with the tool-call ids the edge would refuse replaced in its calls and its
    withheld calls (:func:`gateway.guards.upstream_ids.replace_unusable`), each replacement
    listed in ``replaced_call_ids``; ``response`` itself when every id is usable."""
    content = response.message.content
    prior = response.withheld_tool_calls
    ids = [p.id for p in content if type(p) is ToolCallPart]
    replaced = replace_unusable([*ids, *(w.id for w in prior)], deployment)
    if replaced is None:
        return response
    new_ids, notes = replaced
    fresh = iter(new_ids)
    parts = []
    for p in content:
        if type(p) is ToolCallPart and (new := next(fresh)) != p.id:
            p = evolve(p, id=new)
        parts.append(p)
    return evolve(
        response,
        message=evolve(response.message, content=parts),
        withheld_tool_calls=[w if (new := next(fresh)) == w.id else evolve(w, id=new) for w in prior],
        replaced_call_ids=[*response.replaced_call_ids, *notes],
    )


def check_truncation(
    response: Response, max_output_tokens: int | None = None, *, deployment: str | None = None
) -> Response:
    """Withhold every tool call of ``response`` that must not be executed (invariant 3), reading
    the stop reason, the output usage against ``max_output_tokens`` (the budget sent upstream,
    tokens; None when unknown) and argument completeness (module docstring); first replace each
    tool-call id the edge would refuse (:mod:`gateway.guards.upstream_ids`; ``deployment``, the
    deployment's name, is named in the log line of each replacement).

    Returns ``response`` itself when nothing changes, else a new Response whose message lacks
    the withheld calls (other parts keep their order), whose ``withheld_tool_calls`` lists them
    (after any already listed) with id, name, raw arguments byte-exact and reason, whose
    ``replaced_call_ids`` lists the replaced ids, and whose stop reason is
    :func:`judged_stop`'s, then :func:`stop_after_withholding`'s. Never raises.
    """
    if response.withheld_tool_calls or any(type(p) is ToolCallPart for p in response.message.content):
        response = _with_usable_ids(response, deployment)
    message = response.message
    stop = response.stop_reason
    note = None
    if max_output_tokens is not None and response.usage.output_tokens >= max_output_tokens:
        note = _budget_note(stop, response.usage, max_output_tokens)
        stop = judged_stop(stop, response.usage, max_output_tokens)
    if not any(type(p) is ToolCallPart for p in message.content):  # exact class: no ABCMeta call
        return (
            response if stop == response.stop_reason else response.model_copy(update=dict(stop_reason=stop))
        )
    content = []
    withheld: list[WithheldToolCall] = []
    kept = 0
    for part in message.content:
        if type(part) is ToolCallPart:
            reason = withhold_reason(stop, part.raw_arguments, note)
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
        return (
            response if stop == response.stop_reason else response.model_copy(update=dict(stop_reason=stop))
        )
    # keyword form: schema field names, written without quotes (see tests/gateway/test_layering.py)
    return response.model_copy(
        update=dict(
            message=message.model_copy(update={"content": content}),
            stop_reason=stop_after_withholding(stop, kept, len(withheld)),
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

    ``max_output_tokens`` is the output budget sent upstream (tokens; None when unknown): the
    final usage of the :class:`MessageEnd` is judged against it as :func:`check_truncation`
    judges a whole answer. Tool-call ids the edge would refuse are replaced in the released
    :class:`PartStart` events and the withheld calls, and listed in the end's
    ``replaced_call_ids``, as :func:`check_truncation` replaces them (``deployment``: the
    deployment's name, for the log line of each replacement).
    """

    def __init__(self, max_output_tokens: int | None = None, *, deployment: str | None = None) -> None:
        self._budget = max_output_tokens
        self._deployment = deployment
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
        stop = end.stop_reason
        note = None
        if self._budget is not None and end.usage.output_tokens >= self._budget:  # else nothing to judge
            note = _budget_note(stop, end.usage, self._budget)
            stop = judged_stop(stop, end.usage, self._budget)
            if stop != end.stop_reason:
                end = end.model_copy(update=dict(stop_reason=stop))
        end, replaced = self._use_usable_ids(end)
        withheld: list[WithheldToolCall] = []
        blocked: set[int] = set()
        for index in sorted(self._calls):
            call = self._calls[index]
            raw = "".join(call.fragments)
            reason = withhold_reason(stop, raw, note)
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
        if replaced:
            end = evolve(end, replaced_call_ids=[*end.replaced_call_ids, *replaced])
        out.append(end)
        return out

    def _use_usable_ids(self, end: MessageEnd) -> tuple[MessageEnd, list[ReplacedCallId]]:
        """Replace the ids the edge would refuse of the held calls (their :class:`PartStart`
        events and :class:`_HeldCall`, in index order) and of the calls ``end`` already lists
        as withheld, as :func:`_with_usable_ids` replaces a whole answer's; returns ``end``
        (with those withheld calls' new ids) and the replacements made."""
        order = sorted(self._calls)
        prior = end.withheld_tool_calls
        replaced = replace_unusable(
            [*(self._calls[i].id for i in order), *(w.id for w in prior)], self._deployment
        )
        if replaced is None:
            return end, []
        new_ids, notes = replaced
        changed: dict[int, str] = {}
        for index, new in zip(order, new_ids, strict=False):
            if new != self._calls[index].id:
                self._calls[index].id = changed[index] = new
        self._held = [
            evolve(e, id=changed[e.index]) if type(e) is PartStart and e.index in changed else e
            for e in self._held
        ]
        if prior:
            fresh = new_ids[len(order) :]
            end = evolve(
                end,
                withheld_tool_calls=[
                    w if new == w.id else evolve(w, id=new) for w, new in zip(prior, fresh, strict=True)
                ],
            )
        return end, notes

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
