"""Deployment quotas as routing capacity (the route layer with :mod:`gateway.limits.quotas`):
a deployment at its provider's rate limit is skipped for the alias's next one before any call
reaches the provider's 429; with no deployment left, the quota's own 429."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import RateLimitExceeded
from gateway.layers.route import RouteLayer
from gateway.limits.memory import MemoryLimits
from gateway.schema import AssistantMessage, Request, Response, TextPart, Usage, UserMessage
from gateway.turn import Batches, Gateway, Turn

ANSWER = Response(
    id="r",
    model="m",
    message=AssistantMessage(content=[TextPart(text="ok")]),
    stop_reason="stop",
    usage=Usage(input_tokens=40, output_tokens=10),
)


class Inner:
    """Every deployment answers; ``tried`` says which were called."""

    def __init__(self) -> None:
        self.tried: list[str] = []

    async def complete(self, turn: Turn, request: Request) -> Response:
        assert turn.deployment is not None
        self.tried.append(turn.deployment.name)
        return ANSWER

    async def stream(self, turn: Turn, request: Request) -> Batches:
        await self.complete(turn, request)
        return _none()


async def _none() -> Batches:
    if False:  # pragma: no cover
        yield []


def _layer(quota_a: dict[str, Any], *, fallback: bool = True) -> tuple[RouteLayer, Inner]:
    cfg = parse_config(
        {
            "deployments": [
                {"name": "a", "api": "openai_chat", "model": "a", "quota": quota_a},
                {"name": "b", "api": "openai_chat", "model": "b"},
            ],
            "models": [{"name": "m", "deployments": ["a", "b"] if fallback else ["a"]}],
        }
    )
    gw = Gateway(config=cfg, table=DeploymentTable.build(cfg, Settings(), resolve_prices=False), providers={})
    gw.limits = MemoryLimits(clock=lambda: 1_000_000.0)
    inner = Inner()
    return RouteLayer(gw, inner), inner


def _turn() -> Turn:
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])])
    return Turn(request_id="t", dialect="openai_chat", request=request)


async def test_a_deployment_at_its_requests_per_minute_is_skipped_for_the_next() -> None:
    layer, inner = _layer({"rpm": 2})
    for _ in range(3):
        turn = _turn()
        await layer.complete(turn, turn.request)
    assert inner.tried == ["a", "a", "b"]
    assert any(str(a.get("skipped", "")).startswith("quota: ") for a in turn.attempts)


async def test_a_deployment_at_its_tokens_per_minute_is_skipped_once_the_answers_filled_it() -> None:
    layer, inner = _layer({"tpm": 100})
    for _ in range(4):  # 50 tokens an answer: two fill the window
        turn = _turn()
        await layer.complete(turn, turn.request)
    assert inner.tried == ["a", "a", "b", "b"]


async def test_concurrent_streams_hold_a_slot_until_they_end() -> None:
    layer, inner = _layer({"concurrent": 1})
    first = _turn()
    held = await layer.stream(first, first.request)  # open: its slot is held
    second = _turn()
    await layer.stream(second, second.request)
    assert inner.tried == ["a", "b"]
    async for _ in held:
        pass
    third = _turn()
    await layer.stream(third, third.request)
    assert inner.tried == ["a", "b", "a"]


async def test_with_no_deployment_left_the_turn_gets_the_quotas_429() -> None:
    layer, inner = _layer({"rpm": 1}, fallback=False)
    await layer.complete(_turn(), _turn().request)
    with pytest.raises(RateLimitExceeded) as caught:
        turn = _turn()
        await layer.complete(turn, turn.request)
    assert caught.value.scope == "deployment:a" and caught.value.retry_after_s is not None
    assert caught.value.headers["retry-after"] and inner.tried == ["a"]
