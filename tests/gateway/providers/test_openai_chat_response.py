"""Non-streaming answers of gateway/providers/openai_chat.py, from recorded traffic."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _wire_helpers import cassette, fixture, response_body, usage_tuple

from gateway.config import Deployment
from gateway.errors import UnknownStopReason, UpstreamProtocolError
from gateway.providers import openai_chat, openai_common
from gateway.providers.naming import NameMap
from gateway.providers.wire import CallContext
from gateway.schema import Request, TextPart, ThinkingPart, ToolCallPart

DEP = Deployment(name="oa", api="openai_chat", model="gpt-4o-mini")


def ctx(d: Deployment = DEP) -> CallContext:
    return CallContext(deployment=d, request=Request(model="m", messages=[]), names=NameMap())


def test_fantasy_parallel_tool_calls_response() -> None:
    body = response_body(
        cassette("fantasy/providertests/testdata/TestOpenAICommon/openai-gpt-4o-mini/multi_tool.yaml")[0]
    )
    resp = openai_chat.parse_response(body, ctx())
    assert resp.id == "chatcmpl-DuLdUO0Pvm9IhUmV9qCj30FQ6gQrs"
    assert resp.model == "gpt-4o-mini-2024-07-18"
    assert resp.stop_reason == "tool_use"
    calls = resp.message.tool_calls
    assert [(c.id, c.name, c.raw_arguments) for c in calls] == [
        ("call_2wt6qUGrlxczUadZYf3qXyH0", "add", '{"a": 2, "b": 3}'),
        ("call_vZOWZaH7tzu0rLZeogtafvrf", "multiply", '{"a": 2, "b": 3}'),
    ]
    assert calls[0].arguments == {"a": 2, "b": 3}
    assert resp.message.text == ""
    assert usage_tuple(resp.usage) == (110, 50, 0, 0, 0)


def test_fantasy_final_text_answer() -> None:
    body = response_body(
        cassette("fantasy/providertests/testdata/TestOpenAICommon/openai-gpt-4o-mini/multi_tool.yaml")[1]
    )
    resp = openai_chat.parse_response(body, ctx())
    assert resp.message.content == [
        TextPart(text="The sum of 2 and 3 is 5, and the product of 2 and 3 is 6.")
    ]
    assert resp.stop_reason == "stop"
    assert usage_tuple(resp.usage) == (176, 26, 0, 0, 0)


def test_envoy_length_with_reasoning_tokens_and_empty_content() -> None:
    body = response_body(
        cassette("envoy-ai-gateway/tests/internal/testopenai/cassettes/chat-detailed-usage.yaml")[0]
    )
    resp = openai_chat.parse_response(body, ctx())
    assert resp.stop_reason == "length"
    assert resp.message.content == []
    assert usage_tuple(resp.usage) == (12, 100, 0, 0, 100)


def test_envoy_parallel_tools_single_call() -> None:
    body = response_body(
        cassette("envoy-ai-gateway/tests/internal/testopenai/cassettes/chat-parallel-tools.yaml")[0]
    )
    resp = openai_chat.parse_response(body, ctx())
    (c,) = resp.message.tool_calls
    assert (c.id, c.name, c.raw_arguments) == (
        "call_Xc4Aiih37EUJvqjoZlu4Vdoi",
        "get_current_weather",
        '{"location":"San Francisco, CA"}',
    )
    assert usage_tuple(resp.usage) == (162, 219, 0, 0, 192)


def test_deepseek_reasoning_content_and_cached_tokens_are_split() -> None:
    body = fixture("vercel-ai/packages/deepseek/src/chat/__fixtures__/deepseek-tool-call.json").read_bytes()
    resp = openai_chat.parse_response(body, ctx())
    thinking, tool = resp.message.content
    assert isinstance(thinking, ThinkingPart) and thinking.text.startswith(
        "The user is asking for the weather"
    )
    assert thinking.signature is None and thinking.provenance is not None
    assert thinking.provenance.api == "openai_chat" and thinking.provenance.model == "gpt-4o-mini"
    assert isinstance(tool, ToolCallPart)
    assert (tool.id, tool.raw_arguments) == (
        "call_00_9V0vrf86Pc9aelHCJMZqnJBo",
        '{"location": "San Francisco"}',
    )
    # prompt 339 of which 320 cached -> 19 uncached input
    assert usage_tuple(resp.usage) == (19, 92, 320, 0, 48)


def test_xai_completion_tokens_exclude_reasoning_so_output_adds_it() -> None:
    body = fixture("vercel-ai/packages/xai/src/__fixtures__/xai-tool-call.json").read_bytes()
    resp = openai_chat.parse_response(body, ctx())
    assert resp.stop_reason == "tool_use"
    assert resp.message.tool_calls[0].raw_arguments == '{"location":"San Francisco"}'
    # total 506 = prompt 291 + completion 26 + reasoning 189
    assert usage_tuple(resp.usage) == (291 - 244, 26 + 189, 244, 0, 189)


def test_reasoning_above_completion_is_added_to_output() -> None:
    # Vercel AI gateway (corpus fantasy TestVercelThinking/gemini-3-pro-preview/thinking-streaming.yaml):
    # completion 9, reasoning 61, total = prompt + completion; found by `turnstile replay`.
    usage = {
        "prompt_tokens": 28,
        "completion_tokens": 9,
        "total_tokens": 37,
        "completion_tokens_details": {"reasoning_tokens": 61},
    }
    u = openai_common.usage_from_wire(usage)
    assert (u.output_tokens, u.reasoning_tokens) == (70, 61)


def _obj(finish: Any, message: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def test_stop_with_tool_calls_is_reported_as_tool_use() -> None:
    """OpenRouter mock function calling (corpus openhands/): finish_reason stop with tool_calls."""
    msg = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "toolu_01", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    resp = openai_chat.from_wire_response(_obj("stop", msg), ctx())
    assert resp.stop_reason == "tool_use"


def test_C20_B_length_with_parseable_tool_call_stays_length() -> None:
    msg = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_t2",
                "type": "function",
                "function": {"name": "run_commands", "arguments": '{"commands":["npm install","npm test"]}'},
            }
        ],
    }
    resp = openai_chat.from_wire_response(
        _obj("length", msg, {"prompt_tokens": 80, "completion_tokens": 30, "total_tokens": 110}), ctx()
    )
    assert resp.stop_reason == "length"  # the truncation guard withholds the call on this signal
    assert resp.message.tool_calls[0].raw_arguments == '{"commands":["npm install","npm test"]}'
    assert usage_tuple(resp.usage) == (80, 30, 0, 0, 0)


@pytest.mark.parametrize(
    ("raw", "mapped"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_use"),
        ("function_call", "tool_use"),
        ("content_filter", "content_filter"),
    ],
)
def test_known_finish_reasons(raw: str, mapped: str) -> None:
    assert openai_chat.map_stop_reason(raw) == mapped


@pytest.mark.parametrize("raw", ["eos", "end_turn", "", None, "STOP"])
def test_unknown_finish_reasons_raise(raw: Any) -> None:
    with pytest.raises(UnknownStopReason):
        openai_chat.map_stop_reason(raw)
    with pytest.raises(UnknownStopReason):
        openai_chat.from_wire_response(_obj(raw, {"role": "assistant", "content": "x"}), ctx())


def test_openrouter_cache_write_tokens_are_not_counted_as_input() -> None:
    """https://openrouter.ai/docs/use-cases/usage-accounting: prompt 194 incl. 100 cache writes."""
    u = openai_common.usage_from_wire(
        {
            "prompt_tokens": 194,
            "completion_tokens": 2,
            "total_tokens": 196,
            "cost": 0.95,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100, "audio_tokens": 0},
        }
    )
    assert usage_tuple(u) == (94, 2, 0, 100, 0)


