"""Invariants 2 and 4 over a request: every tool call has exactly one tool result, placed
right after the assistant message that issued it, in call order.

One pass over the messages indexes calls and results by id, one more pass checks where
each assistant message's results sit, and (only when something must change) one pass
rebuilds the message list. Each pass is O(messages + parts); nothing is quadratic.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from gateway.config import GuardPolicy
from gateway.errors import GuardProblem, GuardViolation
from gateway.guards.common import GuardOutcome, Repair, call_location, result_location
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
)

MISSING_RESULT_TEXT = "no result was provided for this tool call"
"""Text of the error result added for a call without one (policy ``pairing: repair``)."""

_SortKey = tuple[int, int]


@dataclass(slots=True)
class _Call:
    msg: int  # index of the assistant message in request.messages
    part: int  # index of the part in that message's content
    order: int  # position among the message's (collapsed) calls
    call: ToolCallPart

    @property
    def loc(self) -> str:
        """Where the call sits (built only for a problem or a repair)."""
        return call_location(self.msg, self.part, self.call)


@dataclass
class _Scan:
    calls: dict[str, _Call]
    order: dict[int, list[str]]  # assistant message index -> its call ids, in call order
    replaced: dict[int, AssistantMessage]  # assistant messages with duplicates collapsed
    result_at: dict[str, int]  # call id -> index of its (first valid) result message
    problems: list[tuple[_SortKey, GuardProblem]]
    repairs: list[Repair]


def _same_call(a: ToolCallPart, b: ToolCallPart) -> bool:
    """Two representations of one call: same name, no conflicting signatures, and the same
    raw arguments or equal parsed JSON (parsing only happens for duplicates, which are rare)."""
    if a.name != b.name:
        return False
    if a.signature is not None and b.signature is not None and a.signature != b.signature:
        return False
    if a.raw_arguments == b.raw_arguments:
        return True
    try:
        return bool(orjson.loads(a.raw_arguments) == orjson.loads(b.raw_arguments))
    except orjson.JSONDecodeError:
        return False


def _scan_assistant(i: int, msg: AssistantMessage, scan: _Scan) -> None:
    ids: list[str] = []
    first_index: dict[str, int] = {}
    dropped: set[int] = set()
    merged: dict[int, ToolCallPart] = {}
    for j, part in enumerate(msg.content):
        if type(part) is not ToolCallPart:
            continue
        tid = part.id
        if tid in first_index:
            loc = call_location(i, j, part)
            first = scan.calls[tid]
            if _same_call(first.call, part):
                dropped.add(j)
                scan.repairs.append(
                    Repair(
                        "duplicate_tool_call",
                        tid,
                        loc,
                        f"tool call {tid} ({loc}) repeats the call at {first.loc}; "
                        "the identical copies were collapsed into one",
                    )
                )
                if first.call.signature is None and part.signature is not None:
                    kept = first.call.model_copy(
                        update={"signature": part.signature, "provenance": part.provenance}
                    )
                    merged[first_index[tid]] = kept
            else:
                scan.problems.append(
                    (
                        (i, j),
                        GuardProblem(
                            "duplicate_tool_call",
                            tid,
                            loc,
                            f"tool call id {tid} is used by two different calls ({first.loc} and {loc})",
                        ),
                    )
                )
            continue
        prev = scan.calls.get(tid)
        if prev is not None:
            loc = call_location(i, j, part)
            scan.problems.append(
                (
                    (i, j),
                    GuardProblem(
                        "duplicate_tool_call",
                        tid,
                        loc,
                        f"tool call id {tid} ({loc}) was already used by a call in another "
                        f"assistant message ({prev.loc})",
                    ),
                )
            )
            continue
        first_index[tid] = j
        scan.calls[tid] = _Call(i, j, len(ids), part)
        ids.append(tid)
    if ids:
        scan.order[i] = ids
    if dropped or merged:
        content = [merged.get(j, p) for j, p in enumerate(msg.content) if j not in dropped]
        scan.replaced[i] = msg.model_copy(update={"content": content})


def _scan(messages: list[Message]) -> _Scan:
    """Index calls and results; record pairing problems (all but orphan calls)."""
    scan = _Scan({}, {}, {}, {}, [], [])
    early: list[tuple[int, ToolResultMessage]] = []
    for i, msg in enumerate(messages):
        if type(msg) is AssistantMessage:
            _scan_assistant(i, msg, scan)
        elif type(msg) is ToolResultMessage:
            tid = msg.tool_call_id
            first_at = scan.result_at.get(tid)
            if first_at is not None:
                loc = result_location(i, msg)
                first_msg = messages[first_at]
                assert type(first_msg) is ToolResultMessage
                first_loc = result_location(first_at, first_msg)
                scan.problems.append(
                    (
                        (i, 0),
                        GuardProblem(
                            "duplicate_tool_result",
                            tid,
                            loc,
                            f"tool result {tid} ({loc}) is a second result for tool call {tid} "
                            f"(the first is at {first_loc})",
                        ),
                    )
                )
            elif tid in scan.calls:
                scan.result_at[tid] = i
            else:
                early.append((i, msg))
    for i, msg in early:
        tid = msg.tool_call_id
        loc = result_location(i, msg)
        later = scan.calls.get(tid)
        if later is None:
            problem = GuardProblem(
                "orphan_tool_result", tid, loc, f"tool result {tid} ({loc}) has no matching earlier tool call"
            )
        else:
            problem = GuardProblem(
                "result_before_call",
                tid,
                loc,
                f"tool result {tid} ({loc}) comes before its tool call ({later.loc}); "
                "it has no matching earlier tool call",
            )
        scan.problems.append(((i, 0), problem))
    return scan


def _check_orphan_calls(scan: _Scan, repair: bool) -> set[str]:
    """Calls without a result: problems, or (``repair``) ids that get an error result."""
    missing: set[str] = set()
    for tid, c in scan.calls.items():
        if tid in scan.result_at:
            continue
        if repair:
            missing.add(tid)
            scan.repairs.append(
                Repair(
                    "orphan_tool_call",
                    tid,
                    c.loc,
                    f"tool call {tid} ({c.loc}) had no tool result; an error result "
                    f"({MISSING_RESULT_TEXT!r}) was added after it",
                )
            )
        else:
            scan.problems.append(
                (
                    (c.msg, c.part),
                    GuardProblem(
                        "orphan_tool_call", tid, c.loc, f"tool call {tid} ({c.loc}) has no tool result"
                    ),
                )
            )
    return missing


def _ordering_issues(messages: list[Message], scan: _Scan) -> list[tuple[_SortKey, GuardProblem]]:
    """Results not directly after their assistant message, or not in call order there.

    The run of an assistant message is the maximal sequence of tool results right after it;
    runs never overlap, so this is linear.
    """
    issues: list[tuple[_SortKey, GuardProblem]] = []
    n = len(messages)
    for a, ids in scan.order.items():
        end = a + 1
        while end < n and type(messages[end]) is ToolResultMessage:
            end += 1
        highest = -1
        for p in range(a + 1, end):
            res = messages[p]
            assert type(res) is ToolResultMessage
            c = scan.calls.get(res.tool_call_id)
            if c is None or c.msg != a or scan.result_at.get(res.tool_call_id) != p:
                continue
            if c.order < highest:
                loc = result_location(p, res)
                issues.append(
                    (
                        (p, 0),
                        GuardProblem(
                            "result_out_of_order",
                            res.tool_call_id,
                            loc,
                            f"tool result {res.tool_call_id} ({loc}) comes after the result of a "
                            "later call of the same assistant message; results must follow call order",
                        ),
                    )
                )
            else:
                highest = c.order
        for tid in ids:
            p_or_none = scan.result_at.get(tid)
            if p_or_none is None or a < p_or_none < end:
                continue
            res = messages[p_or_none]
            assert type(res) is ToolResultMessage
            loc = result_location(p_or_none, res)
            owner_loc = messages[a].src or f"messages[{a}]"
            issues.append(
                (
                    (p_or_none, 0),
                    GuardProblem(
                        "result_not_adjacent",
                        tid,
                        loc,
                        f"tool result {tid} ({loc}) does not directly follow the assistant message "
                        f"that issued the call ({owner_loc}); other messages come between them",
                    ),
                )
            )
    return issues


def _missing_result(call: ToolCallPart) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id, content=[TextPart(text=MISSING_RESULT_TEXT)], is_error=True, name=call.name
    )


def _rebuild(messages: list[Message], scan: _Scan, missing: set[str]) -> list[Message]:
    """The canonical layout: every assistant message followed by its results in call order;
    every other message keeps its relative order (so anything that sat between a call and
    its result now follows the results; so does a deferred result whose call is not here)."""
    out: list[Message] = []
    for i, msg in enumerate(messages):
        if type(msg) is ToolResultMessage:
            if msg.tool_call_id not in scan.calls:  # deferred (otherwise we raised)
                out.append(msg)
            continue  # every other result is owned by a call here
        out.append(scan.replaced.get(i, msg))
        for tid in scan.order.get(i, ()):
            p = scan.result_at.get(tid)
            if p is not None:
                out.append(messages[p])
            elif tid in missing:
                out.append(_missing_result(scan.calls[tid].call))
    return out


def check_request(
    request: Request, policy: GuardPolicy, *, defer_unmatched_results: bool = False
) -> GuardOutcome:
    """Check pairing and ordering of tool calls and results (invariants 2 and 4).

    Returns a :class:`GuardOutcome` holding a new :class:`Request` when anything was repaired,
    else the input itself (models are never mutated) and the repairs made. Rules:

    * a call without a result (``orphan_tool_call``) is rejected, or with
      ``policy.pairing == "repair"`` gets an error result (``is_error=True``, text
      :data:`MISSING_RESULT_TEXT`) in its call-order place after its assistant message.
      This applies to every assistant message, including a final one that holds tool calls
      with nothing after it: such a request is treated as having orphan calls (a final
      assistant message WITHOUT tool calls, a prefill, is fine);
    * a result whose id no earlier call issued (``orphan_tool_result``, or
      ``result_before_call`` when a later call has that id) and a second result for one call
      (``duplicate_tool_result``) are always rejected — except, with
      ``defer_unmatched_results`` (a session-bound turn, whose history the client need not
      send), a result whose id no call in the request has: it is left where it is, for the
      session layer to pair against the session's history
      (:func:`gateway.sessions.turns.check_deferred_results`);
    * one id on two calls (``duplicate_tool_call``): identical copies (same name, same raw
      arguments or equal parsed arguments, no conflicting signatures) inside one assistant
      message are collapsed into the first (a repair); different calls, or calls in two
      assistant messages, are rejected;
    * results must directly follow their assistant message, contiguous, in call order.
      ``policy.ordering == "reorder"`` moves them there (repairs ``result_out_of_order`` /
      ``result_not_adjacent``; messages that sat in between, e.g. user text before a
      result or a later user turn before a late result, now follow the results);
      ``"strict"`` rejects them with the same codes.

    Raises :class:`gateway.errors.GuardViolation` listing EVERY problem found, in message
    order, each naming the tool-call id and its location (the edge's ``src``, e.g. the
    client's message and part index, else the internal ``messages[i]`` /
    ``messages[i].content[j]``). Cost: O(messages + parts).
    """
    messages = request.messages
    scan = _scan(messages)
    if defer_unmatched_results:
        scan.problems = [p for p in scan.problems if p[1].code != "orphan_tool_result"]
    missing = _check_orphan_calls(scan, policy.pairing == "repair")
    issues = _ordering_issues(messages, scan)
    if policy.ordering == "strict":
        scan.problems.extend(issues)
    if scan.problems:
        scan.problems.sort(key=lambda item: item[0])
        raise GuardViolation([p for _, p in scan.problems])
    for _, issue in issues:  # reorder
        scan.repairs.append(
            Repair(
                issue.code,
                issue.id,
                issue.location,
                f"{issue.message}: moved to directly after its assistant message, in call order",
            )
        )
    if not (issues or missing or scan.replaced):
        return GuardOutcome(request, scan.repairs)  # models are never changed: sharing is safe
    return GuardOutcome(
        request.model_copy(update={"messages": _rebuild(messages, scan, missing)}), scan.repairs
    )
