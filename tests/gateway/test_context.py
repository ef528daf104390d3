"""Context rebuild (invariant 5): groups, budgeted suffix, compaction on the path, repairs,
determinism — unit tests, hypothesis properties and the seed's fault injection (D)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway import invariants
from gateway.config import GuardPolicy
from gateway.context import (
    MISSING_RESULT,
    SUMMARY_PREFIX,
    Budget,
    Item,
    budget_for,
    build_context,
    estimate_tokens,
    interaction_groups,
)
from gateway.errors import GuardViolation
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from gateway.sessions.model import CompactionPayload, Entry, MessagePayload

STRICT = GuardPolicy(pairing="reject", ordering="strict")


class Chain:
    """Builds a linear path of entries with ids e0, e1, ..."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def add(self, etype: str, payload: Any) -> Entry:
        parent = self.entries[-1].id if self.entries else None
        e = Entry(
            id=f"e{len(self.entries)}",
            session_id="s",
            parent_id=parent,
            type=etype,  # type: ignore[arg-type]
            created_at=0.0,
            payload=payload.model_dump(mode="json"),
            seq=len(self.entries),
        )
        self.entries.append(e)
        return e

    def msg(self, m: Message) -> Entry:
        return self.add("message", MessagePayload(message=m))


def u(text: str) -> UserMessage:
    return UserMessage(content=[TextPart(text=text)])


def a(text: str = "", calls: Sequence[str] = ()) -> AssistantMessage:
    parts: list[Any] = [TextPart(text=text)] if text else []
    parts += [
        ToolCallPart(id=c, name="read", arguments={"p": c}, raw_arguments=orjson.dumps({"p": c}).decode())
        for c in calls
    ]
    return AssistantMessage(content=parts)


def r(call: str, text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call, name="read", content=[TextPart(text=text)])


def assert_no_orphans(messages: list[Message]) -> None:
    out = invariants.check_request(Request(model="m", messages=messages), STRICT)
    assert not out.repairs


def tool_session() -> Chain:
    c = Chain()
    c.msg(u("first question " * 20))
    c.msg(a("looking", ["t1", "t2"]))
    c.msg(r("t1", "x" * 400))
    c.msg(r("t2", "y" * 400))
    c.msg(a("answer one"))
    c.msg(u("second question"))
    c.msg(a("", ["t3"]))
    c.msg(r("t3", "z" * 100))
    c.msg(a("answer two"))
    c.msg(u("third question"))
    c.msg(a("answer three"))
    return c


# ---------------------------------------------------------------------------- unit tests


def test_groups_start_at_each_user_message_and_keep_tool_results_with_their_calls() -> None:
    ctx = build_context(tool_session().entries, 10**6)
    assert [len(g.items) for g in ctx.kept] == [5, 4, 2]
    assert not ctx.dropped and ctx.fits


def test_a_small_budget_keeps_the_longest_suffix_of_whole_groups() -> None:
    path = tool_session().entries
    full = build_context(path, 10**6)
    last_two = full.kept[1].tokens + full.kept[2].tokens
    ctx = build_context(path, last_two)
    assert ctx.kept == full.kept[1:] and ctx.dropped == full.kept[:1]
    assert ctx.first_kept_entry_id == "e5" and ctx.tokens == last_two <= ctx.budget.available
    ctx = build_context(path, last_two - 1)
    assert ctx.kept == full.kept[2:]
    assert_no_orphans(ctx.messages)


def test_when_not_even_the_last_group_fits_it_is_kept_and_fits_is_false() -> None:
    ctx = build_context(tool_session().entries, 5)
    assert not ctx.fits and len(ctx.kept) == 1 and ctx.first_kept_entry_id == "e9"


