"""The limits layer under the record layer: whatever way a keyed turn ends, the counter is
charged exactly what its transcript row records (a fake inner service stands for the tool loop
and the layers below it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.access.model import Budget, Principal
from gateway.config import Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import UpstreamError
from gateway.layers.limits import LimitsLayer
from gateway.layers.record import RecordLayer
from gateway.limits.memory import MemoryLimits
from gateway.schema import AssistantMessage, Request, Response, TextPart, Usage, UserMessage
from gateway.transcript import TurnRecord
from gateway.turn import Batches, Gateway, Turn

STEP = Usage(input_tokens=10, output_tokens=5, cost_usd=0.25)


class Loop:
    """A tool loop whose first step answers (held and settled on the budget), then ends as
    ``how`` says: ``answer``, ``fails`` (an upstream error) or ``cut`` (the server cut it)."""

    def __init__(self, how: str) -> None:
        self.how = how

    async def complete(self, turn: Turn, request: Request) -> Response:
        holds = turn.step_holds
        assert holds is not None  # a tool-loop turn: every step is held
        hold = await holds.hold_usd(0.5)
        await holds.settle(hold, STEP.cost_usd)
        if self.how == "answer":
            return Response(
                id="r",
                model="m",
                message=AssistantMessage(content=[TextPart(text="ok")]),
                stop_reason="stop",
                usage=STEP,
            )
        turn.spent = STEP  # what the tool loop layer leaves when it fails after a step answered
        if self.how == "fails":
            raise UpstreamError("step 2 failed", status=502)
        raise asyncio.CancelledError()

    async def stream(self, turn: Turn, request: Request) -> Batches:  # pragma: no cover - not used
        raise NotImplementedError


def _gateway(records: list[TurnRecord]) -> Gateway:
    cfg = parse_config(
        {
            "deployments": [
                {
                    "name": "m",
                    "api": "demo",
                    "model": "turnstile-demo",
                    "price": {"input": 1.0, "output": 1.0},
                }
            ]
        }
    )
    gw = Gateway(config=cfg, table=DeploymentTable.build(cfg, Settings()), providers={})
    gw.limits = MemoryLimits()
    gw.metrics.turn = lambda record, ttfb=None: records.append(record)  # type: ignore[method-assign]
    return gw


@pytest.mark.parametrize("how", ["answer", "fails", "cut"])
async def test_the_counter_charges_what_the_row_records_however_a_tool_loop_ends(how: str) -> None:
    records: list[TurnRecord] = []
    gw = _gateway(records)
    chain = RecordLayer(gw, LimitsLayer(gw, Loop(how)))
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], max_output_tokens=10)
    principal = Principal(
        key_id="k1",
        key_name="k",
        team_id=None,
        team_name=None,
        expires_at=None,
        key_budgets=(Budget(period="total", usd=1.0),),
    )
    turn = Turn(request_id="t1", dialect="openai", request=request, principal=principal)
    turn.candidates = [gw.table.deployments["m"]]
    turn.loop_tools = frozenset({"fx__echo"})
    raised: Any = None
    try:
        await chain.complete(turn, request)
    except (UpstreamError, asyncio.CancelledError) as err:
        raised = err
    assert (raised is None) == (how == "answer")
    assert [r.cost_usd for r in records] == [STEP.cost_usd]  # the row: what the step cost
    assert gw.limits.spent_usd("key:k1", "total") == (STEP.cost_usd, 0.0)  # the counter: the same
