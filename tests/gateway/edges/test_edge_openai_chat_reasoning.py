"""Reasoning on the OpenAI Chat edge: ``reasoning_content`` plus OpenRouter-style
``reasoning_details`` carrying the signature (in Turnstile's envelope), whole and streamed, and
parsed back into signed thinking with its provenance; LiteLLM ``thinking_blocks`` too."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from edges_testkit import render_all, sse_events
from openai.lib.streaming._deltas import accumulate_delta

from gateway.edges import openai_chat
from gateway.edges.signatures import wrap_signature
from gateway.errors import InvalidRequest
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    RedactedThinkingPart,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserMessage,
)

CLAUDE = Provenance(api="anthropic_messages", provider="anthropic", model="claude-sonnet-4")
ANY_CLAUDE = Provenance(api="anthropic_messages", provider="anthropic", model="")
REQUEST = Request(model="an", messages=[UserMessage(content=[TextPart(text="hi")])])


def _answer() -> Response:
    return Response(
        id="msg_1",
        model="claude-sonnet-4",
        message=AssistantMessage(
            content=[
                ThinkingPart(text="Need the tool.", signature="SIG1", provenance=CLAUDE),
                RedactedThinkingPart(data="ENC1", provenance=CLAUDE),
                ToolCallPart(id="toolu_1", name="weather", arguments={}, raw_arguments="{}"),
            ]
        ),
        stop_reason="tool_use",
    )


def _parse_assistant(msg: dict[str, Any]) -> list[Any]:
    body = {
        "model": "an",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, **msg},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "40 C"},
        ],
    }
    parsed = openai_chat.parse_request(orjson.dumps(body))
    return list(parsed.messages[1].content)  # type: ignore[union-attr]


def test_whole_answer_carries_reasoning_content_and_signed_reasoning_details() -> None:
    msg = openai_chat.render_response(_answer(), REQUEST)["choices"][0]["message"]
    assert msg["reasoning_content"] == "Need the tool."
    assert msg["reasoning_details"] == [
        {
            "type": "reasoning.text",
            "text": "Need the tool.",
            "signature": wrap_signature("SIG1", CLAUDE),
            "format": "anthropic-claude-v1",
            "index": 0,
        },
        {
            "type": "reasoning.encrypted",
            "data": wrap_signature("ENC1", CLAUDE),
            "format": "anthropic-claude-v1",
            "index": 1,
        },
    ]


def test_reasoning_details_sent_back_become_the_signed_parts_with_their_provenance() -> None:
    msg = openai_chat.render_response(_answer(), REQUEST)["choices"][0]["message"]
    parts = _parse_assistant(msg)
    assert parts[:2] == [
        ThinkingPart(text="Need the tool.", signature="SIG1", provenance=CLAUDE),
        RedactedThinkingPart(data="ENC1", provenance=CLAUDE),
    ]
    assert [type(p).__name__ for p in parts] == ["ThinkingPart", "RedactedThinkingPart", "ToolCallPart"]


def test_raw_anthropic_format_signature_is_anthropics() -> None:
    details = [{"type": "reasoning.text", "text": "t", "signature": "RAW", "format": "anthropic-claude-v1"}]
    parts = _parse_assistant({"reasoning_details": details, "reasoning_content": "t"})
    assert parts == [ThinkingPart(text="t", signature="RAW", provenance=ANY_CLAUDE)]


def test_unknown_format_raw_signature_has_no_provenance_and_summary_is_unsigned() -> None:
    details = [
        {"type": "reasoning.summary", "summary": "s"},
        {"type": "reasoning.text", "text": "t", "signature": "RAW", "format": "unknown"},
        {"type": "reasoning.encrypted", "format": "google-gemini-v1", "index": 0},  # no data: nothing
    ]
    assert _parse_assistant({"reasoning_details": details}) == [
        ThinkingPart(text="s"),
        ThinkingPart(text="t", signature="RAW"),
    ]


def test_litellm_thinking_blocks_are_anthropic_thinking() -> None:
    blocks = [
        {"type": "thinking", "thinking": "t", "signature": "RAW"},
        {"type": "redacted_thinking", "data": "ENC"},
    ]
    assert _parse_assistant({"thinking_blocks": blocks, "reasoning_content": "t"}) == [
        ThinkingPart(text="t", signature="RAW", provenance=ANY_CLAUDE),
        RedactedThinkingPart(data="ENC", provenance=ANY_CLAUDE),
    ]


@pytest.mark.parametrize(
    ("msg", "param"),
    [
        ({"reasoning_details": {"type": "reasoning.text"}}, "messages[1].reasoning_details"),
        ({"reasoning_details": [{"type": "reasoning.audio"}]}, "messages[1].reasoning_details[0].type"),
        (
            {"reasoning_details": [{"type": "reasoning.text", "signature": 5}]},
            "messages[1].reasoning_details[0].signature",
        ),
        ({"thinking_blocks": [{"type": "tool_use"}]}, "messages[1].thinking_blocks[0].type"),
    ],
)
def test_bad_reasoning_fields_are_refused_by_name(msg: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        _parse_assistant(msg)
    assert info.value.param == param


def _stream_events() -> list[Any]:
    return [
        MessageStart(id="msg_1", model="claude-sonnet-4"),
        PartStart(index=0, kind="thinking", provenance=CLAUDE),
        PartDelta(index=0, text="Need "),
        PartDelta(index=0, text="the tool."),
        PartDelta(index=0, signature="SIG1"),
        PartEnd(index=0),
        PartStart(index=1, kind="tool_call", id="toolu_1", name="weather"),
        PartDelta(index=1, arguments="{}"),
        PartEnd(index=1),
        MessageEnd(stop_reason="tool_use"),
    ]


def test_stream_sends_the_thinking_whole_with_its_signature_when_the_part_ends() -> None:
    frames = render_all(openai_chat.StreamRenderer(REQUEST), _stream_events())
    deltas = [d["choices"][0]["delta"] for _, d in sse_events(frames) if isinstance(d, dict) and d["choices"]]
    assert [d["reasoning_content"] for d in deltas if "reasoning_content" in d] == ["Need ", "the tool."]
    details = [d["reasoning_details"] for d in deltas if "reasoning_details" in d]
    assert details == [
        [
            {
                "type": "reasoning.text",
                "text": "Need the tool.",
                "signature": wrap_signature("SIG1", CLAUDE),
                "format": "anthropic-claude-v1",
                "index": 0,
            }
        ]
    ]
    before_call = next(i for i, d in enumerate(deltas) if "tool_calls" in d)
    assert any("reasoning_details" in d for d in deltas[:before_call]), "the details come before the calls"


def test_streamed_message_merged_by_the_openai_sdk_parses_back_to_the_signed_thinking() -> None:
    frames = render_all(openai_chat.StreamRenderer(REQUEST), _stream_events())
    acc: dict[object, object] = {}
    for _, data in sse_events(frames):
        if isinstance(data, dict) and data["choices"]:
            acc = accumulate_delta(acc, data["choices"][0]["delta"])
    acc.pop("role", None)
    parts = _parse_assistant(acc)  # type: ignore[arg-type]
    assert parts[0] == ThinkingPart(text="Need the tool.", signature="SIG1", provenance=CLAUDE)
