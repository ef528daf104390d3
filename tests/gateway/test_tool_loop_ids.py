"""Tool-call ids stay unique within one looping turn (gateway.tool_loop_ids): a reused id is
renamed by step, the same way for a whole answer and for its stream, and the loop goes on."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from gateway import invariants
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    Response,
    StreamEvent,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
    WithheldToolCall,
)
from gateway.tool_loop import ToolLoop
from gateway.tool_loop_ids import TurnCallIds


def _call(cid: str, name: str = "t__now") -> ToolCallPart:
    return ToolCallPart(id=cid, name=name, arguments={}, raw_arguments="{}")


def _answer(*calls: ToolCallPart, withheld: tuple[str, ...] = ()) -> Response:
    return Response(
        id="r",
        model="m",
        message=AssistantMessage(content=list(calls)),
        stop_reason="tool_use" if calls else "stop",
        withheld_tool_calls=[
            WithheldToolCall(id=w, name="t__now", raw_arguments="{", reason="x") for w in withheld
        ],
    )


def test_the_first_use_keeps_its_id_and_a_reuse_gets_the_step_suffix() -> None:
    ids = TurnCallIds([])
    assert ids.claim("call_1", 1) == "call_1"
    assert ids.claim("call_1", 2) == "call_1_s2"
    assert ids.claim("call_1", 2) == "call_1_s2_2"
    assert ids.claim("call_1", 3) == "call_1_s3"


def test_ids_of_the_clients_history_count_as_used() -> None:
    history = [
        UserMessage(content=[TextPart(text="hi")]),
        AssistantMessage(content=[_call("call_old")]),
        ToolResultMessage(tool_call_id="call_old", content=[TextPart(text="1")]),
    ]
    ids = TurnCallIds(history)
    assert ids.claim("call_old", 1) == "call_old_s1"


def test_a_suffixed_id_the_upstream_itself_sent_is_not_reused() -> None:
    ids = TurnCallIds([])
    assert ids.claim("a_s2", 1) == "a_s2"
    assert ids.claim("a", 1) == "a"
    assert ids.claim("a", 2) == "a_s2_2"


def test_a_response_without_reused_ids_is_returned_as_it_is() -> None:
    resp = _answer(_call("a"), _call("b"))
    assert TurnCallIds([]).claim_response(resp, 1) is resp


def _events(resp: Response) -> list[StreamEvent]:
    out: list[StreamEvent] = [MessageStart(id="r", model="m")]
    for i, c in enumerate(resp.message.tool_calls):
        out += [
            PartStart(index=i, kind="tool_call", id=c.id, name=c.name),
            PartDelta(index=i, arguments=c.raw_arguments),
            PartEnd(index=i),
        ]
    out.append(MessageEnd(stop_reason=resp.stop_reason, withheld_tool_calls=resp.withheld_tool_calls))
    return out


ID = st.sampled_from(["a", "b", "a_s2", "c"])


@given(st.lists(st.tuples(st.lists(ID, max_size=3), st.lists(ID, max_size=2)), min_size=1, max_size=4))
def test_a_stream_gets_exactly_the_ids_of_the_whole_answer(steps: list[tuple[list[str], list[str]]]) -> None:
    whole, streamed = TurnCallIds([]), TurnCallIds([])
    seen: list[str] = []
    for n, (kept, withheld) in enumerate(steps, start=1):
        resp = _answer(*[_call(c) for c in kept], withheld=tuple(withheld))
        a = whole.claim_response(resp, n)
        b = invariants.collect([streamed.claim_event(e, n) for e in _events(resp)])
        ids_a = [c.id for c in a.message.tool_calls] + [w.id for w in a.withheld_tool_calls]
        ids_b = [c.id for c in b.message.tool_calls] + [w.id for w in b.withheld_tool_calls]
        assert ids_a == ids_b
        seen += ids_a
    assert len(seen) == len(set(seen)), "unique over the whole turn"


async def test_the_loop_continues_when_the_upstream_reuses_an_id_between_steps() -> None:
    answers = [_answer(_call("call_same")), _answer(_call("call_same")), _answer()]
    sent: list[Request] = []

    async def ask(request: Request, step: int) -> Response:
        sent.append(request)
        return answers.pop(0)

    async def run(c: ToolCallPart) -> ToolResultMessage:
        return ToolResultMessage(tool_call_id=c.id, name=c.name, content=[TextPart(text=f"ran {c.id}")])

    loop = ToolLoop(loop_tools=frozenset({"t__now"}), client_tools=frozenset(), runner=run)
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="go")])])
    final = await loop.run(request, ask)

    assert final.stop_reason == "stop"
    last = sent[-1].messages
    calls = [p.id for m in last if isinstance(m, AssistantMessage) for p in m.tool_calls]
    results = [m.tool_call_id for m in last if isinstance(m, ToolResultMessage)]
    assert calls == ["call_same", "call_same_s2"] == results
    assert orjson.loads(last[-1].content[0].model_dump_json())["text"] == "ran call_same_s2"


async def test_two_different_calls_with_one_id_in_one_answer_both_run() -> None:
    answers = [
        Response(
            id="r",
            model="m",
            message=AssistantMessage(
                content=[
                    ToolCallPart(id="x", name="t__now", arguments={"n": 1}, raw_arguments='{"n": 1}'),
                    ToolCallPart(id="x", name="t__now", arguments={"n": 2}, raw_arguments='{"n": 2}'),
                ]
            ),
            stop_reason="tool_use",
        ),
        _answer(),
    ]
    sent: list[Request] = []

    async def ask(request: Request, step: int) -> Response:
        sent.append(request)
        return answers.pop(0)

    ran: list[str] = []

    async def run(c: ToolCallPart) -> ToolResultMessage:
        ran.append(c.raw_arguments)
        return ToolResultMessage(tool_call_id=c.id, name=c.name, content=[TextPart(text="ok")])

    loop = ToolLoop(loop_tools=frozenset({"t__now"}), client_tools=frozenset(), runner=run)
    await loop.run(Request(model="m", messages=[UserMessage(content=[TextPart(text="go")])]), ask)

    assert sorted(ran) == ['{"n": 1}', '{"n": 2}']
    results = [m.tool_call_id for m in sent[-1].messages if isinstance(m, ToolResultMessage)]
    assert results == ["x", "x_s1"]


def test_a_reused_id_near_the_byte_bound_is_renamed_to_an_id_the_edge_accepts() -> None:
    from gateway.call_id_rule import unusable_call_id

    long_id = "c" * 255
    ids = TurnCallIds([])
    assert ids.claim(long_id, 1) == long_id
    renamed = ids.claim(long_id, 2)
    assert renamed != long_id and unusable_call_id(renamed) is None
