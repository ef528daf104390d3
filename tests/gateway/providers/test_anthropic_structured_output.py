"""Structured output on the Anthropic Messages upstream (gateway/providers/anthropic_output.py,
anthropic_schema.py): the native ``output_config.format`` slot with the schema as the SDK
transforms it, the forced output tool for older models, and that tool's call mapped back to
plain text, whole and streamed."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from _wire_helpers import collect, replay

from gateway.config import Deployment
from gateway.providers import anthropic_messages
from gateway.providers.anthropic_schema import has_native_output, to_anthropic_schema
from gateway.schema import (
    Request,
    ResponseFormat,
    TextPart,
    ThinkingConfig,
    ToolChoice,
    ToolDefinition,
    UserMessage,
)

SCHEMA = {
    "type": "object",
    "title": "Order",
    "properties": {
        "product": {"type": "string", "maxLength": 40},
        "quantity": {"type": "integer", "minimum": 1},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "kind": {"oneOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
    },
    "required": ["product", "quantity"],
}


def dep(model: str = "claude-sonnet-4-5", **kw: Any) -> Deployment:
    return Deployment(name="an", api="anthropic_messages", model=model, **kw)


def req(fmt: ResponseFormat | None = None, **kw: Any) -> Request:
    return Request(
        model="m", messages=[UserMessage(content=[TextPart(text="order 2 tea")])], response_format=fmt, **kw
    )


def schema_format(schema: dict[str, Any] | None = None) -> ResponseFormat:
    return ResponseFormat(type="json_schema", name="Order", schema=schema or SCHEMA)


def built(r: Request, d: Deployment) -> tuple[dict[str, Any], Any]:
    up, ctx = anthropic_messages.build_request(r, d, "sk-ant")
    return dict(orjson.loads(up.body)), ctx


# ------------------------------------------------------------------------ native slot


def test_a_json_schema_goes_in_output_config_format_on_a_current_model() -> None:
    body, ctx = built(req(schema_format()), dep())
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": to_anthropic_schema(SCHEMA)}}
    assert "tools" not in body and "tool_choice" not in body
    assert ctx.output_tool is None


def test_the_schema_is_normalised_as_the_sdk_transform_does() -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib._parse._transform import transform_schema

    assert to_anthropic_schema(SCHEMA) == transform_schema(SCHEMA)
    out = to_anthropic_schema(SCHEMA)
    assert out["additionalProperties"] is False
    assert out["properties"]["quantity"] == {"type": "integer", "description": "{minimum: 1}"}
    assert out["properties"]["product"]["description"] == "{maxLength: 40}"
    assert out["properties"]["when"]["format"] == "date-time"
    assert "minItems" not in out["properties"]["tags"]
    assert out["properties"]["kind"]["anyOf"][0]["enum"] == ["a", "b"]


def test_the_transform_is_a_fixed_point() -> None:
    once = to_anthropic_schema(SCHEMA)
    assert to_anthropic_schema(once) == once


def test_defs_and_refs_are_kept_and_their_objects_closed() -> None:
    schema = {
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
    }
    out = to_anthropic_schema(schema)
    assert out["$defs"]["Item"]["additionalProperties"] is False
    assert out["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}


def test_a_schema_the_native_slot_cannot_state_uses_the_output_tool() -> None:
    schema = {"type": "object", "properties": {"anything": {}}}
    body, ctx = built(req(schema_format(schema)), dep())
    assert "output_config" not in body
    assert ctx.output_tool == "json_output"
    assert body["tools"][-1]["input_schema"] == schema


@pytest.mark.parametrize(
    ("model", "native"),
    [
        ("claude-sonnet-4-5", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-opus-4-6", True),
        ("claude-haiku-4-5@20251001", True),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("claude-opus-5", True),
        ("claude-sonnet-4-20250514", False),
        ("claude-opus-4-1-20250805", False),
        ("claude-3-5-sonnet-20241022", False),
        ("claude-3-opus-20240229", False),
        ("claude-2.1", False),
        ("my-proxy-model", True),
    ],
)
def test_which_models_have_the_native_slot(model: str, native: bool) -> None:
    assert has_native_output(model) is native


# ------------------------------------------------------------------------ forced tool


def test_an_older_model_gets_a_forced_output_tool() -> None:
    body, ctx = built(req(schema_format()), dep("claude-sonnet-4-20250514"))
    assert "output_config" not in body
    assert body["tools"] == [
        {"name": "json_output", "description": body["tools"][0]["description"], "input_schema": SCHEMA}
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "json_output"}
    assert ctx.output_tool == "json_output" and not ctx.output_wrapped


def test_the_config_can_force_the_tool_form_or_the_native_one() -> None:
    _, ctx = built(req(schema_format()), dep("claude-sonnet-4-5", structured_output="tool"))
    assert ctx.output_tool == "json_output"
    body, ctx = built(req(schema_format()), dep("claude-3-haiku", structured_output="native"))
    assert ctx.output_tool is None and "output_config" in body


def test_with_client_tools_the_choice_is_any_and_the_name_does_not_collide() -> None:
    tools = [ToolDefinition(name="json_output"), ToolDefinition(name="lookup")]
    body, ctx = built(req(schema_format(), tools=tools), dep("claude-sonnet-4-20250514"))
    assert ctx.output_tool == "json_output_2"
    assert [t["name"] for t in body["tools"]] == ["json_output", "lookup", "json_output_2"]
    assert body["tool_choice"] == {"type": "any"}


def test_a_named_client_choice_is_kept_and_none_forces_the_answer() -> None:
    tools = [ToolDefinition(name="lookup")]
    named = req(schema_format(), tools=tools, tool_choice=ToolChoice(mode="tool", name="lookup"))
    assert built(named, dep("claude-3-haiku"))[0]["tool_choice"] == {"type": "tool", "name": "lookup"}
    none = req(schema_format(), tools=tools, tool_choice=ToolChoice(mode="none"))
    assert built(none, dep("claude-3-haiku"))[0]["tool_choice"] == {"type": "tool", "name": "json_output"}


def test_with_thinking_on_the_output_tool_is_not_forced() -> None:
    r = req(schema_format(), thinking=ThinkingConfig(budget_tokens=2048), max_output_tokens=8000)
    body, _ = built(r, dep("claude-sonnet-4-20250514"))
    assert body["tool_choice"] == {"type": "auto"}


def test_a_non_object_root_is_wrapped_in_value() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    body, ctx = built(req(schema_format(schema)), dep("claude-3-haiku"))
    assert body["tools"][0]["input_schema"] == {
        "type": "object",
        "properties": {"value": schema},
        "required": ["value"],
    }
    assert ctx.output_wrapped


def test_json_object_is_emulated_by_an_object_tool_on_every_model() -> None:
    body, ctx = built(req(ResponseFormat(type="json_object")), dep("claude-sonnet-4-5"))
    assert "output_config" not in body
    assert body["tools"][0]["input_schema"] == {"type": "object"}
    assert ctx.output_tool == "json_output"


def test_text_format_changes_nothing() -> None:
    body, ctx = built(req(ResponseFormat(type="text")), dep())
    assert "output_config" not in body and "tools" not in body and ctx.output_tool is None


# ------------------------------------------------------------------------ mapping back


def _tool_answer(name: str, args: dict[str, Any], extra: list[dict[str, Any]] | None = None) -> bytes:
    content = [{"type": "tool_use", "id": "toolu_1", "name": name, "input": args}, *(extra or [])]
    return orjson.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": content,
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def test_the_output_tool_call_comes_back_as_text_with_stop() -> None:
    _, ctx = built(req(schema_format()), dep("claude-sonnet-4-20250514"))
    resp = anthropic_messages.parse_response(
        _tool_answer("json_output", {"product": "tea", "quantity": 2}), ctx
    )
    assert resp.stop_reason == "stop"
    assert resp.message.tool_calls == []
    assert json.loads(resp.message.text) == {"product": "tea", "quantity": 2}


def test_a_wrapped_answer_comes_back_as_its_value() -> None:
    _, ctx = built(req(schema_format({"type": "array", "items": {"type": "integer"}})), dep("claude-3-haiku"))
    resp = anthropic_messages.parse_response(_tool_answer("json_output", {"value": [1, 2]}), ctx)
    assert resp.message.text == "[1,2]"


def test_a_client_tool_called_beside_the_answer_stays_a_tool_call() -> None:
    r = req(schema_format(), tools=[ToolDefinition(name="lookup")])
    _, ctx = built(r, dep("claude-3-haiku"))
    other = {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {}}
    resp = anthropic_messages.parse_response(_tool_answer("json_output", {"product": "x"}, [other]), ctx)
    assert resp.stop_reason == "tool_use"
    assert [c.name for c in resp.message.tool_calls] == ["lookup"]


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _tool_stream(name: str, fragments: list[str]) -> bytes:
    return _sse(
        [
            {
                "type": "message_start",
                "message": {"id": "msg_1", "model": "claude-3-haiku", "usage": {"input_tokens": 9}},
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}},
            },
            *(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": f},
                }
                for f in fragments
            ),
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}},
            {"type": "message_stop"},
        ]
    )


def test_a_streamed_output_tool_call_streams_as_text_with_stop() -> None:
    _, ctx = built(req(schema_format(), stream=True), dep("claude-3-haiku"))
    events = replay(
        anthropic_messages.new_stream_parser(ctx),
        _tool_stream("json_output", ['{"product"', ': "tea", "quantity": 2}']),
    )
    resp = collect(events)
    assert resp.stop_reason == "stop"
    assert resp.message.tool_calls == []
    assert json.loads(resp.message.text) == {"product": "tea", "quantity": 2}
    assert sum(1 for e in events if getattr(e, "text", None)) == 2  # streamed as it came


def test_a_streamed_wrapped_answer_is_held_and_unwrapped() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    _, ctx = built(req(schema_format(schema), stream=True), dep("claude-3-haiku"))
    resp = collect(
        replay(
            anthropic_messages.new_stream_parser(ctx), _tool_stream("json_output", ['{"value": [1,', " 2]}"])
        )
    )
    assert resp.message.text == "[1,2]"
    assert resp.stop_reason == "stop"


# ------------------------------------------------------------------------ headers


def test_client_betas_merge_with_the_deployments_and_the_clients_version_wins() -> None:
    d = dep(
        quirks={
            "extra_headers": {
                "Anthropic-Beta": "conf-1,shared",
                "anthropic-version": "2023-01-01",
                "x-extra": "1",
            }
        }
    )
    r = req(anthropic_betas=["shared", "client-2"], anthropic_version="2023-06-01")
    up, _ = anthropic_messages.build_request(r, d, "k")
    assert up.headers["anthropic-beta"] == "conf-1,shared,client-2"
    assert up.headers["anthropic-version"] == "2023-06-01"
    assert up.headers["x-extra"] == "1"
    up, _ = anthropic_messages.build_request(req(), d, "k")
    assert up.headers["anthropic-version"] == "2023-01-01"
    assert up.headers["anthropic-beta"] == "conf-1,shared"
    assert "anthropic-beta" not in anthropic_messages.build_request(req(), dep(), "k")[0].headers


def test_a_format_description_becomes_the_schema_root_description_in_either_slot() -> None:
    fmt = ResponseFormat(type="json_schema", name="Order", description="The order.", schema=SCHEMA)
    native, _ = built(req(fmt), dep())
    assert native["output_config"]["format"]["schema"]["description"] == "The order."
    forced, _ = built(req(fmt), dep("claude-sonnet-4-20250514"))
    assert forced["tools"][-1]["input_schema"]["description"] == "The order."
    own = fmt.model_copy(update={"schema_": {**SCHEMA, "description": "Schema's own."}})
    kept, _ = built(req(own), dep())
    assert kept["output_config"]["format"]["schema"]["description"] == "Schema's own."
