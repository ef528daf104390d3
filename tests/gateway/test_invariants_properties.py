"""Property tests for the guards: pairing damage is named exactly, repaired or reordered
requests are canonical, reorder is idempotent, valid requests pass unchanged, and the stream
truncation guard agrees with the non-stream path."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.config import GuardPolicy
from gateway.errors import GuardViolation
from gateway.invariants import MISSING_RESULT_TEXT, check_request, check_truncation, collect, guard_stream
from gateway.schema import (
    AssistantMessage,
    Message,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    StopReason,
    StreamEvent,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

PAIRING_CODES = {
    "orphan_tool_call",
    "orphan_tool_result",
    "duplicate_tool_result",
    "duplicate_tool_call",
    "result_before_call",
}
ORDERING_CODES = {"result_out_of_order", "result_not_adjacent"}
REORDER = GuardPolicy()
STRICT = GuardPolicy(ordering="strict")
REPAIR = GuardPolicy(pairing="repair")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _result(cid: str) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=cid, content=[TextPart(text=f"r-{cid}")])


@st.composite
def conversations(draw: Any) -> list[Message]:
    """A valid conversation: user turns, tool loops with 1-3 parallel calls answered in call
    order right after their assistant message, optional final answers."""
    msgs: list[Message] = []
    counter = 0
    if draw(st.booleans()):
        msgs.append(SystemMessage(content=[TextPart(text="sys")]))
    for t in range(draw(st.integers(1, 5))):
        msgs.append(UserMessage(content=[TextPart(text=f"u{t}")]))
        for _ in range(draw(st.integers(0, 2))):
            ids = [f"c{counter + j}" for j in range(draw(st.integers(1, 3)))]
            counter += len(ids)
            parts: list[Any] = [TextPart(text="thinking aloud")] if draw(st.booleans()) else []
            parts += [
                ToolCallPart(
                    id=i, name="f", arguments={"n": i}, raw_arguments=orjson.dumps({"n": i}).decode()
                )
                for i in ids
            ]
            msgs.append(AssistantMessage(content=parts))
            msgs.extend(_result(i) for i in ids)
        if draw(st.booleans()):
            msgs.append(AssistantMessage(content=[TextPart(text="answer")]))
    return msgs


def _call_ids(msgs: list[Message]) -> list[str]:
    return [c.id for m in msgs if isinstance(m, AssistantMessage) for c in m.tool_calls]


def _owner(msgs: list[Message], cid: str) -> int:
    return next(
        i
        for i, m in enumerate(msgs)
        if isinstance(m, AssistantMessage) and any(c.id == cid for c in m.tool_calls)
    )


def _result_at(msgs: list[Message], cid: str) -> int:
    return next(i for i, m in enumerate(msgs) if isinstance(m, ToolResultMessage) and m.tool_call_id == cid)


def shuffle_results(draw: Any, msgs: list[Message]) -> list[Message]:
    """Ordering-only damage: move some results later (past other results or later turns)."""
    msgs = list(msgs)
    for _ in range(draw(st.integers(0, 3))):
        ids = _call_ids(msgs)
        if not ids:
            break
        cid = draw(st.sampled_from(ids))
        p = _result_at(msgs, cid)
        res = msgs.pop(p)
        msgs.insert(draw(st.integers(p, len(msgs))), res)
    return msgs


def damage(draw: Any, msgs: list[Message]) -> tuple[list[Message], dict[str, str]]:
    """Pairing damage on distinct ids; returns the damaged conversation and id -> kind."""
    msgs = list(msgs)
    damaged: dict[str, str] = {}
    for n in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["drop", "dup", "early", "orphan"]))
        free = [c for c in _call_ids(msgs) if c not in damaged]
        if kind == "orphan" or not free:
            ghost = f"ghost{n}"
            msgs.insert(draw(st.integers(0, len(msgs))), _result(ghost))
            damaged[ghost] = "orphan"
            continue
        cid = draw(st.sampled_from(free))
        damaged[cid] = kind
        p = _result_at(msgs, cid)
        if kind == "drop":
            del msgs[p]
        elif kind == "dup":
            msgs.insert(draw(st.integers(_owner(msgs, cid) + 1, len(msgs))), _result(cid))
        else:  # early: the result moves before its call
            res = msgs.pop(p)
            msgs.insert(draw(st.integers(0, _owner(msgs, cid))), res)
    return msgs, damaged


def assert_canonical(msgs: list[Message]) -> None:
    """Every call has exactly one result, right after its assistant message, in call order,
    and no result stands anywhere else; each result carries its own call's output."""
    i = 0
    while i < len(msgs):
        m = msgs[i]
        assert not isinstance(m, ToolResultMessage), f"stray result at {i}"
        i += 1
        if isinstance(m, AssistantMessage) and m.tool_calls:
            ids = [c.id for c in m.tool_calls]
            assert len(set(ids)) == len(ids)
            run = msgs[i : i + len(ids)]
            assert all(isinstance(r, ToolResultMessage) for r in run)
            assert [r.tool_call_id for r in run] == ids  # type: ignore[union-attr]
            for r in run:
                assert isinstance(r, ToolResultMessage)
                assert r.content[0].text in (f"r-{r.tool_call_id}", MISSING_RESULT_TEXT)  # type: ignore[union-attr]
            i += len(ids)


def _req(msgs: list[Message]) -> Request:
    return Request(model="m", messages=msgs)


@SETTINGS
@given(conversations())
def test_valid_conversation_passes_unchanged_under_every_policy(msgs: list[Message]) -> None:
    for policy in (REORDER, STRICT, REPAIR, GuardPolicy(pairing="repair", ordering="strict")):
        outcome = check_request(_req(msgs), policy)
        assert outcome.request.messages == msgs and outcome.repairs == []


