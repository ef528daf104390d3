"""The attempt layer holds a streamed tool call until its stop reason is known (invariant 3)
and meanwhile hands on an empty batch (``KEEPALIVE``) every ``server.stream_keepalive_s``
seconds, for which the server sends the dialect's keep-alive (a break-test saw 41 s of silence
while an upstream streamed a tool call's arguments). A fake clock stands for time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.config import Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.layers import attempt as attempt_module
from gateway.layers.attempt import AttemptLayer
from gateway.providers.base import Provider
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    StreamEvent,
    TextPart,
    Usage,
    UserMessage,
)
from gateway.turn import KEEPALIVE, Gateway, Turn

DELTAS = 6


class SlowToolCall(Provider):
    """A stream whose tool call's arguments come in :data:`DELTAS` network reads."""

    async def complete(self, request: Request, deployment: Any, api_key: str | None) -> Any:
        raise NotImplementedError

    async def stream(
        self, request: Request, deployment: Any, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        async for batch in self.stream_batches(request, deployment, api_key):
            for event in batch:
                yield event

    async def stream_batches(
        self, request: Request, deployment: Any, api_key: str | None
    ) -> AsyncIterator[list[StreamEvent]]:
        yield [MessageStart(id="m", model="m")]
        yield [PartStart(index=0, kind="tool_call", id="call_1", name="f")]
        for _ in range(DELTAS):
            yield [PartDelta(index=0, text='{"a"')]
        yield [
            PartEnd(index=0),
            MessageEnd(stop_reason="tool_use", usage=Usage(input_tokens=1, output_tokens=1)),
        ]


def _gateway(keepalive_s: float) -> Gateway:
    cfg = parse_config(
        {
            "server": {"stream_keepalive_s": keepalive_s},
            "deployments": [{"name": "d", "api": "openai_chat", "model": "d"}],
        }
    )
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    return Gateway(config=cfg, table=table, providers={"openai_chat": SlowToolCall()})


async def _batches(gw: Gateway) -> list[list[Any]]:
    request = Request(model="d", stream=True, messages=[UserMessage(content=[TextPart(text="hi")])])
    turn = Turn(request_id="t", dialect="openai_chat", request=request)
    turn.deployment = gw.table.deployments["d"]
    return [list(b) async for b in await AttemptLayer(gw).stream(turn, request)]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [0.0]

    def monotonic() -> float:
        now[0] += 10.0  # each look at the clock: ten seconds later
        return now[0]

    monkeypatch.setattr(attempt_module.time, "monotonic", monotonic)
    return now


async def test_held_tool_call_arguments_are_kept_alive_every_interval(clock: list[float]) -> None:
    batches = await _batches(_gateway(15.0))
    keepalives = [b for b in batches if b == KEEPALIVE]
    assert len(keepalives) == DELTAS // 2  # one per 15 s of a clock read every 10 s
    events = [e for b in batches for e in b]
    assert [type(e).__name__ for e in events] == [
        "MessageStart",
        "PartStart",
        *["PartDelta"] * DELTAS,
        "PartEnd",
        "MessageEnd",
    ]


async def test_no_keep_alive_before_the_interval(clock: list[float]) -> None:
    batches = await _batches(_gateway(1000.0))
    assert KEEPALIVE not in batches
