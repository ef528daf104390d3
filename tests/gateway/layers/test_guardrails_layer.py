"""The guardrails layer (a fake inner service stands for the attempt below): tool results
redacted or turned into error results for the same call before the model sees them, input
refused, output redacted or withheld (whole and streamed), each message checked once per turn;
with guardrails off the layer is not in the chain."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from gateway.config import GuardPolicy, Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import GuardrailBlocked
from gateway.guards.pairing import check_request
from gateway.layers.guardrails import GuardrailsLayer
from gateway.pipeline import Pipeline
from gateway.providers.base import Provider
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
)
from gateway.turn import Batches, Gateway, Turn

KEY = "ghp_" + "Zq8vN3kLw2Rt6Yp1Xs9Bc4Hd7Jf0Gm5Ua2Ve"  # a GitHub-format token made up for the test


class Inner:
    """The layers below: remembers each request, answers ``answer`` (or streams ``events``)."""

    def __init__(self, answer: str = "ok", events: list[list[StreamEvent]] | None = None) -> None:
        self.requests: list[Request] = []
        self.answer = answer
        self.events = events or []

    async def complete(self, turn: Turn, request: Request) -> Response:
        self.requests.append(request)
        msg = AssistantMessage(content=[TextPart(text=self.answer)])
        return Response(id="r", model="m", message=msg, stop_reason="stop")

    async def stream(self, turn: Turn, request: Request) -> Batches:
        self.requests.append(request)
        return _batches(self.events)


async def _batches(events: list[list[StreamEvent]]) -> AsyncIterator[list[Any]]:
    for batch in events:
        yield list(batch)


def _gateway(**guardrails: Any) -> Gateway:
    cfg = parse_config(
        {
            "deployments": [{"name": "m", "api": "demo", "model": "turnstile-demo"}],
            "guardrails": {"enabled": True, **guardrails},
        }
    )
    return Gateway(
        config=cfg, table=DeploymentTable.build(cfg, Settings(), resolve_prices=False), providers={}
    )


def _tool_turn(result_text: str) -> Turn:
    call = ToolCallPart(id="call_1", name="gh__get_token", arguments={})
    request = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="what is the token?")]),
            AssistantMessage(content=[call]),
            ToolResultMessage(
                tool_call_id="call_1", name="gh__get_token", content=[TextPart(text=result_text)]
            ),
        ],
    )
    return Turn(request_id="t", dialect="openai_chat", request=request)


async def test_a_secret_in_a_tool_result_is_redacted_before_the_model_sees_it_once_per_turn() -> None:
    gw = _gateway()
    inner = Inner()
    layer = GuardrailsLayer(gw, inner)
    turn = _tool_turn(f"token: {KEY}")
    await layer.complete(turn, turn.request)
    await layer.complete(turn, turn.request)  # a second deployment tried, or the next loop step
    sent = inner.requests[0].messages[2]
    assert isinstance(sent, ToolResultMessage) and sent.content[0].text == "token: [REDACTED:github_token]"  # type: ignore[union-attr]
    assert inner.requests[1].messages[2] == sent and turn.request.messages[2].content[0].text.endswith(KEY)  # type: ignore[union-attr]
    assert gw.metrics.guardrail_actions.labels("tool_output", "secrets", "redact")._value.get() == 1


async def test_a_blocked_tool_result_becomes_an_error_result_for_the_same_call() -> None:
    inner = Inner()
    layer = GuardrailsLayer(_gateway(secrets="block"), inner)
    turn = _tool_turn(f"token: {KEY}")
    await layer.complete(turn, turn.request)
    sent = inner.requests[0]
    result = sent.messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error and result.tool_call_id == "call_1"
    assert "secrets:github_token" in result.content[0].text and KEY not in result.content[0].text  # type: ignore[union-attr]
    assert (
        check_request(sent, GuardPolicy(pairing="reject", ordering="strict")).repairs == []
    )  # raises when unpaired


async def test_input_is_checked_only_when_configured_and_a_block_is_a_400_naming_the_message() -> None:
    turn = Turn(
        request_id="t",
        dialect="openai_chat",
        request=Request(model="m", messages=[UserMessage(content=[TextPart(text=f"use {KEY}")])]),
    )
    inner = Inner()
    await GuardrailsLayer(_gateway(), inner).complete(turn, turn.request)
    assert inner.requests[0] is turn.request  # input off: unchanged
    with pytest.raises(GuardrailBlocked) as err:
        await GuardrailsLayer(_gateway(input=True, secrets="block"), inner).complete(turn, turn.request)
    assert err.value.status == 400 and err.value.param == "messages[0]" and KEY not in err.value.message


async def test_output_is_redacted_or_withheld_with_stop_reason_content_filter() -> None:
    turn = _tool_turn("fine")
    redacted = await GuardrailsLayer(_gateway(output=True), Inner("mail ann@example.com")).complete(
        turn, turn.request
    )
    assert redacted.message.text == "mail [REDACTED:email]"
    blocked = await GuardrailsLayer(_gateway(output=True, secrets="block"), Inner(f"here: {KEY}")).complete(
        turn, turn.request
    )
    assert blocked.stop_reason == "content_filter" and KEY not in blocked.message.text


async def test_a_streamed_text_part_is_held_until_it_ends_so_a_split_secret_is_caught() -> None:
    events: list[list[StreamEvent]] = [
        [MessageStart(id="r", model="m"), PartStart(index=0, kind="text")],
        [PartDelta(index=0, text=f"key {KEY[:10]}")],
        [PartDelta(index=0, text=KEY[10:])],
        [PartEnd(index=0), MessageEnd(stop_reason="stop")],
    ]
    layer = GuardrailsLayer(_gateway(output=True), Inner(events=events))
    turn = _tool_turn("fine")
    got = [ev for batch in [b async for b in await layer.stream(turn, turn.request)] for ev in batch]
    text = "".join(ev.text or "" for ev in got if isinstance(ev, PartDelta))
    assert text == "key [REDACTED:github_token]"
    assert [type(ev).__name__ for ev in got] == [
        "MessageStart",
        "PartStart",
        "PartDelta",
        "PartEnd",
        "MessageEnd",
    ]


async def test_a_streamed_blocked_part_ends_the_message_with_content_filter() -> None:
    events: list[list[StreamEvent]] = [
        [MessageStart(id="r", model="m"), PartStart(index=0, kind="text"), PartDelta(index=0, text=KEY)],
        [PartEnd(index=0), MessageEnd(stop_reason="stop")],
    ]
    layer = GuardrailsLayer(_gateway(output=True, secrets="block"), Inner(events=events))
    turn = _tool_turn("fine")
    got = [ev for batch in [b async for b in await layer.stream(turn, turn.request)] for ev in batch]
    assert isinstance(got[-1], MessageEnd) and got[-1].stop_reason == "content_filter"
    assert all(KEY not in (getattr(ev, "text", None) or "") for ev in got)


def test_the_chain_has_the_layer_only_when_guardrails_are_on() -> None:
    def layers(gw: Gateway) -> list[str]:
        names, layer = [], Pipeline(gw).chain
        while layer is not None:
            names.append(type(layer).__name__)
            layer = getattr(layer, "inner", None)
        return names

    on = layers(_gateway())
    assert on[-3:] == ["WindowLayer", "GuardrailsLayer", "AttemptLayer"]
    cfg = parse_config({"deployments": [{"name": "m", "api": "demo", "model": "turnstile-demo"}]})
    off = Gateway(
        config=cfg, table=DeploymentTable.build(cfg, Settings(), resolve_prices=False), providers={}
    )
    assert "GuardrailsLayer" not in layers(off)


class _SecretTool:
    """The MCP registry and endpoint of a tool-loop turn: ``fx__dump`` returns a secret."""

    def __init__(self) -> None:
        tool = SimpleNamespace(description="dump", input_schema={"type": "object"})
        self.registry = SimpleNamespace(
            tools=lambda include_unavailable=False: [
                SimpleNamespace(server="fx", exposed="fx__dump", available=True, tool=tool)
            ],
            spec=lambda sid: object() if sid == "fx" else None,
            server_ids=lambda: ["fx"],
        )
        self.endpoint = self
        self.read_env = None

    async def call_for_loop(self, name: str, args: dict[str, Any], **kw: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=f"config: token={KEY}")])


class _CallsThenAnswers(Provider):
    """Calls ``fx__dump`` once, then answers; keeps every request it was sent."""

    api = "openai_chat"

    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def complete(self, request: Request, deployment: Any, api_key: str | None) -> Response:
        self.requests.append(request)
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return Response(
                id="r",
                model="p",
                message=AssistantMessage(content=[TextPart(text="done")]),
                stop_reason="stop",
            )
        call = ToolCallPart(id="c1", name="fx__dump", arguments={}, raw_arguments="{}")
        return Response(id="r", model="p", message=AssistantMessage(content=[call]), stop_reason="tool_use")

    async def stream(
        self, request: Request, deployment: Any, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        raise NotImplementedError


async def test_in_the_tool_loop_the_mcp_tool_output_reaches_the_model_redacted() -> None:
    cfg = parse_config(
        {
            "deployments": [{"name": "p", "api": "openai_chat", "model": "p"}],
            "guardrails": {"enabled": True},
        }
    )
    provider = _CallsThenAnswers()
    gw = Gateway(
        config=cfg,
        table=DeploymentTable.build(cfg, Settings(), resolve_prices=False),
        providers={"openai_chat": provider},
    )
    gw.mcp = _SecretTool()  # type: ignore[assignment]
    request = Request(
        model="p", messages=[UserMessage(content=[TextPart(text="dump it")])], mcp_servers=["fx"]
    )
    result = await Pipeline(gw).complete(Turn(request_id="t1", dialect="openai_chat", request=request))
    assert result.response.message.text == "done"
    step2 = provider.requests[1]
    (sent,) = [m for m in step2.messages if isinstance(m, ToolResultMessage)]
    assert sent.tool_call_id == "c1" and sent.content[0].text == "config: token=[REDACTED:github_token]"  # type: ignore[union-attr]
    assert KEY not in step2.model_dump_json()
