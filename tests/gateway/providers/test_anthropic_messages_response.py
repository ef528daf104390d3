"""Non-streaming answers of gateway/providers/anthropic_messages.py, from recorded traffic."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _wire_helpers import cassette, fixture, response_body, usage_tuple

from gateway.config import Deployment
from gateway.errors import UnknownStopReason, UpstreamProtocolError
from gateway.providers import anthropic_messages
from gateway.providers.naming import NameMap
from gateway.providers.wire import CallContext
from gateway.schema import Provenance, Request, TextPart, ThinkingPart, ToolCallPart

DEP = Deployment(name="an", api="anthropic_messages", model="claude-sonnet-4-20250514")


def ctx() -> CallContext:
    return CallContext(deployment=DEP, request=Request(model="m", messages=[]), names=NameMap())


def test_fantasy_text_and_two_tool_uses() -> None:
    body = response_body(
        cassette("fantasy/providertests/testdata/TestAnthropicCommon/claude-sonnet-4/multi_tool.yaml")[0]
    )
    resp = anthropic_messages.parse_response(body, ctx())
    assert (resp.id, resp.model, resp.stop_reason) == (
        "msg_01SKkVkB84yWcweNDwx31xBd",
        "claude-sonnet-4-20250514",
        "tool_use",
    )
    text, add, mul = resp.message.content
    assert text == TextPart(text="I'll add and multiply the numbers 2 and 3 for you.")
    assert isinstance(add, ToolCallPart) and isinstance(mul, ToolCallPart)
    assert (add.id, add.name, add.arguments, add.raw_arguments) == (
        "toolu_01StBeRxDEwsqcc3arbDgpS9",
        "add",
        {"a": 2, "b": 3},
        '{"a":2,"b":3}',
    )
    assert (mul.id, mul.name) == ("toolu_01AC6WQhj2iRkdYHgTAGMpVQ", "multiply")
    assert usage_tuple(resp.usage) == (507, 137, 0, 0, 0)


def test_fantasy_thinking_signature_is_byte_identical_with_provenance() -> None:
    body = response_body(
        cassette("fantasy/providertests/testdata/TestAnthropicThinking/claude-sonnet-4/thinking.yaml")[0]
    )
    recorded = orjson.loads(body)["content"][0]
    resp = anthropic_messages.parse_response(body, ctx())
    thinking, call = resp.message.content
    assert isinstance(thinking, ThinkingPart)
    assert thinking.signature == recorded["signature"] and thinking.text == recorded["thinking"]
    assert thinking.provenance == Provenance(
        api="anthropic_messages", provider="anthropic", model="claude-sonnet-4-20250514"
    )
    assert isinstance(call, ToolCallPart) and call.arguments == {"location": "Florence, Italy"}
    assert usage_tuple(resp.usage) == (424, 118, 0, 0, 0)


def test_vercel_tool_without_arguments() -> None:
    body = fixture("vercel-ai/packages/anthropic/src/__fixtures__/anthropic-tool-no-args.json").read_bytes()
    resp = anthropic_messages.parse_response(body, ctx())
    call = resp.message.tool_calls[0]
    assert (call.id, call.name, call.arguments, call.raw_arguments) == (
        "toolu_01LRmxn9vGM1d2DZSDBowdZ1",
        "updateIssueList",
        {},
        "{}",
    )
    assert resp.message.text.endswith("Okay, I will update the current issue list:")
    assert usage_tuple(resp.usage) == (602, 93, 0, 0, 0)


def test_anthropic_sdk_inline_snapshot_exchange_parses() -> None:
    exchanges = orjson.loads(
        fixture(
            "anthropic-sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/"
            "d743d628-16aa-4c9f-ae78-51deb578f746.json"
        ).read_bytes()
    )
    ok = [ex for ex in exchanges if ex["response"]["status_code"] == 200]
    assert ok
    for ex in ok:
        body = ex["response"]["body"]
        raw = body if isinstance(body, str) else orjson.dumps(body).decode()
        resp = anthropic_messages.parse_response(raw.encode(), ctx())
        assert resp.id.startswith("msg_") and resp.stop_reason in ("stop", "tool_use", "length")


def _msg(
    stop: Any, content: list[dict[str, Any]] | None = None, usage: dict[str, Any] | None = None
) -> bytes:
    return orjson.dumps(
        {
            "id": "msg_x",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": content or [],
            "stop_reason": stop,
            "usage": usage or {},
        }
    )


def test_C30_A_cache_write_tokens_are_not_input_tokens() -> None:
    usage = {
        "input_tokens": 5,
        "cache_creation_input_tokens": 10000,
        "cache_read_input_tokens": 0,
        "output_tokens": 400,
        "cache_creation": {"ephemeral_5m_input_tokens": 10000, "ephemeral_1h_input_tokens": 0},
    }
    resp = anthropic_messages.parse_response(_msg("end_turn", [{"type": "text", "text": "ok"}], usage), ctx())
    assert usage_tuple(resp.usage) == (5, 400, 0, 10000, 0)
    assert resp.usage.total_input_tokens == 10005


@pytest.mark.parametrize(
    ("raw", "mapped"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "pause"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_use"),
        ("refusal", "content_filter"),
    ],
)
def test_known_stop_reasons(raw: str, mapped: str) -> None:
    assert anthropic_messages.map_stop_reason(raw) == mapped


@pytest.mark.parametrize("raw", ["stop", "MAX_TOKENS", "", None, "compaction"])
def test_unknown_stop_reasons_raise(raw: Any) -> None:
    with pytest.raises(UnknownStopReason):
        anthropic_messages.parse_response(_msg(raw), ctx())


def test_server_tool_blocks_are_native_parts_verbatim_empty_text_skipped_redacted_thinking_kept() -> None:
    content = [
        {"type": "redacted_thinking", "data": "EmwKAhgB"},
        {"type": "text", "text": ""},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "text", "text": "answer"},
    ]
    resp = anthropic_messages.parse_response(_msg("end_turn", content), ctx())
    assert [p.type for p in resp.message.content] == ["redacted_thinking", "native", "native", "text"]
    assert resp.message.content[0].data == "EmwKAhgB"  # type: ignore[union-attr]
    assert [p.block for p in resp.message.content[1:3]] == content[2:4]  # type: ignore[union-attr]
    assert {p.api for p in resp.message.content[1:3]} == {"anthropic_messages"}  # type: ignore[union-attr]


def test_mcp_tool_blocks_are_native_parts() -> None:
    content = [
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "s", "input": {}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False, "content": []},
    ]
    resp = anthropic_messages.parse_response(_msg("end_turn", content), ctx())
    assert [p.block for p in resp.message.content] == content  # type: ignore[union-attr]
    assert resp.message.tool_calls == []  # the server's own calls: nothing for the client to answer


def test_rewritten_ids_and_names_are_mapped_back() -> None:
    c = ctx()
    up_id = c.names.to_upstream_id("call:1")
    up_name = c.names.to_upstream_name("mcp.read")
    resp = anthropic_messages.parse_response(
        _msg("tool_use", [{"type": "tool_use", "id": up_id, "name": up_name, "input": {"a": 1}}]), c
    )
    assert (resp.message.tool_calls[0].id, resp.message.tool_calls[0].name) == ("call:1", "mcp.read")


def test_error_bodies() -> None:
    err = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    assert anthropic_messages.error_message(529, err) == "Overloaded"
    assert anthropic_messages.error_message(500, b"upstream connect error") == "upstream connect error"
    with pytest.raises(UpstreamProtocolError):
        anthropic_messages.parse_response(err, ctx())
    with pytest.raises(UpstreamProtocolError):
        anthropic_messages.parse_response(b"not json", ctx())
