"""Non-streaming bodies and error shapes of both dialects (handed case C30, withheld calls,
stop-reason mappings, error kinds)."""

from __future__ import annotations

import pytest

from gateway.edges import anthropic_messages, openai_chat
from gateway.edges.signatures import unwrap_signature, unwrap_tool_call_id
from gateway.errors import (
    GuardProblem,
    GuardViolation,
    InvalidRequest,
    ModelNotFound,
    PayloadTooLarge,
    TurnstileError,
    UpstreamError,
    UpstreamTimeout,
)
from gateway.schema import (
    AssistantMessage,
    Provenance,
    RedactedThinkingPart,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    UserMessage,
    WithheldToolCall,
)

REQ = Request(model="alias", messages=[UserMessage(content=[])])
PROV = Provenance(api="anthropic_messages", provider="anthropic", model="claude-sonnet-4-5")
GPROV = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")


def _resp(**kw: object) -> Response:
    base: dict[str, object] = {
        "id": "r1",
        "model": "up-model",
        "message": AssistantMessage(
            content=[
                ThinkingPart(text="plan", signature="SIG", provenance=PROV),
                RedactedThinkingPart(data="ENC", provenance=PROV),
                TextPart(text="Hello"),
                ToolCallPart(id="call_1", name="f", arguments={"a": 1}, raw_arguments='{"a":  1}'),
                ToolCallPart(
                    id="call_2",
                    name="shell",
                    arguments={},
                    raw_arguments="{}",
                    signature="SIG_G1",
                    provenance=GPROV,
                ),
            ]
        ),
        "stop_reason": "tool_use",
        "usage": Usage(
            input_tokens=4, cache_read_tokens=2000, output_tokens=20, reasoning_tokens=5, cost_usd=0.000912
        ),
    }
    base.update(kw)
    return Response(**base)  # type: ignore[arg-type]


def test_openai_body_has_content_tool_calls_raw_arguments_reasoning_and_c30b_usage() -> None:
    body = openai_chat.render_response(_resp(), REQ)
    assert body["id"] == "chatcmpl-r1" and body["object"] == "chat.completion" and body["model"] == "up-model"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    msg = choice["message"]
    assert msg["content"] == "Hello" and msg["reasoning_content"] == "plan"
    assert msg["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a":  1}'},
    }
    assert unwrap_tool_call_id(msg["tool_calls"][1]["id"]) == ("call_2", "SIG_G1", GPROV)
    assert body["usage"] == {
        "prompt_tokens": 2004,
        "completion_tokens": 20,
        "total_tokens": 2024,
        "prompt_tokens_details": {"cached_tokens": 2000},
        "completion_tokens_details": {"reasoning_tokens": 5},
        "cost": 0.000912,
    }
    assert "turnstile" not in body


def test_anthropic_body_has_blocks_with_wrapped_signatures_and_cache_usage() -> None:
    body = anthropic_messages.render_response(_resp(), REQ)
    assert (body["id"], body["type"], body["role"], body["stop_reason"], body["stop_sequence"]) == (
        "msg_r1",
        "message",
        "assistant",
        "tool_use",
        None,
    )
    thinking, redacted, text, call1, call2 = body["content"]
    assert thinking["type"] == "thinking" and unwrap_signature(thinking["signature"]) == ("SIG", PROV)
    assert redacted["type"] == "redacted_thinking" and unwrap_signature(redacted["data"]) == ("ENC", PROV)
    assert text == {"type": "text", "text": "Hello"}
    assert call1 == {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}}
    assert unwrap_tool_call_id(call2["id"])[0] == "call_2"
    assert body["usage"] == {
        "input_tokens": 4,
        "output_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 2000,
    }
    assert body["turnstile"] == {"cost_usd": 0.000912}


def test_withheld_tool_calls_appear_only_under_turnstile_key() -> None:
    withheld = [WithheldToolCall(id="call_t2", name="run", raw_arguments='{"c":["a"]}', reason="length")]
    resp = _resp(message=AssistantMessage(content=[]), stop_reason="length", withheld_tool_calls=withheld)
    oa = openai_chat.render_response(resp, REQ)
    assert oa["choices"][0]["finish_reason"] == "length"
    assert "tool_calls" not in oa["choices"][0]["message"] and oa["choices"][0]["message"]["content"] is None
    assert oa["turnstile"]["withheld_tool_calls"][0]["id"] == "call_t2"
    an = anthropic_messages.render_response(resp, REQ)
    assert an["stop_reason"] == "max_tokens" and an["content"] == []
    assert an["turnstile"]["withheld_tool_calls"][0]["raw_arguments"] == '{"c":["a"]}'


