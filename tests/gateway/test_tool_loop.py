"""The server-side tool loop (gateway.tool_loop, gateway.tool_exec) over a scripted model and
scripted tools, including the seed's fault-injection exercises A, B and C.

Tool completion order is controlled with events released in a chosen (seeded, random) order,
never with sleeps, so every run is deterministic.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import orjson
import pytest

from gateway import invariants
from gateway.edges import anthropic_messages, openai_chat
from gateway.errors import GuardViolation, ToolLoopGuardViolation
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    Response,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.tool_exec import in_completion_order
from gateway.tool_loop import STEP_LIMIT_REASON, ToolLoop

TOOLS = frozenset({"time__now", "time__convert", "fs__read"})


def call(i: int, name: str = "time__now") -> ToolCallPart:
    raw = orjson.dumps({"n": i}).decode()
    return ToolCallPart(id=f"call_{i}", name=name, arguments={"n": i}, raw_arguments=raw)


def answer(*parts: TextPart | ToolCallPart, stop: str = "stop", rid: str = "r") -> Response:
    """A model answer after the truncation guard (as the pipeline hands it to the loop)."""
    raw = Response(id=rid, model="m", message=AssistantMessage(content=list(parts)), stop_reason=stop)  # type: ignore[arg-type]
    return invariants.check_truncation(raw)


class Model:
    """A scripted model: hands out ``answers`` in order and keeps every request it got."""

    def __init__(self, *answers: Response) -> None:
        self.answers = list(answers)
        self.requests: list[Request] = []

    async def __call__(self, request: Request, step: int) -> Response:
        self.requests.append(request)
        return self.answers.pop(0)


class Tools:
    """Scripted tools: each call waits until released; :meth:`release_in` frees them in a given
    order once all have started, so completion order is exactly that order."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.started: list[str] = []
        self.finished: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.all_started = asyncio.Event()
        self.release_order: list[str] | None = None

    async def __call__(self, c: ToolCallPart) -> ToolResultMessage:
        gate = self.gates.setdefault(c.id, asyncio.Event())
        self.started.append(c.id)
        if len(self.started) == self.expected:
            self.all_started.set()
            asyncio.get_running_loop().create_task(self._release())
        await gate.wait()
        self.finished.append(c.id)
        return ToolResultMessage(tool_call_id=c.id, name=c.name, content=[TextPart(text=f"result of {c.id}")])

    async def _release(self) -> None:
        for cid in self.release_order or list(self.gates):
            self.gates[cid].set()
            await asyncio.sleep(0)  # let that call finish before the next is freed
            await asyncio.sleep(0)


def request() -> Request:
    return Request(model="m", messages=[UserMessage(content=[TextPart(text="what time is it?")])])


def loop(runner: object, **kw: object) -> ToolLoop:
    return ToolLoop(loop_tools=TOOLS, client_tools=frozenset(), runner=runner, **kw)  # type: ignore[arg-type]


def dump(messages: Sequence[Message]) -> bytes:
    return orjson.dumps([m.model_dump(mode="json") for m in messages])


async def test_results_enter_history_in_call_order_whatever_order_tools_finish() -> None:
    calls = [call(i) for i in range(4)]
    model = Model(answer(*calls, stop="tool_use"), answer(TextPart(text="done")))
    tools = Tools(4)
    tools.release_order = ["call_3", "call_1", "call_0", "call_2"]
    progress: list[str] = []
    lp = loop(tools)
    resp = await lp.run(request(), model)
    assert resp.message.text == "done"
    assert tools.finished == ["call_3", "call_1", "call_0", "call_2"]  # completion order
    second = model.requests[1].messages
    assert [m.tool_call_id for m in second if isinstance(m, ToolResultMessage)] == [c.id for c in calls]
    step = lp.plan(answer(*calls, stop="tool_use"), 1)
    tools2 = Tools(4)
    tools2.release_order = ["call_2", "call_0", "call_3", "call_1"]
    lp2 = loop(tools2)
    await lp2.run_tools(step, on_done=lambda c, r: progress.append(r.tool_call_id))  # type: ignore[arg-type,func-returns-value]
    assert progress == ["call_2", "call_0", "call_3", "call_1"]  # progress flows in completion order


