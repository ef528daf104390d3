"""Streaming side of gateway/providers/anthropic_messages.py (anthropic_stream.py), from recorded
streams and the handed cases."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from _wire_helpers import (
    REPO,
    cassette,
    chunks_to_sse,
    collect,
    corpus_dir,
    fixture,
    replay,
    response_body,
    summary,
    usage_tuple,
)

from gateway.config import Deployment
from gateway.errors import UnknownStopReason, UpstreamProtocolError
from gateway.providers import anthropic_messages
from gateway.providers.naming import NameMap
from gateway.providers.wire import CallContext
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    StreamError,
    TextPart,
)

DEP = Deployment(name="an", api="anthropic_messages", model="claude-sonnet-4-5")
SDK = "anthropic-sdk-python/tests/lib/streaming/fixtures/"
VERCEL = "vercel-ai/packages/anthropic/src/__fixtures__/"


def ctx() -> CallContext:
    return CallContext(deployment=DEP, request=Request(model="m", messages=[]), names=NameMap())


def stream(raw: bytes, chunk: int | None = None, c: CallContext | None = None) -> list[Any]:
    return replay(anthropic_messages.new_stream_parser(c or ctx()), raw, chunk)


def sse(events: list[dict[str, Any]]) -> bytes:
    """Handed-case ``upstream_stream`` ({event, data}) -> SSE bytes."""
    return b"".join(
        b"event: " + e["event"].encode() + b"\ndata: " + orjson.dumps(e["data"]) + b"\n\n" for e in events
    )


def handed(case_id: str) -> dict[str, Any]:
    path = corpus_dir().parent / "cases" / "handed.jsonl"
    if not path.exists():
        path = REPO.parent / "shared" / "cases" / "handed.jsonl"
    if not path.exists():
        pytest.skip("handed cases not present")
    for line in path.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["id"] == case_id:
            return dict(case)
    raise AssertionError(case_id)


def test_sdk_basic_response() -> None:
    events = stream(fixture(SDK + "basic_response.txt").read_bytes(), 5)
    assert events[0] == MessageStart(
        id="msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", model="claude-3-opus-latest", usage=events[0].usage
    )
    resp = collect(events)
    assert resp.message.content == [TextPart(text="Hello there!")]
    assert resp.stop_reason == "stop"
    assert usage_tuple(resp.usage) == (11, 6, 0, 0, 0)


def test_sdk_tool_use_response_arguments_are_concatenated_exactly() -> None:
    resp = collect(stream(fixture(SDK + "tool_use_response.txt").read_bytes()))
    (call,) = resp.message.tool_calls
    assert (call.id, call.name) == ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather")
    assert call.raw_arguments == '{"location": "Paris"}' and call.arguments == {"location": "Paris"}
    assert resp.message.content[0] == TextPart(text="I'll check the current weather in Paris for you.")
    assert resp.stop_reason == "tool_use"
    assert usage_tuple(resp.usage) == (377, 65, 0, 0, 0)


def test_sdk_incomplete_partial_json_at_max_tokens_is_length_with_raw_fragment() -> None:
    """max_tokens mid tool_use: the block never gets content_block_stop; its part is ended at
    message_delta without completing the JSON, and the stop reason is length."""
    events = stream(fixture(SDK + "incomplete_partial_json_response.txt").read_bytes(), 13)
    resp = collect(events)
    assert resp.stop_reason == "length"
    text, call = resp.message.content
    assert text.type == "text" and text.text.startswith("I'll create a comprehensive tax guide")
    assert (
        call.type == "tool_call" and call.id == "toolu_01EKqbqmZrGRXy18eN7m9kvY" and call.name == "make_file"
    )
    assert call.raw_arguments.startswith('{"filename": "taxes.txt", "lines_of_text": [\n"# COMPREHENSIVE')
    assert call.raw_arguments.endswith('\n"Filing taxes')
    assert call.arguments == {}  # not valid JSON: the truncation guard decides
    assert usage_tuple(resp.usage) == (450, 124, 0, 0, 0)


def test_fantasy_thinking_stream_signature_and_arguments() -> None:
    raw = response_body(
        cassette(
            "fantasy/providertests/testdata/TestAnthropicThinking/claude-sonnet-4/thinking-streaming.yaml"
        )[0]
    )
    resp = collect(stream(raw))
    thinking, call = resp.message.content
    assert (
        thinking.type == "thinking"
        and thinking.signature
        and thinking.signature.startswith("EtYDCkYICxgCKkAVHEWRYo6R")
    )
    assert thinking.provenance is not None and thinking.provenance.api == "anthropic_messages"
    assert call.type == "tool_call" and call.raw_arguments == '{"location": "Florence, Italy"}'
    assert call.id == "toolu_01Js4AMfx5qpTLhwTusnvT68"
    assert usage_tuple(resp.usage) == (424, 119, 0, 0, 0)


def test_stream_and_non_stream_of_the_same_answer_collect_equal() -> None:
    """fantasy TestAnthropicCommon multi_tool.yaml and multi_tool_streaming.yaml: same text and
    the same two calls, once whole and once streamed."""
    base = "fantasy/providertests/testdata/TestAnthropicCommon/claude-sonnet-4/"
    whole = anthropic_messages.parse_response(response_body(cassette(base + "multi_tool.yaml")[0]), ctx())
    streamed = collect(stream(response_body(cassette(base + "multi_tool_streaming.yaml")[0])))
    assert (
        summary(whole)
        == summary(streamed)
        == [
            ("text", "I'll add and multiply the numbers 2 and 3 for you."),
            ("tool_call", "add", {"a": 2, "b": 3}),
            ("tool_call", "multiply", {"a": 2, "b": 3}),
        ]
    )
    assert whole.stop_reason == streamed.stop_reason == "tool_use"
    text_whole = anthropic_messages.parse_response(
        fixture(VERCEL + "anthropic-text.json").read_bytes(), ctx()
    )
    assert text_whole.stop_reason == "stop"
    assert usage_tuple(text_whole.usage) == (12, 29, 0, 0, 0)


def test_vercel_text_stream() -> None:
    resp = collect(stream(chunks_to_sse(fixture(VERCEL + "anthropic-text.chunks.txt").read_text()), 11))
    assert resp.message.text == (
        "Hello! I'm doing well, thank you for asking. How are you doing today? "
        "Is there anything I can help you with?"
    )
    assert (resp.id, resp.stop_reason) == ("msg_01QC4g3HwBThD4BaNtBckFDJ", "stop")
    assert usage_tuple(resp.usage) == (12, 30, 0, 0, 0)


def test_vercel_tool_without_arguments_gets_its_start_input() -> None:
    raw = chunks_to_sse(fixture(VERCEL + "anthropic-tool-no-args.chunks.txt").read_text())
    resp = collect(stream(raw))
    call = resp.message.tool_calls[0]
    assert (call.id, call.name, call.raw_arguments, call.arguments) == (
        "toolu_01QE1WLsSVp5hy5Q3GmGTmjP",
        "updateIssueList",
        "{}",
        {},
    )
    assert resp.message.content[0] == TextPart(text="I'll update the issue list for you.")
    assert usage_tuple(resp.usage) == (565, 48, 0, 0, 0)


def test_vercel_input_tokens_reported_again_in_message_delta_take_the_latest() -> None:
    raw = chunks_to_sse(fixture(VERCEL + "anthropic-message-delta-input-tokens.chunks.txt").read_text())
    events = stream(raw)
    assert events[0].usage.input_tokens == 43
    resp = collect(events)
    assert resp.message.content == [TextPart(text="pong")]
    assert usage_tuple(resp.usage) == (61, 2, 0, 0, 0)


def test_C10_upstream_side_two_tool_calls_get_their_own_parts() -> None:
    case = handed("C10")
    events = stream(sse(case["input"]["upstream_stream"]))
    starts = [e for e in events if isinstance(e, PartStart)]
    assert [(s.index, s.kind, s.id) for s in starts] == [
        (0, "text", None),
        (1, "tool_call", "toolu_s1"),
        (2, "tool_call", "toolu_s2"),
    ]
    args = {
        i: "".join(e.arguments for e in events if isinstance(e, PartDelta) and e.index == i and e.arguments)
        for i in (1, 2)
    }
    assert args == {1: '{"host":"a.example"}', 2: '{"host":"b.example"}'}
    resp = collect(events)
    assert resp.stop_reason == "tool_use" and resp.message.text == "Checking both hosts."
    assert usage_tuple(resp.usage) == (50, 60, 0, 0, 0)


def test_C20_A_max_tokens_mid_tool_call_reports_length_and_never_completes_json() -> None:
    case = handed("C20")
    step = case["input"]["steps"][0]
    resp = collect(stream(sse(step["upstream_stream"])))
    assert resp.stop_reason == "length"
    (call,) = resp.message.tool_calls
    assert call.id == "toolu_t1"
    assert call.raw_arguments == '{"commands": ["npm install", "npm test"'  # never closed by us
    assert call.arguments == {}


def test_C30_B_streamed_cache_reads_are_separate_from_input() -> None:
    case = handed("C30")
    events = stream(sse(case["input"]["case_B_streaming_events"]))
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.stop_reason == "stop"
    assert usage_tuple(end.usage) == (4, 20, 2000, 0, 0)
    assert end.usage.total_input_tokens == 2004


def test_error_event_becomes_stream_error_and_ends_the_stream() -> None:
    parser = anthropic_messages.new_stream_parser(ctx())
    raw = fixture(SDK + "basic_response.txt").read_bytes().split(b"event: content_block_stop")[0]
    events = replay_without_finish(parser, raw)
    out = parser.feed(
        "error", b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    )
    assert out == [StreamError(kind="overloaded", message="Overloaded", status=529)]
    assert parser.finish() == []
    assert isinstance(events[0], MessageStart)


def replay_without_finish(parser: Any, raw: bytes) -> list[Any]:
    from gateway.providers.sse import decode_all

    out: list[Any] = []
    for name, data in decode_all(raw):
        out.extend(parser.feed(name, data))
    return out


def test_cut_off_stream_raises_and_missing_message_stop_is_tolerated() -> None:
    raw = fixture(SDK + "basic_response.txt").read_bytes()
    cut = raw.split(b"event: message_delta")[0]
    with pytest.raises(UpstreamProtocolError):
        stream(cut)
    no_stop = raw.split(b"event: message_stop")[0]
    assert collect(stream(no_stop)).stop_reason == "stop"


def test_unknown_stop_reason_in_stream_raises() -> None:
    parser = anthropic_messages.new_stream_parser(ctx())
    with pytest.raises(UnknownStopReason):
        parser.feed(
            None, b'{"type":"message_delta","delta":{"stop_reason":"halted"},"usage":{"output_tokens":1}}'
        )


def test_server_tool_blocks_are_native_parts_and_indexes_stay_contiguous() -> None:
    events = [
        {
            "type": "message_start",
            "message": {"id": "m", "model": "c", "usage": {"input_tokens": 1, "output_tokens": 1}},
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"q":1}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta", "citation": {}}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "found"}},
        {"type": "content_block_stop", "index": 2},
        {"type": "some_future_event"},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    out = stream(b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events))
    assert [type(e) for e in out] == [
        MessageStart,
        PartStart,
        PartDelta,
        PartEnd,
        PartStart,
        PartDelta,
        PartDelta,
        PartEnd,
        MessageEnd,
    ]
    assert out[5] == PartDelta(index=1, citation={})  # citations_delta, verbatim
    start = events[1]["content_block"]
    data = orjson.dumps(start).decode()
    assert out[1] == PartStart(index=0, kind="native", api="anthropic_messages", data=data)
    assert out[2] == PartDelta(index=0, arguments='{"q":1}')
    assert out[4] == PartStart(index=1, kind="text")
    resp = collect(out)
    assert resp.message.content[0].block == {**start, "input": {"q": 1}}  # type: ignore[union-attr]
    assert resp.message.tool_calls == []


def test_redacted_thinking_block_carries_its_data() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "EmwKAhgB"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    resp = collect(stream(b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)))
    assert resp.message.content[0].type == "redacted_thinking"
    assert resp.message.content[0].data == "EmwKAhgB"  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- corpus-wide


@pytest.mark.skipif(not (corpus_dir() / "vercel-ai").is_dir(), reason="corpus not present")
def test_every_vercel_ai_anthropic_stream_parses() -> None:
    """Every recorded vercel-ai Anthropic stream (server tools, MCP, compaction, code execution,
    thinking…) parses without an exception; no unknown stop reason occurs in them."""
    files = sorted(
        glob.glob(str(corpus_dir() / "vercel-ai/packages/anthropic/src/__fixtures__/*.chunks.txt"))
    )
    assert len(files) >= 20
    for path in files:
        resp = collect(stream(chunks_to_sse(Path(path).read_text(encoding="utf-8"))))
        assert resp.stop_reason in ("stop", "tool_use", "length"), path
        assert resp.usage.output_tokens > 0, path


@pytest.mark.skipif(not (corpus_dir() / "anthropic-sdk-python").is_dir(), reason="corpus not present")
def test_every_anthropic_sdk_recorded_exchange_parses() -> None:
    """All 200 responses of the anthropic-sdk-python inline snapshots, streamed or not."""
    files = glob.glob(
        str(corpus_dir() / "anthropic-sdk-python/tests/lib/**/__inline_snapshot__/**/*.json"), recursive=True
    )
    seen = 0
    for path in files:
        for ex in orjson.loads(Path(path).read_bytes()):
            res = ex["response"]
            if res["status_code"] != 200:
                continue
            body = res["body"]
            raw = (body if isinstance(body, str) else orjson.dumps(body).decode()).encode()
            if "text/event-stream" in str(res.get("headers", {})).lower() or raw.startswith(b"event:"):
                resp = collect(stream(raw))
            else:
                resp = anthropic_messages.parse_response(raw, ctx())
            assert resp.stop_reason in ("stop", "tool_use", "length"), path
            seen += 1
    assert seen >= 20


# ---------------------------------------------------------------------------- server tools, through


def _fold(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic stream events -> the content blocks a client builds from them (start block,
    text deltas appended, ``input_json_delta`` fragments parsed into ``input``)."""
    blocks: dict[int, dict[str, Any]] = {}
    args: dict[int, str] = {}
    for ev in events:
        if ev.get("type") == "content_block_start":
            blocks[ev["index"]] = dict(ev["content_block"])
        elif ev.get("type") == "content_block_delta":
            d = ev["delta"]
            if d["type"] == "text_delta":
                blocks[ev["index"]]["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                args[ev["index"]] = args.get(ev["index"], "") + d["partial_json"]
    for i, raw in args.items():
        if raw:
            blocks[i]["input"] = json.loads(raw)
    return [blocks[i] for i in sorted(blocks)]


def _server(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in blocks if b["type"] == "server_tool_use" or b["type"].endswith("_tool_result")]


@pytest.mark.parametrize("name", ["anthropic-tool-search-regex.1", "anthropic-web-search-tool.1"])
def test_recorded_server_tool_streams_reach_an_anthropic_client_with_their_server_blocks_exact(
    name: str,
) -> None:
    """Recorded tool search and web search streams (vercel-ai), parsed and rendered by the
    Anthropic edge: the client rebuilds the same server_tool_use (input streamed as
    input_json_delta) and result blocks, and the same text."""
    from gateway.edges.anthropic_messages_stream import StreamRenderer

    rel = f"vercel-ai/packages/anthropic/src/__fixtures__/{name}.chunks.txt"
    lines = (REPO / "tests/fixtures" / rel).read_text(encoding="utf-8").splitlines()
    recorded = [json.loads(line) for line in lines if line.strip()]
    stops = [i for i, e in enumerate(recorded) if e["type"] == "message_stop"]
    recorded = recorded[: stops[0] + 1]  # the first answer (a file may hold the next step's too)
    events = stream(b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in recorded))
    renderer = StreamRenderer(Request(model="m", messages=[], stream=True))
    frames = [f for ev in events for f in renderer.render(ev)] + renderer.finish()
    rendered = [
        orjson.loads(line[6:]) for f in frames for line in f.split(b"\n") if line.startswith(b"data: ")
    ]
    want, got = _fold(recorded), _fold(rendered)
    assert _server(got) == _server(want) and _server(want)
    text = "".join(b.get("text", "") for b in want if b["type"] == "text")
    assert "".join(b.get("text", "") for b in got if b["type"] == "text") == text


@pytest.mark.parametrize("name", ["anthropic-tool-search-regex.1", "anthropic-web-search-tool.1"])
def test_recorded_server_tool_answers_reach_an_anthropic_client_with_their_server_blocks_exact(
    name: str,
) -> None:
    from gateway.edges.anthropic_messages_render import render_response

    rel = f"vercel-ai/packages/anthropic/src/__fixtures__/{name}.json"
    recorded = json.loads((REPO / "tests/fixtures" / rel).read_text(encoding="utf-8"))
    resp = anthropic_messages.parse_response(orjson.dumps(recorded), ctx())
    body = render_response(resp, Request(model="m", messages=[]))
    assert _server(body["content"]) == _server(recorded["content"]) and _server(recorded["content"])