def test_latest_compaction_on_the_path_wins_summary_then_kept_then_after() -> None:
    c = tool_session()
    c.add("compaction", CompactionPayload(summary="old summary", first_kept_entry_id="e9", tokens_before=9))
    c.add("compaction", CompactionPayload(summary="new summary", first_kept_entry_id="e5", tokens_before=9))
    c.msg(u("fourth"))
    ctx = build_context(c.entries, 10**6)
    assert ctx.summary == "new summary" and ctx.compaction_id == "e12"
    first = ctx.messages[0]
    assert isinstance(first, UserMessage) and first.content[0].text.startswith(SUMMARY_PREFIX)  # type: ignore[union-attr]
    assert "new summary" in first.content[0].text  # type: ignore[union-attr]
    texts = [m.content[0].text for m in ctx.messages[1:] if isinstance(m, UserMessage)]  # type: ignore[union-attr]
    assert texts == ["second question", "third question", "fourth"]
    assert_no_orphans(ctx.messages)


def test_first_kept_inside_a_group_moves_back_to_the_group_start() -> None:
    c = tool_session()
    c.add("compaction", CompactionPayload(summary="s", first_kept_entry_id="e7"))  # the result of t3
    ctx = build_context(c.entries, 10**6)
    assert {"kind": "first_kept_moved_to_group_start", "entry_id": "e7", "moved_to": "e5"} in ctx.repairs
    assert ctx.first_kept_entry_id == "e5"
    assert_no_orphans(ctx.messages)


def test_compaction_keeping_nothing_leaves_summary_and_later_entries() -> None:
    c = tool_session()
    c.add("compaction", CompactionPayload(summary="all of it", first_kept_entry_id=None))
    ctx = build_context(c.entries, 10**6)
    assert len(ctx.messages) == 1 and ctx.kept == []


def test_recorded_defects_are_repaired_in_the_view_only() -> None:
    c = Chain()
    c.msg(u("go"))
    c.msg(a("", ["lost", "found"]))  # aborted: "lost" never answered
    c.msg(r("found"))
    c.msg(r("nobody-called-me"))  # orphan result
    c.msg(AssistantMessage(content=[]))  # aborted with nothing
    c.msg(u("again"))
    ctx = build_context(c.entries, 10**6)
    kinds = [x["kind"] for x in ctx.repairs]
    assert kinds == ["missing_result", "orphan_result_left_out", "empty_assistant_left_out"]
    synthetic = ctx.messages[2]
    assert (
        isinstance(synthetic, ToolResultMessage) and synthetic.tool_call_id == "lost" and synthetic.is_error
    )
    assert synthetic.content[0].text == MISSING_RESULT  # type: ignore[union-attr]
    assert_no_orphans(ctx.messages)


def test_a_result_recorded_out_of_place_is_moved_behind_its_call() -> None:
    c = Chain()
    c.msg(u("go"))
    c.msg(a("", ["t1", "t2"]))
    c.msg(r("t2"))
    c.msg(u("interjection"))
    c.msg(r("t1"))
    ctx = build_context(c.entries, 10**6)
    ids = [m.tool_call_id for m in ctx.messages if isinstance(m, ToolResultMessage)]
    assert ids == ["t1", "t2"] and [len(g.items) for g in ctx.kept] == [4, 1]
    assert_no_orphans(ctx.messages)


def test_budget_subtracts_system_tools_reserved_output_and_margin() -> None:
    req = Request(
        model="m",
        messages=[SystemMessage(content=[TextPart(text="s" * 400)]), u("hi")],
        tools=[ToolDefinition(name="read", description="d" * 100)],
        max_output_tokens=1000,
    )
    b = budget_for(req, 10_000)
    assert b.system == estimate_tokens(req.messages[0]) and b.tools > 25
    assert b.reserved_output == 1000 and b.margin == 500
    assert b.available == 10_000 - b.system - b.tools - 1000 - 500
    assert Budget(window=10, reserved_output=100).available == 0


# ---------------------------------------------------------------------------- properties