async def test_fault_a_completion_order_collection_is_caught_before_the_next_request() -> None:
    calls = [call(i) for i in range(3)]
    model = Model(answer(*calls, stop="tool_use"), answer(TextPart(text="never asked")))
    tools = Tools(3)
    tools.release_order = ["call_2", "call_0", "call_1"]
    with pytest.raises(ToolLoopGuardViolation) as err:
        await loop(tools, order=in_completion_order).run(request(), model)
    assert len(model.requests) == 1  # nothing went upstream with the wrong order
    assert err.value.status == 500
    assert "call_2" in err.value.message or "call_0" in err.value.message
    assert {p.code for p in err.value.problems} <= {"result_out_of_order", "result_not_adjacent"}


async def test_fault_a_five_runs_with_random_tool_delays_give_identical_transcripts() -> None:
    transcripts = []
    finish_orders = set()
    for seed in range(5):
        calls = [
            call(i, name) for i, name in enumerate(["time__now", "time__convert", "fs__read", "time__now"])
        ]
        more = [call(10 + i) for i in range(3)]
        model = Model(
            answer(TextPart(text="checking"), *calls, stop="tool_use"),
            answer(*more, stop="tool_use"),
            answer(TextPart(text="it is noon")),
        )
        recorded: list[bytes] = []

        async def record(
            n: int, req: Request, resp: Response, appended: list[Message], out: list[bytes] = recorded
        ) -> None:
            out.append(dump(req.messages) + dump(appended))

        rng = random.Random(seed)
        tools = Tools(len(calls))
        order = [c.id for c in calls]
        rng.shuffle(order)
        tools.release_order = order

        async def runner(
            c: ToolCallPart, tools: Tools = tools, rng: random.Random = rng
        ) -> ToolResultMessage:
            if c.id.startswith("call_1") and c.id != "call_1":  # second step: yield a random number of times
                for _ in range(rng.randrange(5)):
                    await asyncio.sleep(0)
                return ToolResultMessage(
                    tool_call_id=c.id, name=c.name, content=[TextPart(text=f"result of {c.id}")]
                )
            return await tools(c)

        resp = await loop(runner, record=record).run(request(), model)
        assert resp.message.text == "it is noon"
        finish_orders.add(tuple(tools.finished))
        transcripts.append(b"\n".join(recorded) + dump(model.requests[-1].messages))
    assert len(finish_orders) > 1  # the tools really finished in different orders
    assert len(set(transcripts)) == 1


async def test_fault_b_dropped_tool_result_is_named_by_the_guard_before_the_next_request() -> None:
    rng = random.Random(7)
    dropped: list[str] = []

    def drop_some(results: list[ToolResultMessage]) -> list[ToolResultMessage]:
        kept = []
        for r in results:
            if rng.random() < 0.10:
                dropped.append(r.tool_call_id)
            else:
                kept.append(r)
        return kept

    calls = [call(i) for i in range(30)]
    model = Model(answer(*calls, stop="tool_use"), answer(TextPart(text="never asked")))

    async def runner(c: ToolCallPart) -> ToolResultMessage:
        return ToolResultMessage(tool_call_id=c.id, name=c.name, content=[TextPart(text="ok")])

    with pytest.raises(GuardViolation) as err:
        await loop(runner, tamper=drop_some).run(request(), model)
    assert dropped, "seed 7 drops at least one of 30 results"
    assert len(model.requests) == 1
    missing = {p.id for p in err.value.problems}
    assert missing == set(dropped)
    for cid in dropped:
        assert cid in err.value.message


async def test_fault_c_length_truncated_tool_call_is_never_executed() -> None:
    cut = ToolCallPart(id="call_cut", name="fs__read", arguments={}, raw_arguments='{"path": "/etc/pas')
    model = Model(
        answer(TextPart(text="reading"), cut, stop="length"),
        answer(TextPart(text="sorry, I will be brief")),
    )
    ran: list[str] = []

    async def runner(c: ToolCallPart) -> ToolResultMessage:
        ran.append(c.id)
        return ToolResultMessage(tool_call_id=c.id, content=[TextPart(text="secret")])

    resp = await loop(runner).run(request(), model)
    assert ran == []
    assert resp.message.text == "sorry, I will be brief"
    again = model.requests[1].messages  # the model was asked again
    assistant = next(m for m in again if isinstance(m, AssistantMessage))
    assert [c.id for c in assistant.tool_calls] == ["call_cut"]
    assert assistant.tool_calls[0].raw_arguments == "{}"
    result = next(m for m in again if isinstance(m, ToolResultMessage))
    assert result.tool_call_id == "call_cut" and result.is_error
    assert "stopped for length" in result.content[0].text  # type: ignore[union-attr]


