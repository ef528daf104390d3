"""Whole answers of gateway/providers/openai_responses.py, from recorded Responses bodies
(fantasy TestOpenAIResponsesCommon/openai-gpt-4o-mini, TestOpenAIResponsesWithSummaryThinking/
openai-gpt-5) and the documented variants they do not hold (incomplete, failed)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _wire_helpers import cassette, response_body, summary, usage_tuple

from gateway.config import Deployment
from gateway.errors import UnknownStopReason, UpstreamError, UpstreamProtocolError
from gateway.providers import openai_responses
from gateway.providers.naming import NameMap
from gateway.providers.wire import CallContext
from gateway.schema import Request, TextPart, ThinkingPart, UserMessage

DEP = Deployment(name="rs", api="openai_responses", model="gpt-5")
COMMON = "fantasy/providertests/testdata/TestOpenAIResponsesCommon/openai-gpt-4o-mini/"
THINKING = "fantasy/providertests/testdata/TestOpenAIResponsesWithSummaryThinking/openai-gpt-5/thinking.yaml"
AZURE = "fantasy/providertests/testdata/TestAzureResponsesCommon/azure-gpt-5-mini/"


def _ctx(names: NameMap | None = None) -> CallContext:
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])])
    return CallContext(deployment=DEP, request=request, names=names or NameMap())


def _parse(obj: Any, ctx: CallContext | None = None) -> Any:
    body = obj if isinstance(obj, bytes) else orjson.dumps(obj)
    return openai_responses.parse_response(body, ctx or _ctx())


def test_recorded_text_answer() -> None:
    raw = response_body(cassette(COMMON + "simple.yaml")[0])
    resp = _parse(raw)
    rec = orjson.loads(raw)
    text = rec["output"][0]["content"][0]["text"]
    assert summary(resp) == [("text", text)]
    assert resp.stop_reason == "stop"
    assert resp.id == rec["id"] and resp.model == rec["model"]
    u = rec["usage"]
    assert usage_tuple(resp.usage) == (u["input_tokens"], u["output_tokens"], 0, 0, 0)


@pytest.mark.parametrize("rel", ["simple.yaml", "tool.yaml"])
def test_recorded_azure_answers_read_as_openai_ones(rel: str) -> None:
    """Azure OpenAI's v1 Responses API (fantasy TestAzureResponsesCommon, gpt-5-mini)."""
    for interaction in cassette(AZURE + rel):
        raw = response_body(interaction)
        rec = orjson.loads(raw)
        resp = _parse(raw)
        calls = [i for i in rec["output"] if i["type"] == "function_call"]
        assert resp.stop_reason == ("tool_use" if calls else "stop")
        assert [c.id for c in resp.message.tool_calls] == [c["call_id"] for c in calls]
        texts = [p["text"] for i in rec["output"] if i["type"] == "message" for p in i["content"]]
        assert resp.message.text == "".join(texts)
        assert resp.usage.output_tokens == rec["usage"]["output_tokens"]


def test_recorded_parallel_function_calls() -> None:
    raw = response_body(cassette(COMMON + "multi_tool.yaml")[0])
    resp = _parse(raw)
    items = orjson.loads(raw)["output"]
    assert resp.stop_reason == "tool_use"
    calls = resp.message.tool_calls
    assert [(c.id, c.name, c.raw_arguments) for c in calls] == [
        (i["call_id"], i["name"], i["arguments"]) for i in items if i["type"] == "function_call"
    ]
    assert calls[0].arguments == {"a": 2, "b": 3}


def test_recorded_reasoning_keeps_its_encrypted_content_and_provenance() -> None:
    raw = response_body(cassette(THINKING)[0])
    resp = _parse(raw)
    item = next(i for i in orjson.loads(raw)["output"] if i["type"] == "reasoning")
    thinking = resp.message.content[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.signature == item["encrypted_content"]
    assert thinking.text == "\n\n".join(p["text"] for p in item["summary"])
    assert thinking.provenance is not None
    assert (thinking.provenance.api, thinking.provenance.provider, thinking.provenance.model) == (
        "openai_responses",
        "openai",
        "gpt-5",
    )
    assert (
        resp.usage.reasoning_tokens == orjson.loads(raw)["usage"]["output_tokens_details"]["reasoning_tokens"]
    )


def _body(status: str = "completed", output: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "gpt-5",
        "output": output or [],
        **extra,
    }


def test_cached_and_reasoning_tokens_are_split_out() -> None:
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 600},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 200},
    }
    resp = _parse(_body(usage=usage))
    assert usage_tuple(resp.usage) == (400, 300, 600, 0, 200)