@st.composite
def histories(draw: st.DrawFn) -> Chain:
    """Random sessions: groups of a user message, assistant turns with parallel tool calls and
    their results (sometimes shuffled, sometimes missing), optional compactions."""
    c = Chain()
    n_calls = 0
    for _ in range(draw(st.integers(0, 8))):
        c.msg(u(draw(st.text(min_size=1, max_size=60))))
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{n_calls + i}" for i in range(draw(st.integers(0, 3)))]
            n_calls += len(ids)
            c.msg(a(draw(st.text(max_size=40)), ids))
            answered = [i for i in ids if draw(st.integers(0, 9)) > 0]
            for cid in draw(st.permutations(answered)):
                c.msg(r(cid, draw(st.text(max_size=200))))
        if draw(st.booleans()):
            c.msg(a(draw(st.text(min_size=1, max_size=40))))
        if c.entries and draw(st.integers(0, 5)) == 0:
            kept = draw(st.sampled_from([None, *[e.id for e in c.entries if e.type == "message"]]))
            c.add(
                "compaction", CompactionPayload(summary=draw(st.text(max_size=80)), first_kept_entry_id=kept)
            )
    return c


def _reloaded(entries: list[Entry]) -> list[Entry]:
    return [Entry.model_validate(orjson.loads(orjson.dumps(e.model_dump(mode="json")))) for e in entries]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(0, 3000))
def test_same_history_and_budget_give_byte_identical_context(h: Chain, budget: int) -> None:
    one = build_context(h.entries, budget).to_bytes()
    assert build_context(h.entries, budget).to_bytes() == one
    assert build_context(_reloaded(h.entries), budget).to_bytes() == one


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(0, 3000))
def test_kept_part_is_a_contiguous_suffix_of_whole_groups(h: Chain, budget: int) -> None:
    full = build_context(h.entries, 10**9)
    ctx = build_context(h.entries, budget)
    n = len(ctx.kept)
    assert ctx.dropped + ctx.kept == full.kept
    assert ctx.kept == (full.kept[len(full.kept) - n :] if n else [])
    head = 1 if ctx.summary is not None else 0
    assert ctx.messages[head:] == [i.message for g in ctx.kept for i in g.items]
    for g in ctx.kept[1:] + ctx.kept[:1] * bool(ctx.dropped):
        assert isinstance(g.items[0].message, UserMessage)
    if ctx.fits:
        assert ctx.tokens <= ctx.budget.available
    if ctx.dropped and ctx.fits:  # the suffix is the longest one that fits
        assert ctx.tokens + ctx.dropped[-1].tokens > ctx.budget.available


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(0, 3000))
def test_no_orphan_ever_appears_in_a_rebuilt_context(h: Chain, budget: int) -> None:
    ctx = build_context(h.entries, budget)
    if ctx.messages:
        assert_no_orphans(ctx.messages)


# ---------------------------------------------------------------------------- fault injection (D)


def every_five(items: Sequence[Item]) -> list[list[Item]]:
    """The seed's fault: cut the history every 5 messages instead of at group boundaries."""
    return [list(items[i : i + 5]) for i in range(0, len(items), 5)]


def test_fault_d_cutting_every_five_messages_is_caught_by_the_pairing_guard() -> None:
    c = Chain()
    c.msg(u("q1"))
    c.msg(a("", ["t1"]))
    c.msg(r("t1"))
    c.msg(a("", ["t2", "t3"]))
    c.msg(r("t2"))
    c.msg(r("t3"))  # the 5-message cut falls right before this result
    c.msg(a("done"))
    c.msg(u("q2"))
    c.msg(a("", ["t4"]))
    c.msg(r("t4"))
    c.msg(a("done"))
    path = c.entries
    caught: set[str] = set()
    for budget in range(0, 2000, 10):
        ctx = build_context(path, budget, grouper=every_five)
        try:
            invariants.check_request(Request(model="m", messages=ctx.messages), STRICT)
        except GuardViolation as err:
            caught.add(err.message)
        good = build_context(path, budget)
        assert_no_orphans(good.messages)
    assert caught, "the 5-message cut never orphaned a result"
    assert any("t3" in m for m in caught), caught


def test_interaction_groups_on_empty_history() -> None:
    assert interaction_groups([]) == []
    assert build_context([], 100).messages == []