async def test_exceptions_timeouts_and_unknown_tools_each_become_one_error_result() -> None:
    calls = [call(0), call(1), call(2, "no_such_tool"), call(3)]
    model = Model(answer(*calls, stop="tool_use"), answer(TextPart(text="done")))
    never = asyncio.Event()

    async def runner(c: ToolCallPart) -> ToolResultMessage:
        if c.id == "call_0":
            raise RuntimeError("disk on fire")
        if c.id == "call_1":
            await never.wait()
        return ToolResultMessage(tool_call_id=c.id, content=[TextPart(text="fine")])

    await loop(runner, timeout_s=0.01).run(request(), model)
    results = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["call_0", "call_1", "call_2", "call_3"]
    assert [r.is_error for r in results] == [True, True, True, False]
    texts = [r.content[0].text for r in results]  # type: ignore[union-attr]
    assert "disk on fire" in texts[0]
    assert "did not finish within" in texts[1]
    assert "unknown tool 'no_such_tool'" in texts[2]


async def test_last_step_asks_for_a_final_answer_and_withholds_further_calls() -> None:
    model = Model(answer(call(0), stop="tool_use"), answer(call(1), stop="tool_use"))

    async def runner(c: ToolCallPart) -> ToolResultMessage:
        return ToolResultMessage(tool_call_id=c.id, content=[TextPart(text="ok")])

    resp = await loop(runner, max_steps=2).run(request(), model)
    assert model.requests[0].tool_choice is None
    assert model.requests[1].tool_choice is not None and model.requests[1].tool_choice.mode == "none"
    assert resp.message.tool_calls == []
    assert [(w.id, w.reason) for w in resp.withheld_tool_calls] == [("call_1", STEP_LIMIT_REASON)]


async def test_a_call_of_a_client_tool_ends_the_loop_without_running_anything() -> None:
    model = Model(answer(call(0), call(1, "client_tool"), stop="tool_use"))
    ran: list[str] = []

    async def runner(c: ToolCallPart) -> ToolResultMessage:
        ran.append(c.id)
        return ToolResultMessage(tool_call_id=c.id, content=[TextPart(text="ok")])

    lp = ToolLoop(loop_tools=TOOLS, client_tools=frozenset({"client_tool"}), runner=runner)
    resp = await lp.run(request(), model)
    assert ran == []
    assert [c.id for c in resp.message.tool_calls] == ["call_0", "call_1"]


def test_edges_parse_the_mcp_tool_entry_into_mcp_servers() -> None:
    oa = openai_chat.parse_request(
        orjson.dumps(
            {
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [
                    {"type": "mcp", "server": "time"},
                    {"type": "function", "function": {"name": "f"}},
                    {"type": "mcp", "server": "time"},
                ],
            }
        )
    )
    assert oa.mcp_servers == ["time"] and [t.name for t in oa.tools] == ["f"]
    an = anthropic_messages.parse_request(
        orjson.dumps(
            {
                "model": "m",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [
                    {"type": "mcp", "server": "time"},
                    {"name": "g", "input_schema": {"type": "object"}},
                ],
            }
        )
    )
    assert an.mcp_servers == ["time"] and [t.name for t in an.tools] == ["g"]


def test_a_session_bound_loop_lets_a_result_whose_call_the_session_holds_go_to_its_first_step() -> None:
    only_result = Request(
        model="m", messages=[ToolResultMessage(tool_call_id="call_client", content=[TextPart(text="r")])]
    )
    step = loop(Tools(0), session_bound=True).step_request(only_result, only_result.messages, 1)
    assert step.messages == only_result.messages  # the window layer rebuilds it from the session
    with pytest.raises(ToolLoopGuardViolation):
        loop(Tools(0)).step_request(only_result, only_result.messages, 1)
