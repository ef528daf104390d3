"""Cascade validation: what makes a cheap answer escalate."""

from __future__ import annotations

from helpers_routing import two_tiers

from gateway.config import RoutingConfig
from gateway.schema import (
    AssistantMessage,
    Request,
    Response,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    UserMessage,
    WithheldToolCall,
)
from routers.cascade import CascadeRouter, validate
from routers.features import extract

TOOL = ToolDefinition(
    name="get_price",
    parameters={
        "type": "object",
        "properties": {"sku": {"type": "string"}},
        "required": ["sku"],
        "additionalProperties": False,
    },
)
REQ = Request(model="auto", messages=[UserMessage(content=[TextPart(text="Price of X1?")])], tools=[TOOL])


def _resp(*parts: object, stop: str = "stop", **kw: object) -> Response:
    return Response(id="r", model="m", message=AssistantMessage(content=list(parts)), stop_reason=stop, **kw)  # type: ignore[arg-type]


def _call(raw: str, name: str = "get_price") -> ToolCallPart:
    return ToolCallPart(id="c1", name=name, raw_arguments=raw)


def test_valid_tool_call_and_plain_answers_pass() -> None:
    assert validate(REQ, _resp(_call('{"sku":"X1"}'), stop="tool_use")) is None
    assert validate(REQ, _resp(TextPart(text="It costs 9.99."))) is None


def test_arguments_invalid_against_the_tool_schema_escalate_naming_the_place() -> None:
    why = validate(REQ, _resp(_call('{"sku": 12}'), stop="tool_use"))
    assert why is not None and "invalid at sku" in why
    assert "required" in (validate(REQ, _resp(_call("{}"), stop="tool_use")) or "")
    assert "not valid JSON" in (validate(REQ, _resp(_call('{"sku": "X'), stop="tool_use")) or "")
    assert "unknown tool" in (
        validate(REQ, _resp(_call('{"sku":"X1"}', name="rm_rf"), stop="tool_use")) or ""
    )


def test_empty_refused_and_truncated_answers_escalate() -> None:
    assert validate(REQ, _resp()) == "empty answer"
    assert validate(REQ, _resp(TextPart(text="I'm sorry, but I can't help with that."))) == "refused"
    assert validate(REQ, _resp(TextPart(text="partial"), stop="length")) == "truncated"
    withheld = [WithheldToolCall(id="c1", name="get_price", raw_arguments='{"s', reason="length")]
    assert validate(REQ, _resp(TextPart(text="x"), withheld_tool_calls=withheld)) == "truncated"
    assert validate(REQ, _resp(TextPart(text="..."), stop="content_filter")) == "refused (content filter)"


def test_cascade_starts_cheap_and_never_cascades_a_stream() -> None:
    cfg = RoutingConfig(policy="cascade", tiers={"cheap": ["mini"], "strong": ["big"]})
    _, cands = two_tiers()
    f = extract(REQ)
    d = CascadeRouter(cfg).decide(f, cands)
    assert d.order == ["mini", "big"] and d.cascade
    s = CascadeRouter(cfg).decide(f, cands, stream=True)
    assert s.deployment == "big" and not s.cascade and "streaming" in s.reason
