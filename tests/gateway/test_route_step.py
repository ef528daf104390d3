"""Routing inside the pipeline: decision header and record, fallback order, cooldown with
retry-after, circuit breaker, retry budget, context overflow, cascade, and C16 (scripted
providers, fake clock; no network, no sleeps)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.config import Deployment, Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import UpstreamError, UpstreamTimeout
from gateway.pipeline import Gateway, Pipeline, TurnContext
from gateway.providers.base import Provider
from gateway.providers.demo import response_events
from gateway.schema import (
    AssistantMessage,
    Provenance,
    Request,
    Response,
    StreamEvent,
    TextPart,
    ThinkingConfig,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from gateway.transcript import TranscriptWriter, recent
from routers.engine import RoutingEngine
from routers.health import HealthBoard, HealthSettings


def ok(text: str = "ok") -> Response:
    return Response(
        id="r",
        model="m",
        message=AssistantMessage(content=[TextPart(text=text)]),
        stop_reason="stop",
        usage=Usage(input_tokens=100, output_tokens=10),
    )


Item = Response | Exception | Callable[[Request], Response]


class ByDeployment(Provider):
    """Per deployment, a script of answers; the last item repeats forever."""

    api = "openai_chat"

    def __init__(self, **scripts: list[Item]) -> None:
        self.scripts = scripts
        self.calls: list[tuple[str, Request]] = []

    def _next(self, request: Request, dep: Deployment) -> Response:
        self.calls.append((dep.name, request))
        script = self.scripts[dep.name]
        item = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(item, Exception):
            raise item
        return item(request) if callable(item) else item

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        return self._next(request, deployment)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        for ev in response_events(self._next(request, deployment), chunk_chars=4):
            yield ev

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


CHEAP = {"input": 0.15, "output": 0.6}
STRONG = {"input": 3.0, "output": 15.0}
CONFIG: dict[str, Any] = {
    "deployments": [
        {"name": "mini", "api": "openai_chat", "model": "mini", "price": CHEAP, "context_window": 8000},
        {"name": "mini-2", "api": "openai_chat", "model": "mini-2", "price": CHEAP, "context_window": 8000},
        {"name": "big", "api": "openai_chat", "model": "big", "price": STRONG, "context_window": 200000},
        {"name": "model-A", "api": "anthropic_messages", "model": "model-a", "price": STRONG},
        {"name": "model-B", "api": "anthropic_messages", "model": "model-b", "price": CHEAP},
    ],
    "models": [
        {
            "name": "auto",
            "deployments": ["big", "mini", "mini-2"],
            "routing": {
                "policy": "rules",
                "tiers": {"cheap": ["mini", "mini-2"], "strong": ["big"]},
                "rules": [{"kind": ["fresh_user"], "max_input_tokens": 2000, "tier": "cheap"}],
            },
        },
        {
            "name": "casc",
            "deployments": ["mini", "big"],
            "routing": {"policy": "cascade", "tiers": {"cheap": ["mini"], "strong": ["big"]}},
        },
        {
            "name": "claude",
            "deployments": ["model-A", "model-B"],
            "routing": {
                "policy": "rules",
                "tiers": {"cheap": ["model-B"], "strong": ["model-A"]},
                "rules": [{"tier": "cheap"}],
            },
        },
    ],
}


async def _pipe(
    provider: ByDeployment, tmp_path: Path, clock: Clock | None = None, **health: float
) -> tuple[Pipeline, TranscriptWriter, Gateway]:
    cfg = parse_config(CONFIG)
    writer = TranscriptWriter(tmp_path / "t.db")
    await writer.start()
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    gw = Gateway(
        config=cfg,
        table=table,
        providers={"openai_chat": provider, "anthropic_messages": provider},
        transcript=writer,
    )
    gw.routing = RoutingEngine(
        cfg, health=HealthBoard(settings=HealthSettings(**health), clock=clock or Clock())
    )
    return Pipeline(gw), writer, gw


_IDS = itertools.count()


def _ctx(*messages: Any, model: str = "auto", **kw: Any) -> TurnContext:
    return TurnContext(
        request_id=f"req-{next(_IDS)}",
        dialect="openai_chat",
        request=Request(model=model, messages=list(messages), **kw),
    )


USER = UserMessage(content=[TextPart(text="hi")])


async def test_decision_is_returned_in_a_header_and_recorded_first_in_attempts(tmp_path: Path) -> None:
    provider = ByDeployment(mini=[ok()], **{"mini-2": [ok()]}, big=[ok()])
    pipe, writer, _ = await _pipe(provider, tmp_path)
    result = await pipe.complete(_ctx(USER))
    await writer.close()
    assert provider.names() == ["mini"]
    assert result.headers["x-turnstile-route"].startswith("mini; rules: rule[0]")
    attempts = orjson.loads(recent(tmp_path / "t.db")[0]["attempts"])
    assert attempts[0]["kind"] == "route" and attempts[0]["route"] == "mini"
    assert attempts[0]["fallbacks"] == ["mini-2", "big"] and attempts[0]["turn_kind"] == "fresh_user"


async def test_with_one_deployment_failing_every_request_succeeds_and_its_circuit_opens(
    tmp_path: Path,
) -> None:
    provider = ByDeployment(mini=[UpstreamError("boom", status=500)], **{"mini-2": [ok("two")]}, big=[ok()])
    pipe, writer, gw = await _pipe(provider, tmp_path, failure_threshold=3, cooldown_s=0)
    texts = [(await pipe.complete(_ctx(USER))).response.message.text for _ in range(20)]
    await writer.close()
    assert texts == ["two"] * 20
    assert provider.names().count("mini") == 3  # then the open circuit keeps it out
    assert gw.routing.health.state("mini") == "open"
    routes = [orjson.loads(r["attempts"])[0] for r in recent(tmp_path / "t.db", 50)]
    assert sum(r["excluded"] == {"mini": "circuit open"} for r in routes) == 17


async def test_retry_after_cools_the_deployment_down_for_that_long(tmp_path: Path) -> None:
    clock = Clock()
    provider = ByDeployment(
        mini=[UpstreamError("slow down", status=429, retry_after_s=30), ok("mini")],
        **{"mini-2": [ok("two")]},
        big=[ok()],
    )
    pipe, writer, _ = await _pipe(provider, tmp_path, clock, cooldown_s=1)
    assert (await pipe.complete(_ctx(USER))).response.message.text == "two"
    clock.t = 29
    assert (await pipe.complete(_ctx(USER))).response.message.text == "two"
    clock.t = 31
    assert (await pipe.complete(_ctx(USER))).response.message.text == "mini"
    await writer.close()
    assert provider.names() == ["mini", "mini-2", "mini-2", "mini"]


async def test_timeouts_and_5xx_fall_back_in_decision_order(tmp_path: Path) -> None:
    provider = ByDeployment(
        mini=[UpstreamTimeout("first byte", deployment="mini")],
        **{"mini-2": [UpstreamError("bad gateway", status=502)]},
        big=[ok("big")],
    )
    pipe, writer, _ = await _pipe(provider, tmp_path)
    result = await pipe.complete(_ctx(USER))
    await writer.close()
    assert provider.names() == ["mini", "mini-2", "big"] and result.response.message.text == "big"


async def test_exhausted_retry_budget_stops_fallbacks_onto_a_failing_deployment(tmp_path: Path) -> None:
    provider = ByDeployment(mini=[UpstreamError("boom", status=500)], **{"mini-2": [ok()]}, big=[ok()])
    pipe, writer, gw = await _pipe(provider, tmp_path, cooldown_s=0)
    for failing in ("mini-2", "big"):  # failed before, not cooling down: still routed to
        gw.routing.health.failure(failing)
    gw.routing.health.budget.tokens = 0.0
    gw.routing.health.budget.ratio = 0.0
    with pytest.raises(UpstreamError, match="boom"):
        await pipe.complete(_ctx(USER))
    await writer.close()
    assert provider.names() == ["mini"]
    attempts = orjson.loads(recent(tmp_path / "t.db")[0]["attempts"])
    assert {"deployment": "mini-2", "skipped": "retry budget exhausted"} in attempts
    assert {"deployment": "big", "skipped": "retry budget exhausted"} in attempts


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
async def test_a_failover_to_a_deployment_that_has_not_failed_needs_no_retry_budget(
    tmp_path: Path, stream: bool
) -> None:
    provider = ByDeployment(
        mini=[UpstreamError("slow down", status=429)], **{"mini-2": [ok("two")]}, big=[ok()]
    )
    pipe, writer, gw = await _pipe(provider, tmp_path)
    gw.routing.health.budget.tokens = 0.0
    gw.routing.health.budget.ratio = 0.0
    if stream:
        turn = await pipe.open_stream(_ctx(USER, stream=True))
        _ = [e async for e in turn.events]
    else:
        assert (await pipe.complete(_ctx(USER))).response.message.text == "two"
    await writer.close()
    assert provider.names() == ["mini", "mini-2"]
    assert gw.routing.health.budget.tokens == 0.0, "a failover takes no token"


async def test_context_overflow_falls_back_to_a_larger_window_only(tmp_path: Path) -> None:
    overflow = UpstreamError("This model's maximum context length is 8000 tokens", status=400)
    provider = ByDeployment(mini=[overflow], **{"mini-2": [ok("never")]}, big=[ok("big")])
    pipe, writer, _ = await _pipe(provider, tmp_path)
    result = await pipe.complete(_ctx(USER))
    await writer.close()
    assert provider.names() == ["mini", "big"] and result.response.message.text == "big"
    attempts = orjson.loads(recent(tmp_path / "t.db")[0]["attempts"])
    assert {"deployment": "mini-2", "skipped": "window 8000 <= 8000"} in attempts


async def test_a_turn_too_long_for_the_cheap_window_is_routed_to_the_big_one(tmp_path: Path) -> None:
    provider = ByDeployment(mini=[ok()], **{"mini-2": [ok()]}, big=[ok("big")])
    pipe, writer, _ = await _pipe(provider, tmp_path)
    long = UserMessage(content=[TextPart(text="x" * 40_000)])
    result = await pipe.complete(_ctx(long))
    await writer.close()
    assert provider.names() == ["big"] and "window 8000" in str(recent(tmp_path / "t.db")[0]["attempts"])
    assert result.headers["x-turnstile-route"].startswith("big; rules: no rule matched")


def _tool_request(model: str) -> dict[str, Any]:
    tool = ToolDefinition(
        name="get_price",
        parameters={"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
    )
    return {"model": model, "tools": [tool]}


async def test_cascade_escalates_an_invalid_tool_call_and_pays_for_both(tmp_path: Path) -> None:
    bad = Response(
        id="r",
        model="m",
        stop_reason="tool_use",
        usage=Usage(input_tokens=1_000_000, output_tokens=0),
        message=AssistantMessage(
            content=[ToolCallPart(id="c1", name="get_price", raw_arguments='{"sku":1}')]
        ),
    )
    good = Response(
        id="r",
        model="m",
        stop_reason="tool_use",
        usage=Usage(input_tokens=1_000_000, output_tokens=0),
        message=AssistantMessage(
            content=[
                ToolCallPart(id="c2", name="get_price", raw_arguments='{"sku":"X"}', arguments={"sku": "X"})
            ]
        ),
    )
    provider = ByDeployment(mini=[bad], big=[good])
    pipe, writer, _ = await _pipe(provider, tmp_path)
    ctx = TurnContext(
        request_id="req", dialect="openai_chat", request=Request(messages=[USER], **_tool_request("casc"))
    )
    result = await pipe.complete(ctx)
    await writer.close()
    assert provider.names() == ["mini", "big"]
    assert result.response.message.tool_calls[0].id == "c2"
    assert result.response.usage.cost_usd == pytest.approx(0.15 + 3.0)
    attempts = orjson.loads(recent(tmp_path / "t.db")[0]["attempts"])
    escalation = next(a for a in attempts if a.get("kind") == "cascade_escalation")
    assert "invalid at sku" in escalation["reason"] and escalation["wasted_cost_usd"] == pytest.approx(0.15)


async def test_cascade_keeps_a_valid_cheap_answer(tmp_path: Path) -> None:
    provider = ByDeployment(mini=[ok("fine")], big=[ok("big")])
    pipe, writer, _ = await _pipe(provider, tmp_path)
    result = await pipe.complete(_ctx(USER, model="casc"))
    await writer.close()
    assert provider.names() == ["mini"] and result.response.message.text == "fine"


A = Provenance(api="anthropic_messages", provider="anthropic", model="model-a")
SIGNED = ThinkingPart(text="Need the price tool.", signature="SIG_A_opaque", provenance=A)


def _c16_turn2() -> TurnContext:
    call = ToolCallPart(
        id="toolu_k1", name="get_price", raw_arguments='{"sku":"X1"}', arguments={"sku": "X1"}
    )
    msgs = [
        UserMessage(content=[TextPart(text="Price of SKU X1?")]),
        AssistantMessage(content=[SIGNED, call]),
        ToolResultMessage(tool_call_id="toolu_k1", content=[TextPart(text="9.99")]),
    ]
    return TurnContext(
        request_id="req",
        dialect="anthropic_messages",
        request=Request(
            messages=msgs,
            thinking=ThinkingConfig(budget_tokens=1024),
            max_output_tokens=2048,
            **_tool_request("claude"),
        ),
    )


async def test_c16_open_signed_tool_loop_goes_back_to_the_signing_model_byte_identical(
    tmp_path: Path,
) -> None:
    provider = ByDeployment(**{"model-A": [ok("A")], "model-B": [ok("B")]})
    pipe, writer, _ = await _pipe(provider, tmp_path)
    result = await pipe.complete(_c16_turn2())  # the rules alone would pick the cheaper model-B
    await writer.close()
    dep, sent = provider.calls[0]
    assert dep == "model-A" and result.response.message.text == "A"
    assert sent.messages[1].content[0] == SIGNED
    assert "open tool loop with signed thinking" in result.headers["x-turnstile-route"]


async def test_c16_when_the_signing_model_is_down_the_signature_never_reaches_the_other(
    tmp_path: Path,
) -> None:
    provider = ByDeployment(**{"model-A": [UpstreamError("overloaded", status=529)], "model-B": [ok("B")]})
    pipe, writer, _ = await _pipe(provider, tmp_path)
    result = await pipe.complete(_c16_turn2())
    await writer.close()
    assert provider.names() == ["model-A", "model-B"] and result.response.message.text == "B"
    sent_to_b = provider.calls[1][1]
    assert "SIG_A_opaque" not in sent_to_b.model_dump_json()
    assert sent_to_b.thinking is not None and sent_to_b.thinking.enabled is False


async def test_stream_records_health_and_falls_back_before_the_first_byte(tmp_path: Path) -> None:
    provider = ByDeployment(mini=[UpstreamError("busy", status=503)], **{"mini-2": [ok("two")]}, big=[ok()])
    pipe, writer, gw = await _pipe(provider, tmp_path)
    turn = await pipe.open_stream(_ctx(USER, stream=True))
    _ = [e async for e in turn.events]
    await writer.close()
    assert provider.names() == ["mini", "mini-2"] and turn.headers["x-turnstile-deployment"] == "mini-2"
    assert "x-turnstile-route" in turn.headers
    assert (
        gw.routing.health.unavailable("mini") is not None and gw.routing.health.latency("mini-2") is not None
    )
