"""OpenAI chunk stream rendering: handed cases C10, C15, C30 B, gaps, errors."""

from __future__ import annotations

from typing import Any

import orjson
from edges_testkit import c10_events, c30b_events, render_all, sse_events

from gateway.edges import openai_chat
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    Request,
    StreamError,
    Usage,
    UserMessage,
    WithheldToolCall,
)


def _request(include_usage: bool = False) -> Request:
    return Request(model="m", messages=[UserMessage(content=[])], stream=True, include_usage=include_usage)


def _renderer(include_usage: bool = False) -> openai_chat.StreamRenderer:
    r = openai_chat.StreamRenderer(_request(include_usage))
    r.created = 1700000000
    return r


def _chunk(
    delta: dict[str, Any], finish: str | None = None, usage: bool = False, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-msg_1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "claude-sonnet-4-5",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = None
    body.update(extra)
    return body


def test_c10_tool_call_index_counts_tool_calls_not_content_parts() -> None:
    frames = render_all(_renderer(), c10_events())
    assert [data for _, data in sse_events(frames)] == [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "Checking both hosts."}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "toolu_s1",
                        "type": "function",
                        "function": {"name": "ping", "arguments": ""},
                    }
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"host":'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.example"}'}}]}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "toolu_s2",
                        "type": "function",
                        "function": {"name": "ping", "arguments": ""},
                    }
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"host":"b.example"}'}}]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    ]
    assert frames[-1] == b"data: [DONE]\n\n"


def _c15_events() -> list[Any]:
    return [
        MessageStart(id="msg_2", model="claude-haiku-4-5", usage=Usage(input_tokens=12, output_tokens=1)),
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="Hello there."),
        PartEnd(index=0),
        MessageEnd(stop_reason="stop", usage=Usage(input_tokens=12, output_tokens=4)),
    ]