@pytest.mark.parametrize(
    ("stop", "oa", "an"),
    [
        ("stop", "stop", "end_turn"),
        ("length", "length", "max_tokens"),
        ("tool_use", "tool_calls", "tool_use"),
        ("content_filter", "content_filter", "refusal"),
        ("error", "error", "end_turn"),
        ("aborted", "error", "end_turn"),
    ],
)
def test_stop_reason_mapping(stop: str, oa: str, an: str) -> None:
    assert openai_chat.finish_reason(stop) == oa  # type: ignore[arg-type]
    assert anthropic_messages.stop_reason(stop) == an  # type: ignore[arg-type]
    if stop in ("error", "aborted"):
        body = anthropic_messages.render_response(_resp(stop_reason=stop), REQ)
        assert body["turnstile"]["stop_reason"] == stop


def test_c30a_cache_write_usage_in_both_dialects() -> None:
    usage = Usage(input_tokens=5, cache_write_tokens=10000, output_tokens=400, cost_usd=0.043515)
    oa = openai_chat.render_usage(usage)
    assert oa["prompt_tokens"] == 10005 and oa["prompt_tokens_details"]["cache_write_tokens"] == 10000
    assert oa["cost"] == 0.043515
    an = anthropic_messages.render_usage(usage)
    assert an["input_tokens"] == 5 and an["cache_creation_input_tokens"] == 10000


def _guard() -> GuardViolation:
    return GuardViolation(
        [
            GuardProblem(
                code="orphan_tool_call",
                id="call_2",
                location="messages[1].tool_calls[1]",
                message="call_2 ...",
            )
        ]
    )


@pytest.mark.parametrize(
    ("err", "status", "oa_type", "oa_code", "an_type"),
    [
        (InvalidRequest("x: bad", param="x"), 400, "invalid_request_error", None, "invalid_request_error"),
        (_guard(), 400, "invalid_request_error", None, "invalid_request_error"),
        (PayloadTooLarge("too big"), 413, "invalid_request_error", "request_too_large", "request_too_large"),
        (ModelNotFound("no model"), 404, "invalid_request_error", "model_not_found", "not_found_error"),
        (UpstreamError("slow", status=429), 429, "requests", "rate_limit_exceeded", "rate_limit_error"),
        (UpstreamError("busy", status=529), 529, "server_error", "overloaded", "overloaded_error"),
        (
            UpstreamError("bad key", status=401),
            401,
            "invalid_request_error",
            "invalid_api_key",
            "authentication_error",
        ),
        (
            UpstreamError("nope", status=403),
            403,
            "invalid_request_error",
            "permission_denied",
            "permission_error",
        ),
        (UpstreamError("boom", status=500), 500, "server_error", "upstream_error", "api_error"),
        (UpstreamTimeout("slow first byte"), 504, "server_error", "timeout", "timeout_error"),
        (TurnstileError("internal"), 500, "server_error", None, "api_error"),
    ],
)
def test_errors_render_in_each_dialects_shape(
    err: TurnstileError, status: int, oa_type: str, oa_code: str | None, an_type: str
) -> None:
    s, body = openai_chat.render_error(err)
    assert s == status
    assert body["error"]["type"] == oa_type and body["error"]["code"] == oa_code
    assert body["error"]["message"] == err.message and body["error"]["param"] == err.param
    s, body = anthropic_messages.render_error(err)
    assert s == status
    assert body["type"] == "error" and body["error"]["type"] == an_type
    assert err.message in body["error"]["message"]


def test_guard_violation_details_and_param_appear_in_openai_error() -> None:
    _, body = openai_chat.render_error(_guard())
    assert body["error"]["param"] == "messages"
    assert body["error"]["details"][0]["id"] == "call_2"


def test_anthropic_error_message_is_prefixed_with_param_when_missing() -> None:
    _, body = anthropic_messages.render_error(InvalidRequest("must not be empty", param="model"))
    assert body["error"]["message"] == "model: must not be empty"
