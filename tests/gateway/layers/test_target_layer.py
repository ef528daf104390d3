"""The target layer's capability check: fields a client sent for one wire API go only to a
deployment of that API; a one-tool-call limit toward Gemini (no such setting) is named as
dropped."""

from __future__ import annotations

import pytest

from gateway.config import Deployment, GatewayConfig
from gateway.errors import CapabilityError
from gateway.layers.target import TargetLayer, check_capabilities
from gateway.schema import NativeFields, Request, TextPart, ToolChoice, ToolDefinition, UserMessage
from gateway.turn import Turn

REQ = Request(
    model="m",
    messages=[UserMessage(content=[TextPart(text="hi")])],
    native=NativeFields(api="gemini", fields={"safetySettings": []}, paths=["safetySettings"]),
)


LIMITED = Request(
    model="m",
    messages=[UserMessage(content=[TextPart(text="weather in Paris and Rome?")])],
    tool_choice=ToolChoice(mode="auto", parallel=False),
)


class _FakeGateway:
    """What the target layer reads of the gateway: its configuration."""

    config = GatewayConfig()


def test_native_fields_pass_to_a_deployment_of_their_wire_api() -> None:
    check_capabilities(REQ, Deployment(name="ge", api="gemini", model="gemini-2.5-pro"))


def test_native_fields_are_refused_by_name_toward_another_wire_api() -> None:
    with pytest.raises(CapabilityError) as info:
        check_capabilities(REQ, Deployment(name="oa", api="openai_chat", model="gpt-4o"))
    assert info.value.param == "safetySettings"
    assert "'oa'" in info.value.message and "gemini" in info.value.message


@pytest.mark.parametrize(
    ("dialect", "field", "value"),
    [
        ("openai_chat", "parallel_tool_calls", False),
        ("openai_responses", "parallel_tool_calls", False),
        ("anthropic_messages", "tool_choice.disable_parallel_tool_use", True),
    ],
)
def test_a_one_call_limit_toward_gemini_is_named_as_dropped(dialect: str, field: str, value: bool) -> None:
    dep = Deployment(name="ge", api="gemini", model="gemini-2.5-pro")
    turn = Turn(request_id="r", dialect=dialect, request=LIMITED)
    turn.deployment = dep
    layer = TargetLayer(_FakeGateway(), inner=None)  # type: ignore[arg-type]
    layer.for_target(turn, LIMITED)
    assert turn.dropped_fields() == [field]
    assert turn.dropped[0]["values"] == [value]


@pytest.mark.parametrize("api", ["openai_chat", "openai_responses", "anthropic_messages"])
def test_a_one_call_limit_reaching_its_wire_api_is_not_dropped(api: str) -> None:
    turn = Turn(request_id="r", dialect="openai_chat", request=LIMITED)
    turn.deployment = Deployment(name="d", api=api, model="m")
    TargetLayer(_FakeGateway(), inner=None).for_target(turn, LIMITED)  # type: ignore[arg-type]
    assert turn.dropped == ()


def _strict_request() -> Request:
    tool = ToolDefinition(
        name="get_weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        strict=True,
    )
    return Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], tools=[tool])


@pytest.mark.parametrize(
    ("api", "model", "dialect", "dropped"),
    [
        ("gemini", "gemini-2.5-pro", "openai_chat", ["tools[0].function.strict"]),
        ("anthropic_messages", "claude-sonnet-4-20250514", "openai_responses", ["tools[0].strict"]),
        ("anthropic_messages", "claude-sonnet-4-5", "openai_chat", []),
        ("openai_chat", "gpt-4o", "openai_chat", []),
    ],
)
def test_a_strict_tool_an_upstream_cannot_enforce_is_named_as_dropped(
    api: str, model: str, dialect: str, dropped: list[str]
) -> None:
    req = _strict_request()
    turn = Turn(request_id="r", dialect=dialect, request=req)
    turn.deployment = Deployment(name="d", api=api, model=model)
    TargetLayer(_FakeGateway(), inner=None).for_target(turn, req)  # type: ignore[arg-type]
    assert turn.dropped_fields() == dropped