@SETTINGS
@given(conversations(), st.data())
def test_reorder_restores_call_order_and_is_idempotent(msgs: list[Message], data: st.DataObject) -> None:
    shuffled = shuffle_results(data.draw, msgs)
    outcome = check_request(_req(shuffled), REORDER)
    assert outcome.request.messages == msgs
    assert_canonical(outcome.request.messages)
    assert all(r.code in ORDERING_CODES for r in outcome.repairs)
    again = check_request(outcome.request, STRICT)
    assert again.request.messages == outcome.request.messages and again.repairs == []
    # strict rejects exactly when reorder had to move something
    if outcome.repairs:
        with pytest.raises(GuardViolation) as info:
            check_request(_req(shuffled), STRICT)
        assert {p.code for p in info.value.problems} <= ORDERING_CODES
        assert {p.id for p in info.value.problems} == {r.id for r in outcome.repairs}
    else:
        assert shuffled == msgs


@SETTINGS
@given(conversations(), st.data())
def test_pairing_damage_is_rejected_naming_exactly_the_damaged_ids(
    msgs: list[Message], data: st.DataObject
) -> None:
    damaged_msgs, damaged = damage(data.draw, shuffle_results(data.draw, msgs))
    before = _req(damaged_msgs).model_dump()
    with pytest.raises(GuardViolation) as info:
        check_request(_req(damaged_msgs), REORDER)
    problems = info.value.problems
    assert {p.id for p in problems} == set(damaged)
    assert {p.code for p in problems} <= PAIRING_CODES
    assert all(p.id in info.value.message and p.location for p in problems)
    assert _req(damaged_msgs).model_dump() == before

    # repair: dropped results are supplied, every other damage still rejects
    still_bad = {cid for cid, kind in damaged.items() if kind != "drop"}
    if still_bad:
        with pytest.raises(GuardViolation) as info:
            check_request(_req(damaged_msgs), REPAIR)
        assert {p.id for p in info.value.problems} == still_bad
    else:
        outcome = check_request(_req(damaged_msgs), REPAIR)
        assert_canonical(outcome.request.messages)
        added = {r.id for r in outcome.repairs if r.code == "orphan_tool_call"}
        assert added == set(damaged)
        synthetic = [m for m in outcome.request.messages if isinstance(m, ToolResultMessage) and m.is_error]
        assert {m.tool_call_id for m in synthetic} == set(damaged)
        again = check_request(outcome.request, STRICT)
        assert again.repairs == []


# ----------------------------------------------------------------------------- stream guard

RAWS = [
    '{"a": 1}',
    "{}",
    "",
    '{"cmd": ["ls", "-la"], "n": {"x": null}}',
    '{"a": [1, 2',
    '{"a"',
    "[1, 2]",
    '"s"',
    '{"a": 1}}',
    '{"é": "ü"}',
]
STOPS: list[StopReason] = ["stop", "length", "tool_use", "content_filter", "error", "aborted"]


@st.composite
def event_streams(draw: Any) -> list[StreamEvent]:
    """A complete internal stream: parts of every kind, tool-call arguments split at random
    points, the parts' events interleaved at random (each part's own events in order)."""
    per_part: list[list[StreamEvent]] = []
    for index in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["text", "thinking", "tool_call"]))
        if kind == "tool_call":
            raw = draw(st.sampled_from(RAWS) | st.text(max_size=12))
            cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=4)))
            bounds = [0, *cuts, len(raw)]
            frags = [raw[a:b] for a, b in pairwise(bounds) if b > a]
            evs: list[StreamEvent] = [PartStart(index=index, kind="tool_call", id=f"t{index}", name="f")]
            evs += [PartDelta(index=index, arguments=f) for f in frags]
        else:
            evs = [PartStart(index=index, kind=kind)]
            evs += [
                PartDelta(index=index, text=t)
                for t in draw(st.lists(st.text(min_size=1, max_size=5), max_size=3))
            ]
        evs.append(PartEnd(index=index))
        per_part.append(evs)
    merged: list[StreamEvent] = [MessageStart(id="s", model="m")]
    while any(per_part):
        live = [i for i, evs in enumerate(per_part) if evs]
        merged.append(per_part[draw(st.sampled_from(live))].pop(0))
    merged.append(MessageEnd(stop_reason=draw(st.sampled_from(STOPS))))
    return merged


def _is_tool_event(ev: StreamEvent, tool_indices: set[int]) -> bool:
    return isinstance(ev, PartStart | PartDelta | PartEnd) and ev.index in tool_indices


@SETTINGS
@given(event_streams())
def test_stream_guard_agrees_with_non_stream_check(events: list[StreamEvent]) -> None:
    guarded = guard_stream(events)
    assert collect(guarded) == check_truncation(collect(events))
    tool_indices = {e.index for e in events if isinstance(e, PartStart) and e.kind == "tool_call"}
    end = events[-1]
    assert isinstance(end, MessageEnd)
    if end.stop_reason == "length":
        assert not any(_is_tool_event(e, tool_indices) for e in guarded)
    # nothing but tool-call events is ever delayed, and tool-call events only come at the end
    from gateway.invariants import StreamTruncationGuard

    guard = StreamTruncationGuard()
    for i, ev in enumerate(events):
        out = guard.feed(ev)
        if _is_tool_event(ev, tool_indices):
            assert out == []
        elif i < len(events) - 1:
            assert out == [ev]
        else:
            assert all(_is_tool_event(e, tool_indices) for e in out[:-1])