def test_c15_include_usage_adds_one_usage_chunk_with_no_choices_before_done() -> None:
    data = [d for _, d in sse_events(render_all(_renderer(include_usage=True), _c15_events()))]
    assert data[-1] == "[DONE]"
    usage_chunk = data[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == 12
    assert usage_chunk["usage"]["completion_tokens"] == 4
    assert usage_chunk["usage"]["total_tokens"] == 16
    content_chunks = data[:-2]
    assert all(c["usage"] is None for c in content_chunks)
    assert [c["choices"][0]["finish_reason"] for c in content_chunks] == [None, None, "stop"]
    assert sum(1 for c in data[:-1] if c["usage"] is not None) == 1


def test_c15_without_include_usage_no_usage_chunk_and_no_usage_key() -> None:
    data = [d for _, d in sse_events(render_all(_renderer(include_usage=False), _c15_events()))]
    assert data[-1] == "[DONE]"
    assert all("usage" not in c for c in data[:-1])
    assert all(c["choices"] for c in data[:-1])
    assert data[-2]["choices"][0]["finish_reason"] == "stop"


def test_c30b_usage_chunk_splits_cached_prompt_tokens() -> None:
    data = [d for _, d in sse_events(render_all(_renderer(include_usage=True), c30b_events()))]
    usage = data[-2]["usage"]
    assert usage["prompt_tokens"] == 2004
    assert usage["prompt_tokens_details"]["cached_tokens"] == 2000
    assert usage["completion_tokens"] == 20
    assert usage["total_tokens"] == 2024
    assert usage["cost"] == 0.000912


def test_thinking_deltas_go_to_reasoning_content() -> None:
    events = [
        MessageStart(id="x", model="m"),
        PartStart(index=0, kind="thinking"),
        PartDelta(index=0, text="hmm"),
        PartDelta(index=0, signature="SIG"),
        PartEnd(index=0),
        PartStart(index=1, kind="text"),
        PartDelta(index=1, text="ok"),
        PartEnd(index=1),
        MessageEnd(stop_reason="stop"),
    ]
    deltas = [d["choices"][0]["delta"] for _, d in sse_events(render_all(_renderer(), events))[:-1]]
    assert {"reasoning_content": "hmm"} in deltas
    assert {"content": "ok"} in deltas


def test_gaps_in_part_indexes_and_overlapping_parts_keep_tool_ordinals_compact() -> None:
    events = [
        MessageStart(id="x", model="m"),
        PartStart(index=0, kind="text"),
        PartStart(index=3, kind="tool_call", id="call_b", name="f"),  # starts before part 0 ends
        PartDelta(index=0, text="a"),
        PartDelta(index=3, arguments="{}"),
        PartEnd(index=3),
        PartEnd(index=0),
        PartStart(index=7, kind="tool_call", id="call_c", name="g"),  # never ended
        PartDelta(index=7, arguments='{"x":1}'),
        MessageEnd(stop_reason="tool_use"),
    ]
    data = [d for _, d in sse_events(render_all(_renderer(), events))[:-1]]
    heads = [tc for d in data for tc in d["choices"][0]["delta"].get("tool_calls", []) if "id" in tc]
    assert [(h["index"], h["id"]) for h in heads] == [(0, "call_b"), (1, "call_c")]


def test_tool_call_signature_is_wrapped_into_the_id() -> None:
    prov = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")
    events = [
        MessageStart(id="x", model="m"),
        PartStart(
            index=0, kind="tool_call", id="call_1", name="shell", signature="SIG_G1_opaque", provenance=prov
        ),
        PartDelta(index=0, arguments='{"command":"ls"}'),
        PartEnd(index=0),
        MessageEnd(stop_reason="tool_use"),
    ]
    data = [d for _, d in sse_events(render_all(_renderer(), events))[:-1]]
    head = data[1]["choices"][0]["delta"]["tool_calls"][0]
    from gateway.edges.signatures import unwrap_tool_call_id

    assert unwrap_tool_call_id(head["id"]) == ("call_1", "SIG_G1_opaque", prov)


def test_withheld_tool_calls_are_reported_in_turnstile_metadata_not_tool_calls() -> None:
    withheld = WithheldToolCall(id="toolu_t1", name="run", raw_arguments='{"c": [', reason="length")
    events = [
        MessageStart(id="x", model="m"),
        MessageEnd(stop_reason="length", withheld_tool_calls=[withheld]),
    ]
    data = [d for _, d in sse_events(render_all(_renderer(), events))[:-1]]
    final = data[-1]
    assert final["choices"][0]["finish_reason"] == "length"
    assert final["turnstile"]["withheld_tool_calls"][0]["id"] == "toolu_t1"
    assert not any("tool_calls" in d["choices"][0]["delta"] for d in data)


def test_stream_error_becomes_error_frame_then_done() -> None:
    r = _renderer()
    frames = r.render(MessageStart(id="x", model="m"))
    frames += r.render(StreamError(kind="timeout", message="between-chunk timeout", status=504))
    frames += r.render(PartDelta(index=0, text="late"))  # ignored after the error
    frames += r.finish()
    data = [d for _, d in sse_events(frames)]
    assert data[1] == {
        "error": {
            "message": "between-chunk timeout",
            "type": "server_error",
            "param": None,
            "code": "timeout",
        }
    }
    assert data[2:] == ["[DONE]"]


def test_finish_without_message_end_reports_an_error_before_done() -> None:
    r = _renderer()
    frames = r.render(MessageStart(id="x", model="m")) + r.finish()
    data = [d for _, d in sse_events(frames)]
    assert "error" in data[1]
    assert data[-1] == "[DONE]"


def test_frames_are_complete_sse_events_and_ping_is_a_comment() -> None:
    for frame in render_all(_renderer(True), c10_events()):
        assert frame.startswith(b"data: ") and frame.endswith(b"\n\n")
        payload = frame[6:-2]
        assert payload == b"[DONE]" or isinstance(orjson.loads(payload), dict)
    assert openai_chat.ping_frame().startswith(b":")
