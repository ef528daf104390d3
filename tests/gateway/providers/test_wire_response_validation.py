"""Non-streaming answers are assembled as plain dicts and validated once
(gateway/providers/wire_common.py ``validate_response``); malformed answers the readers do not
coerce become UpstreamProtocolError (or UnknownStopReason), never an unhandled error."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import Deployment
from gateway.errors import UnknownStopReason, UpstreamProtocolError
from gateway.providers import anthropic_common, anthropic_messages, openai_chat, openai_common, wire_common
from gateway.providers.naming import NameMap
from gateway.providers.wire import CallContext
from gateway.schema import Request, Response

OA = Deployment(name="oa", api="openai_chat", model="gpt-x", provider="openai")
AN = Deployment(name="an", api="anthropic_messages", model="claude-x")


def ctx(dep: Deployment) -> CallContext:
    return CallContext(deployment=dep, request=Request(model="m", messages=[]), names=NameMap())


def test_validate_response_builds_the_schema() -> None:
    resp = wire_common.validate_response(
        {
            "id": "r",
            "model": "m",
            "message": {"content": [{"type": "text", "text": "hi"}]},
            "stop_reason": "stop",
        },
        what="message",
    )
    assert isinstance(resp, Response) and resp.message.text == "hi" and resp.usage.output_tokens == 0


def test_validate_response_error_is_a_protocol_error_naming_the_field() -> None:
    data: dict[str, Any] = {
        "id": "r",
        "model": "m",
        "message": {"content": [{"type": "thinking", "text": "t", "signature": 5}]},
        "stop_reason": "stop",
    }
    with pytest.raises(UpstreamProtocolError) as err:
        wire_common.validate_response(data, what="message", deployment="an")
    assert "message.content.0.thinking.signature" in err.value.message
    assert err.value.deployment == "an"


def test_anthropic_thinking_signature_that_is_not_a_string() -> None:
    obj = {
        "id": "m",
        "type": "message",
        "content": [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "t", "signature": 2}],
        "stop_reason": "end_turn",
    }
    with pytest.raises(UpstreamProtocolError, match=r"content\[1\]\.signature is not a string"):
        anthropic_messages.from_wire_response(obj, ctx(AN))


def test_openai_tool_call_entry_that_is_not_an_object() -> None:
    obj = {"id": "c", "choices": [{"finish_reason": "tool_calls", "message": {"tool_calls": ["call_1"]}}]}
    with pytest.raises(UpstreamProtocolError, match=r"tool_calls\[0\] is not an object"):
        openai_chat.from_wire_response(obj, ctx(OA))


@pytest.mark.parametrize("raw", [{"a": 1}, ["stop"], 3])
def test_stop_reasons_that_are_not_strings_are_unknown(raw: Any) -> None:
    with pytest.raises(UnknownStopReason):
        openai_chat.map_stop_reason(raw)
    with pytest.raises(UnknownStopReason):
        anthropic_messages.map_stop_reason(raw)


def test_provenance_is_one_shared_instance_per_deployment_model() -> None:
    assert openai_common.thinking_provenance(OA) is openai_common.thinking_provenance(OA.model_copy())
    prov = anthropic_common.provenance(AN)
    assert prov is anthropic_common.provenance(AN)
    assert (prov.api, prov.provider, prov.model) == ("anthropic_messages", "anthropic", "claude-x")


def test_usage_from_wire_matches_usage_fields() -> None:
    u = {"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 3}}
    assert openai_common.usage_from_wire(u).model_dump(include=set(openai_common.usage_fields(u))) == {
        "input_tokens": 7,
        "output_tokens": 4,
        "cache_read_tokens": 3,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert (
        openai_common.usage_from_wire(None).model_dump()
        == anthropic_messages.usage_from_wire(None).model_dump()
    )


@pytest.mark.parametrize("count", [2**64 - 1, 2**70, 1e300, -5, -0.5])
def test_usage_counts_out_of_range_are_read_as_absent(count: float) -> None:
    oa = {"prompt_tokens": count, "completion_tokens": 2, "total_tokens": count}
    assert openai_common.usage_fields(oa)["input_tokens"] == 0
    assert openai_common.usage_fields(oa)["output_tokens"] == 2
    assert anthropic_messages.usage_fields({"input_tokens": count, "output_tokens": 2})["input_tokens"] == 0


def test_an_answer_with_a_huge_usage_count_renders_as_json() -> None:
    import orjson

    from gateway.edges import openai_chat as openai_edge

    obj = {
        "id": "c",
        "choices": [{"finish_reason": "stop", "message": {"content": "hi"}}],
        "usage": {"prompt_tokens": 2**64 - 1, "completion_tokens": 2, "total_tokens": 2**64 + 1},
    }
    resp = openai_chat.from_wire_response(obj, ctx(OA))
    assert resp.usage.input_tokens == 0 and resp.usage.output_tokens == 2
    orjson.dumps(openai_edge.render_response(resp, Request(model="m", messages=[])))