def test_incomplete_for_max_output_tokens_is_length() -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "add",
        "arguments": '{"a":',
        "status": "in_progress",
    }
    resp = _parse(_body("incomplete", [call], incomplete_details={"reason": "max_output_tokens"}))
    assert resp.stop_reason == "length"
    assert resp.message.tool_calls[0].raw_arguments == '{"a":'


def test_incomplete_for_content_filter() -> None:
    assert (
        _parse(_body("incomplete", incomplete_details={"reason": "content_filter"})).stop_reason
        == "content_filter"
    )


@pytest.mark.parametrize("status", ["in_progress", "queued", "cancelled", "incomplete"])
def test_a_status_that_is_no_known_end_is_refused(status: str) -> None:
    with pytest.raises(UnknownStopReason):
        _parse(_body(status))


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("rate_limit_exceeded", 429),
        ("context_length_exceeded", 400),
        ("server_error", 500),
        ("invalid_image", 400),
        ("vector_store_timeout", 502),
    ],
)
def test_failed_response_raises_with_the_status_of_its_code(code: str, status: int) -> None:
    with pytest.raises(UpstreamError) as info:
        _parse(_body("failed", error={"code": code, "message": "it broke"}))
    assert info.value.status == status
    assert code in info.value.message and "it broke" in info.value.message


def test_refusal_is_text_and_hosted_tool_items_are_skipped() -> None:
    out = [
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "I can't help with that."}],
        },
    ]
    assert summary(_parse(_body(output=out))) == [("text", "I can't help with that.")]


def test_names_and_ids_are_mapped_back() -> None:
    names = NameMap()
    upstream_name = names.to_upstream_name("fs.read")
    out = [{"type": "function_call", "call_id": "call_9", "name": upstream_name, "arguments": "{}"}]
    resp = _parse(_body(output=out), _ctx(names))
    assert resp.message.tool_calls[0].name == "fs.read"


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", orjson.dumps(_body() | {"output": None}), orjson.dumps(_body(output=["x"]))],
    ids=["not-json", "not-object", "no-output", "item-not-object"],
)
def test_malformed_bodies_are_protocol_errors(body: bytes) -> None:
    with pytest.raises(UpstreamProtocolError):
        _parse(body)


def test_error_message_reads_openai_error_bodies() -> None:
    body = orjson.dumps(
        {"error": {"message": "Unknown parameter: 'x'.", "type": "invalid_request_error", "param": "x"}}
    )
    assert openai_responses.error_message(400, body) == "Unknown parameter: 'x'."


@pytest.mark.parametrize("count", [2**53 + 1, -5, "12", None])
def test_usage_counts_that_are_not_counts_are_read_as_absent(count: Any) -> None:
    usage = {"input_tokens": count, "output_tokens": 3, "input_tokens_details": {"cached_tokens": count}}
    resp = _parse(_body(usage=usage))
    assert usage_tuple(resp.usage) == (0, 3, 0, 0, 0)


def test_reasoning_signature_that_is_not_a_string_is_a_protocol_error() -> None:
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": {"x": 1}}
    with pytest.raises(UpstreamProtocolError, match="encrypted_content"):
        _parse(_body(output=[item]))


def test_custom_tool_call_item_is_a_call_of_the_emulated_function() -> None:
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {"type": "custom_tool_call", "call_id": "call_c", "name": "write_sql", "input": 'SELECT "x"'}
        ],
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    resp = openai_responses.parse_response(orjson.dumps(body), _ctx())
    [call] = resp.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_c", "write_sql", {"input": 'SELECT "x"'})
    assert resp.stop_reason == "tool_use"
