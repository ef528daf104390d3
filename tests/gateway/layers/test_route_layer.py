"""The route layer: one decision per turn, one fallback loop for whole answers and streams
(a fake inner service stands for the layers below)."""

from __future__ import annotations

from typing import Any

from gateway.config import Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import UpstreamError
from gateway.layers.route import RouteLayer
from gateway.schema import AssistantMessage, Request, Response, TextPart, UserMessage
from gateway.turn import Batches, Gateway, Turn

CONFIG: dict[str, Any] = {
    "deployments": [
        {"name": "a", "api": "openai_chat", "model": "a"},
        {"name": "b", "api": "openai_chat", "model": "b"},
    ],
    "models": [{"name": "m", "deployments": ["a", "b"]}],
}
ANSWER = Response(
    id="r", model="b", message=AssistantMessage(content=[TextPart(text="ok")]), stop_reason="stop"
)


class Inner:
    """The layers below: ``a`` fails with ``error`` (whole and stream), ``b`` answers."""

    def __init__(self, error: UpstreamError) -> None:
        self.error = error
        self.tried: list[str] = []

    async def complete(self, turn: Turn, request: Request) -> Response:
        assert turn.deployment is not None
        self.tried.append(turn.deployment.name)
        if turn.deployment.name == "a":
            raise self.error
        return ANSWER

    async def stream(self, turn: Turn, request: Request) -> Batches:
        await self.complete(turn, request)
        return _none()


async def _none() -> Batches:
    if False:  # pragma: no cover
        yield []


def _layer(inner: Inner) -> tuple[RouteLayer, Gateway]:
    cfg = parse_config(CONFIG)
    gw = Gateway(config=cfg, table=DeploymentTable.build(cfg, Settings(), resolve_prices=False), providers={})
    return RouteLayer(gw, inner), gw


def _turn() -> Turn:
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])])
    return Turn(request_id="t", dialect="openai_chat", request=request)


async def test_the_decision_is_made_once_per_turn_and_reused_by_later_model_steps() -> None:
    inner = Inner(UpstreamError("down", status=503))
    layer, _ = _layer(inner)
    turn = _turn()
    await layer.complete(turn, turn.request)
    order = turn.order
    await layer.complete(turn, turn.request)  # a tool loop's next step
    assert turn.order is order and [a["kind"] for a in turn.attempts if "kind" in a] == ["route"]
    assert inner.tried == ["a", "b", "a", "b"]


async def test_whole_answers_and_streams_fall_back_alike_and_charge_the_failing_deployment() -> None:
    for stream in (False, True):
        inner = Inner(UpstreamError("deployment 'a' closed the stream without data", deployment="a"))
        layer, gw = _layer(inner)
        turn = _turn()
        await (layer.stream(turn, turn.request) if stream else layer.complete(turn, turn.request))
        assert inner.tried == ["a", "b"] and turn.deployment is not None and turn.deployment.name == "b"
        assert [a.get("status") for a in turn.attempts if "status" in a] == [502]
        assert gw.routing is not None and gw.routing.health.failing("a")