def test_legacy_function_call_and_names_mapped_back() -> None:
    c = ctx()
    sent = c.names.to_upstream_name("fs.read", openai_chat.TOOL_NAME)
    resp = openai_chat.from_wire_response(
        _obj(
            "function_call",
            {"role": "assistant", "content": None, "function_call": {"name": sent, "arguments": '{"p":1}'}},
        ),
        c,
    )
    (call,) = resp.message.tool_calls
    assert call.name == "fs.read" and call.raw_arguments == '{"p":1}' and call.id.startswith("call_")
    assert resp.stop_reason == "tool_use"


def test_invalid_json_arguments_are_kept_raw() -> None:
    msg = {
        "role": "assistant",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": [1,'}}],
    }
    call = openai_chat.from_wire_response(_obj("length", msg), ctx()).message.tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == '{"a": [1,'


def test_bodies_without_choices_or_not_json_are_protocol_errors() -> None:
    with pytest.raises(UpstreamProtocolError):
        openai_chat.parse_response(b"<html>", ctx())
    with pytest.raises(UpstreamProtocolError):
        openai_chat.parse_response(orjson.dumps({"id": "x", "choices": []}), ctx())


def test_error_message_extraction() -> None:
    body = response_body(
        cassette("envoy-ai-gateway/tests/internal/testopenai/cassettes/chat-detailed-usage.yaml")[0]
    )
    assert openai_chat.error_message(400, body)  # not an error body: falls back to text
    err = b'{"error": {"message": "Invalid \'messages\'", "type": "invalid_request_error"}}'
    assert openai_chat.error_message(400, err) == "Invalid 'messages'"
    assert openai_chat.error_message(500, b'{"error": "model not loaded"}') == "model not loaded"
    assert openai_chat.error_message(422, b'{"detail": [{"msg": "bad"}]}') == '[{"msg":"bad"}]'
    assert openai_chat.error_message(502, b"Bad gateway") == "Bad gateway"
    assert openai_chat.error_message(503, b"") == "HTTP 503"
