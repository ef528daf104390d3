"""Where a session-bound turn's messages go (gateway/sessions/turns.py): below the last finished
interaction, never below another turn's question in flight or a dead one; only an answer moves
the session leaf, the first of turns that read the same leaf to finish; a tool result sent
without its call is paired against the session's history, a true orphan refused. Unit tests on
both store backends, and a hypothesis property over interleavings of concurrent turns."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.config import Deployment
from gateway.errors import GuardViolation
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    Response,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from gateway.sessions.model import MessagePayload
from gateway.sessions.sqlite import SqliteSessionStore
from gateway.sessions.store import KEEP_LEAF, SqlSessionStore
from gateway.sessions.turns import Recorded, record_request, record_response, view_for

DEP = Deployment(name="d", api="demo", model="turnstile-demo", context_window=1_000_000)


def q(text: str) -> UserMessage:
    return UserMessage(content=[TextPart(text=text)])


def a(text: str) -> AssistantMessage:
    return AssistantMessage(content=[TextPart(text=text)])


def answer(msg: AssistantMessage) -> Response:
    return Response(id="r", model="m", message=msg, stop_reason="stop", usage=Usage())


def req(*messages: Message) -> Request:
    return Request(model="m", messages=list(messages))


def text_of(msg: Message) -> str:
    if isinstance(msg, ToolResultMessage):
        return f"result:{msg.tool_call_id}"
    parts = [p.text for p in msg.content if isinstance(p, TextPart)]
    calls = [f"call:{p.id}" for p in msg.content if isinstance(p, ToolCallPart)]
    return "+".join(parts + calls)


async def context(store: SqlSessionStore, sid: str, recorded: Recorded) -> list[str]:
    """The messages the turn would send upstream (the rebuilt context), as texts."""
    view = await view_for(store, sid, req(), DEP, leaf=recorded.leaf)
    return [text_of(m) for m in view.messages]


async def leaf_texts(store: SqlSessionStore, sid: str) -> list[str]:
    return [text_of(m) for e in await store.path(sid) if (m := e.message()) is not None]


# ---------------------------------------------------------------------------- concurrent turns


async def test_a_turn_started_while_another_runs_does_not_see_its_question(store: SqlSessionStore) -> None:
    first = await record_request(store, "s", req(q("q0")))
    await record_response(store, "s", answer(a("a0")), first)
    one = await record_request(store, "s", req(q("q1")))
    two = await record_request(store, "s", req(q("q2")))  # q1 is still waiting for its answer
    assert await context(store, "s", one) == ["q0", "a0", "q1"]
    assert await context(store, "s", two) == ["q0", "a0", "q2"]
    assert one.base == two.base  # both read the leaf a0: the questions did not move it
    assert await leaf_texts(store, "s") == ["q0", "a0"]


async def test_of_turns_that_read_the_same_leaf_the_first_to_finish_moves_it(store: SqlSessionStore) -> None:
    one = await record_request(store, "s", req(q("q1")))
    two = await record_request(store, "s", req(q("q2")))
    assert await record_response(store, "s", answer(a("a2")), two) is True
    assert await record_response(store, "s", answer(a("a1")), one) is False  # a branch now
    assert await leaf_texts(store, "s") == ["q2", "a2"]
    # the slower turn's question and answer stay parent and child on their branch
    branch = [e for e in await store.entries("s") if text_of(e.message()) == "a1"]  # type: ignore[arg-type]
    assert [text_of(m) for e in await store.path("s", branch[0].id) if (m := e.message())] == ["q1", "a1"]


async def test_a_slow_sibling_never_pulls_the_leaf_off_a_conversation_that_continued(
    store: SqlSessionStore,
) -> None:
    slow = await record_request(store, "s", req(q("slow")))
    fast = await record_request(store, "s", req(q("fast")))
    await record_response(store, "s", answer(a("fast answer")), fast)
    later = await record_request(store, "s", req(q("next")))  # attaches below the fast answer
    await record_response(store, "s", answer(a("slow answer")), slow)
    assert await context(store, "s", later) == ["fast", "fast answer", "next"]
    await record_response(store, "s", answer(a("next answer")), later)
    assert await leaf_texts(store, "s") == ["fast", "fast answer", "next", "next answer"]


async def test_a_dead_turns_question_left_at_the_leaf_is_branched_past_not_merged(
    store: SqlSessionStore,
) -> None:
    # a log written before this rule: the killed turn's question moved the leaf
    await store.append_many(
        "s", [("message", MessagePayload(message=m)) for m in (q("q1"), a("a1"), q("lost"))]
    )
    turn = await record_request(store, "s", req(q("q2")))
    assert await context(store, "s", turn) == ["q1", "a1", "q2"]
    await record_response(store, "s", answer(a("a2")), turn)
    assert await leaf_texts(store, "s") == ["q1", "a1", "q2", "a2"]


async def test_a_client_resending_everything_after_a_dead_turn_gets_its_question_once(
    store: SqlSessionStore,
) -> None:
    await store.append_many(
        "s", [("message", MessagePayload(message=m)) for m in (q("q1"), a("a1"), q("q2"))]
    )
    turn = await record_request(store, "s", req(q("q1"), a("a1"), q("q2")))
    assert turn.appended == 1
    assert await context(store, "s", turn) == ["q1", "a1", "q2"]


async def test_a_client_resending_history_up_to_a_question_regenerates_its_answer(
    store: SqlSessionStore,
) -> None:
    first = await record_request(store, "s", req(q("q1")))
    await record_response(store, "s", answer(a("a1")), first)
    again = await record_request(store, "s", req(q("q1")))
    assert again.appended == 0
    assert await context(store, "s", again) == ["q1"]
    await record_response(store, "s", answer(a("a1 again")), again)
    assert await leaf_texts(store, "s") == ["q1", "a1 again"]


# ---------------------------------------------------------------------------- deferred tool results


CALL = ToolCallPart(id="call_1", name="weather", arguments={}, raw_arguments="{}")


def result(call_id: str, src: str | None = None) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, content=[TextPart(text="sunny")], src=src)


async def _asked_for_a_tool(store: SqlSessionStore) -> None:
    turn = await record_request(store, "s", req(q("weather?")))
    await record_response(store, "s", answer(AssistantMessage(content=[CALL])), turn)


async def test_a_tool_result_sent_alone_pairs_with_its_call_in_the_session(store: SqlSessionStore) -> None:
    await _asked_for_a_tool(store)
    turn = await record_request(store, "s", req(result("call_1")))
    assert turn.appended == 1
    assert await context(store, "s", turn) == ["weather?", "call:call_1", "result:call_1"]


async def test_a_tool_result_whose_call_is_nowhere_is_refused_naming_it_and_nothing_is_stored(
    store: SqlSessionStore,
) -> None:
    await _asked_for_a_tool(store)
    before = len(await store.entries("s"))
    with pytest.raises(GuardViolation) as err:
        await record_request(store, "s", req(result("call_404", src="messages[0]")))
    (problem,) = err.value.problems
    assert (problem.code, problem.id, problem.location) == ("orphan_tool_result", "call_404", "messages[0]")
    assert "call_404" in err.value.message and "'s'" in err.value.message
    assert err.value.status == 400
    assert len(await store.entries("s")) == before


async def test_a_second_result_for_a_call_the_session_holds_a_result_of_is_refused(
    store: SqlSessionStore,
) -> None:
    await _asked_for_a_tool(store)
    turn = await record_request(store, "s", req(result("call_1")))
    await record_response(store, "s", answer(a("It is sunny.")), turn)
    with pytest.raises(GuardViolation) as err:
        await record_request(store, "s", req(result("call_1")))
    assert [p.code for p in err.value.problems] == ["duplicate_tool_result"]


async def test_a_tool_result_whose_call_only_another_branch_holds_is_an_orphan(
    store: SqlSessionStore,
) -> None:
    root = await store.append_many("s", [("message", MessagePayload(message=m)) for m in (q("r"), a("ra"))])
    await store.append_at(  # a branch that asked for the tool, and never became the session's line
        "s",
        [
            ("message", MessagePayload(message=q("weather?"))),
            ("message", MessagePayload(message=AssistantMessage(content=[CALL]))),
        ],
        parent_id=root[-1].id,
        expect_leaf=KEEP_LEAF,
    )
    with pytest.raises(GuardViolation) as err:
        await record_request(store, "s", req(result("call_1")))
    assert [p.code for p in err.value.problems] == ["orphan_tool_result"]


async def test_a_tool_result_after_later_turns_still_pairs_with_its_call_on_the_path(
    store: SqlSessionStore,
) -> None:
    await _asked_for_a_tool(store)
    other = await record_request(store, "s", req(q("never mind")))
    await record_response(store, "s", answer(a("ok")), other)
    turn = await record_request(store, "s", req(result("call_1")))
    # the view puts the result right after its call (and the guards' check passes over it)
    assert await context(store, "s", turn) == ["weather?", "call:call_1", "result:call_1", "never mind", "ok"]


# ---------------------------------------------------------------------------- property


@dataclass
class Sim:
    """One simulated client turn sending only its new question."""

    n: int
    answers: bool  # False: the turn dies without an answer (upstream failure, kill -9)
    stage: int = 0
    recorded: Recorded | None = None
    started_after: frozenset[int] = frozenset()  # turns answered before this one started
    seen: tuple[str, ...] | None = None


async def _run(plan: list[int], answers: list[bool]) -> None:
    store = SqliteSessionStore(":memory:")
    await store.open()
    try:
        await store.create_session("s")
        turns = [Sim(i, answers[i]) for i in range(len(answers))]
        answered: set[int] = set()
        model_leaf: str | None = None  # what "first to finish moves the leaf" predicts
        for i in plan:
            t = turns[i]
            if t.stage == 0:
                t.recorded = await record_request(store, "s", req(q(f"q{i}")))
                t.started_after = frozenset(answered)
                assert t.recorded.base == model_leaf
            elif t.stage == 1:
                assert t.recorded is not None
                t.seen = tuple(await context(store, "s", t.recorded))
            elif t.stage == 2 and t.answers:
                assert t.recorded is not None
                moved = await record_response(store, "s", answer(a(f"a{i}")), t.recorded)
                assert moved == (model_leaf == t.recorded.base)
                if moved:
                    model_leaf = (await store.get_session("s")).leaf_id
                answered.add(i)
            t.stage += 1
        for t in turns:
            if t.seen is None:
                continue
            assert t.seen[-1] == f"q{t.n}"
            others = {int(x[1:]) for x in t.seen[:-1] if x.startswith("q")}
            # no turn's context holds the question of a turn that was running, or died
            assert others <= t.started_after, (t.n, t.seen, sorted(t.started_after))
            for k, text in enumerate(t.seen[:-1]):  # each question is followed by its own answer
                if text.startswith("q"):
                    assert t.seen[k + 1] == "a" + text[1:]
        path = await leaf_texts(store, "s")
        assert all(x.startswith("q") == (k % 2 == 0) for k, x in enumerate(path))  # never two questions
        assert (await store.get_session("s")).leaf_id == model_leaf
    finally:
        await store.close()


@st.composite
def interleavings(draw: st.DrawFn) -> tuple[list[int], list[bool]]:
    n = draw(st.integers(min_value=1, max_value=6))
    answers = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    steps = [i for i in range(n) for _ in range(draw(st.integers(min_value=0, max_value=3)))]
    return draw(st.permutations(steps)), answers


@settings(max_examples=120, deadline=None)
@given(interleavings())
def test_no_turns_context_holds_another_concurrent_or_dead_turns_question(
    case: tuple[list[int], list[bool]],
) -> None:
    asyncio.run(_run(*case))
