"""Anthropic SSE stream rendering: handed cases C12, C13, thinking signatures, gaps, errors."""

from __future__ import annotations

from typing import Any

import orjson
from edges_testkit import c10_events, c12_events, c13_events, c30b_events, render_all, sse_events

from gateway.edges import anthropic_messages
from gateway.edges.signatures import unwrap_signature
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    Request,
    StreamError,
    UserMessage,
    WithheldToolCall,
)

ZERO_USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def _renderer() -> anthropic_messages.StreamRenderer:
    return anthropic_messages.StreamRenderer(
        Request(model="m", messages=[UserMessage(content=[])], stream=True)
    )


def _events(events: list[Any]) -> list[tuple[str | None, Any]]:
    return sse_events(render_all(_renderer(), events))


def test_c12_text_and_tool_call_from_one_upstream_delta_become_two_blocks() -> None:
    assert _events(c12_events()) == [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_c1",
                    "type": "message",
                    "role": "assistant",
                    "model": "some-oai-model",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": ZERO_USAGE,
                },
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Initialising the project: "},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "call_m1", "name": "run", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"cmd":"make init"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": ZERO_USAGE,
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def test_c13_whole_function_call_in_one_chunk_streams_as_tool_use_block() -> None:
    events = _events(c13_events())
    names = [e for e, _ in events]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[2][1]["content_block"]
    assert start == {"type": "tool_use", "id": "call_add", "name": "add_numbers", "input": {}}
    partial = "".join(d["delta"]["partial_json"] for e, d in events if e == "content_block_delta")
    assert orjson.loads(partial) == {"a": 17, "b": 25}
    assert events[5][1]["delta"]["stop_reason"] == "tool_use"


def test_c10_events_render_compact_block_indexes() -> None:
    events = _events(c10_events())
    starts = [d for e, d in events if e == "content_block_start"]
    assert [(s["index"], s["content_block"]["type"]) for s in starts] == [
        (0, "text"),
        (1, "tool_use"),
        (2, "tool_use"),
    ]
    assert events[0][1]["message"]["usage"]["input_tokens"] == 50


def test_block_indexes_have_no_gaps_when_part_indexes_do() -> None:
    events = [
        MessageStart(id="msg_x", model="m"),
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="a"),
        PartEnd(index=0),
        # part 1 was withheld by the truncation guard: a gap
        PartStart(index=2, kind="text"),
        PartDelta(index=2, text="b"),
        PartEnd(index=2),
        MessageEnd(
            stop_reason="length",
            withheld_tool_calls=[WithheldToolCall(id="t", name="n", raw_arguments="{", reason="length")],
        ),
    ]
    out = _events(events)
    assert [d["index"] for e, d in out if e == "content_block_start"] == [0, 1]
    delta = next(d for e, d in out if e == "message_delta")
    assert delta["delta"]["stop_reason"] == "max_tokens"
    assert delta["turnstile"]["withheld_tool_calls"][0]["id"] == "t"


def test_a_part_starting_before_the_previous_ends_closes_the_open_block_first() -> None:
    events = [
        MessageStart(id="msg_x", model="m"),
        PartStart(index=0, kind="thinking"),
        PartDelta(index=0, text="think"),
        PartStart(index=1, kind="text"),
        PartDelta(index=1, text="say"),
        PartEnd(index=0),
        PartEnd(index=1),
        MessageEnd(stop_reason="stop"),
    ]
    out = _events(events)
    seq = [(e, d.get("index")) for e, d in out if e and e.startswith("content_block")]
    assert seq == [
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
    ]


def test_thinking_signature_is_sent_wrapped_with_provenance_before_block_stop() -> None:
    prov = Provenance(api="anthropic_messages", provider="anthropic", model="claude-sonnet-4-5")
    events = [
        MessageStart(id="msg_x", model="m"),
        PartStart(index=0, kind="thinking", provenance=prov),
        PartDelta(index=0, text="Need the price tool."),
        PartDelta(index=0, signature="SIG_A_opaque"),
        PartEnd(index=0),
        PartStart(index=1, kind="redacted_thinking", data="REDACTED", provenance=prov),
        PartEnd(index=1),
        MessageEnd(stop_reason="stop"),
    ]
    out = _events(events)
    blocks = [(e, d) for e, d in out if e and e.startswith("content_block")]
    assert blocks[0][1]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}
    assert blocks[1][1]["delta"] == {"type": "thinking_delta", "thinking": "Need the price tool."}
    sig_delta = blocks[2][1]["delta"]
    assert sig_delta["type"] == "signature_delta"
    assert unwrap_signature(sig_delta["signature"]) == ("SIG_A_opaque", prov)
    assert blocks[3] == ("content_block_stop", {"type": "content_block_stop", "index": 0})
    redacted = blocks[4][1]["content_block"]
    assert redacted["type"] == "redacted_thinking"
    assert unwrap_signature(redacted["data"]) == ("REDACTED", prov)
    assert blocks[5][0] == "content_block_stop"


def test_c30b_message_start_and_delta_carry_cache_usage() -> None:
    out = _events(c30b_events())
    start_usage = out[0][1]["message"]["usage"]
    assert start_usage["input_tokens"] == 4
    assert start_usage["cache_read_input_tokens"] == 2000
    delta = next(d for e, d in out if e == "message_delta")
    assert delta["usage"] == {
        "input_tokens": 4,
        "output_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 2000,
    }
    assert delta["turnstile"]["cost_usd"] == 0.000912


def test_stream_error_becomes_error_event_without_message_stop() -> None:
    r = _renderer()
    frames = r.render(MessageStart(id="msg_x", model="m"))
    frames += r.render(StreamError(kind="overloaded", message="busy", status=529))
    frames += r.finish()
    out = sse_events(frames)
    assert out[-1] == ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    assert all(e != "message_stop" for e, _ in out)


def test_finish_without_message_end_emits_error_event() -> None:
    r = _renderer()
    frames = (
        r.render(MessageStart(id="msg_x", model="m")) + r.render(PartStart(index=0, kind="text")) + r.finish()
    )
    assert sse_events(frames)[-1][0] == "error"


def test_events_before_message_start_still_open_with_message_start() -> None:
    out = _events([PartDelta(index=0, text="hi"), MessageEnd(stop_reason="stop")])
    assert out[0][0] == "message_start"
    assert out[0][1]["message"]["model"] == "m"


def test_ping_frame() -> None:
    assert anthropic_messages.ping_frame() == b'event: ping\ndata: {"type":"ping"}\n\n'
