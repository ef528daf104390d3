"""Streaming side of gateway/providers/openai_chat.py (openai_stream.py), from recorded streams."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import orjson
import pytest
from _wire_helpers import (
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
from gateway.providers import openai_chat
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

DEP = Deployment(name="oa", api="openai_chat", model="gpt-4o-mini")
FANTASY = "fantasy/providertests/testdata/TestOpenAICommon/openai-gpt-4o-mini/"


def ctx(d: Deployment = DEP) -> CallContext:
    return CallContext(deployment=d, request=Request(model="m", messages=[]), names=NameMap())


def stream(raw: bytes, chunk: int | None = None, c: CallContext | None = None) -> list[Any]:
    return replay(openai_chat.new_stream_parser(c or ctx()), raw, chunk)


def data(*objs: Any) -> bytes:
    return b"".join(b"data: " + (o if isinstance(o, bytes) else orjson.dumps(o)) + b"\n\n" for o in objs)


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_fantasy_parallel_tool_call_stream() -> None:
    raw = response_body(cassette(FANTASY + "multi_tool_streaming.yaml")[0])
    for size in (None, 7, 64):
        events = stream(raw, size)
        resp = collect(events)
        assert resp.id == "chatcmpl-DuLdWOILVCVVrpY7aRAWaTdcPyWSy"
        assert resp.stop_reason == "tool_use"
        assert [(c.id, c.name, c.raw_arguments) for c in resp.message.tool_calls] == [
            ("call_cclGbjTQkZDEnnHrRiU0n7NO", "add", '{"a": 2, "b": 3}'),
            ("call_Nob2SzTcxIjro1HvSBPQS6XG", "multiply", '{"a": 2, "b": 3}'),
        ]
        assert usage_tuple(resp.usage) == (106, 50, 0, 0, 0)
        starts = [e for e in events if isinstance(e, PartStart)]
        assert [(s.index, s.kind) for s in starts] == [(0, "tool_call"), (1, "tool_call")]


def test_recorded_stream_and_non_stream_of_the_same_answer_collect_equal() -> None:
    """fantasy simple.yaml / simple_streaming.yaml: the same answer "Olá!" both ways."""
    whole = openai_chat.parse_response(response_body(cassette(FANTASY + "simple.yaml")[0]), ctx())
    streamed = collect(stream(response_body(cassette(FANTASY + "simple_streaming.yaml")[0])))
    assert summary(streamed) == summary(whole) == [("text", "Olá!")]
    assert streamed.stop_reason == whole.stop_reason == "stop"
    assert usage_tuple(streamed.usage) == usage_tuple(whole.usage) == (20, 2, 0, 0, 0)
    # and the two tool calls of multi_tool.yaml vs multi_tool_streaming.yaml
    whole_t = openai_chat.parse_response(response_body(cassette(FANTASY + "multi_tool.yaml")[0]), ctx())
    streamed_t = collect(stream(response_body(cassette(FANTASY + "multi_tool_streaming.yaml")[0])))
    assert summary(whole_t) == summary(streamed_t)
    assert [c.raw_arguments for c in whole_t.message.tool_calls] == [
        c.raw_arguments for c in streamed_t.message.tool_calls
    ]


def test_envoy_stream_length_with_only_reasoning_usage() -> None:
    raw = response_body(
        cassette("envoy-ai-gateway/tests/internal/testopenai/cassettes/chat-streaming-detailed-usage.yaml")[0]
    )
    resp = collect(stream(raw))
    assert resp.stop_reason == "length" and resp.message.content == []
    assert usage_tuple(resp.usage) == (12, 100, 0, 0, 100)


def test_xai_reasoning_then_complete_tool_call_in_one_delta() -> None:
    raw = chunks_to_sse(
        fixture("vercel-ai/packages/xai/src/__fixtures__/xai-tool-call.chunks.txt").read_text()
    )
    resp = collect(stream(raw))
    thinking, call = resp.message.content
    assert thinking.type == "thinking" and thinking.text == "First, the user is"
    assert call.type == "tool_call" and (call.id, call.name, call.raw_arguments) == (
        "call_55117580",
        "weather",
        '{"location":"San Francisco"}',
    )
    assert resp.stop_reason == "tool_use"
    assert usage_tuple(resp.usage) == (1, 26 + 196, 290, 0, 196)


def test_deepseek_usage_on_the_finish_chunk_without_done() -> None:
    raw = chunks_to_sse(
        fixture("vercel-ai/packages/deepseek/src/chat/__fixtures__/deepseek-tool-call.chunks.txt").read_text()
    )
    resp = collect(stream(raw))
    assert resp.message.content[0].type == "thinking"
    (call,) = resp.message.tool_calls
    assert (call.id, call.raw_arguments) == (
        "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
        '{"location": "San Francisco"}',
    )
    assert usage_tuple(resp.usage) == (19, 83, 320, 0, 39)


def test_alibaba_empty_id_continuations_and_trailing_empty_delta() -> None:
    raw = chunks_to_sse(
        fixture("vercel-ai/packages/alibaba/src/__fixtures__/alibaba-tool-call.chunks.txt").read_text()
    )
    resp = collect(stream(raw))
    (call,) = resp.message.tool_calls
    assert (call.id, call.name, call.raw_arguments) == (
        "call_eee11723464a4b9eb8cee71d",
        "weather",
        '{"location": "San Francisco"}',
    )
    assert usage_tuple(resp.usage) == (295, 22, 0, 0, 0)


def test_mistral_incremental_call_with_empty_name_on_continuation() -> None:
    raw = chunks_to_sse(
        fixture(
            "vercel-ai/packages/mistral/src/__fixtures__/mistral-incremental-tool-call.chunks.txt"
        ).read_text()
    )
    resp = collect(stream(raw))
    (call,) = resp.message.tool_calls
    assert (call.id, call.name) == ("chatcmpl-tool-9f149c74c42f265b", "webSearchTool")
    assert call.arguments == {"query": "current Berlin weather"}
    assert usage_tuple(resp.usage) == (171 - 128, 14, 128, 0, 0)


def test_azure_prompt_filter_chunk_before_the_answer() -> None:
    raw = chunks_to_sse(
        fixture("vercel-ai/packages/openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt").read_text()
    )
    events = stream(raw)
    assert isinstance(events[0], MessageStart) and events[0].id == "chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt"
    resp = collect(events)
    assert resp.message.content == [TextPart(text="Capital of Denmark.")]
    assert usage_tuple(resp.usage) == (15, 78, 0, 0, 64)


def test_C12_one_delta_with_text_and_tool_call_start_yields_both() -> None:
    raw = data(
        chunk(
            {
                "role": "assistant",
                "content": "Initialising the project: ",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_m1",
                        "type": "function",
                        "function": {"name": "run", "arguments": ""},
                    }
                ],
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"cmd":"make init"}'}}]}),
        chunk({}, "tool_calls"),
    )
    events = stream(raw)
    kinds = [(type(e).__name__, getattr(e, "index", None)) for e in events]
    assert kinds == [
        ("MessageStart", None),
        ("PartStart", 0),
        ("PartDelta", 0),
        ("PartEnd", 0),
        ("PartStart", 1),
        ("PartDelta", 1),
        ("PartEnd", 1),
        ("MessageEnd", None),
    ]
    assert events[4] == PartStart(index=1, kind="tool_call", id="call_m1", name="run")
    resp = collect(events)
    assert resp.message.content[0] == TextPart(text="Initialising the project: ")
    assert resp.message.tool_calls[0].raw_arguments == '{"cmd":"make init"}'
    assert resp.stop_reason == "tool_use"


def test_stream_cut_before_finish_reason_raises() -> None:
    raw = data(chunk({"content": "partial"}))
    with pytest.raises(UpstreamProtocolError):
        stream(raw)
    with pytest.raises(UpstreamProtocolError):
        stream(raw + b"data: [DONE]\n\n")


def test_unknown_finish_reason_raises_when_it_arrives() -> None:
    parser = openai_chat.new_stream_parser(ctx())
    parser.feed(None, orjson.dumps(chunk({"content": "x"})))
    with pytest.raises(UnknownStopReason):
        parser.feed(None, orjson.dumps(chunk({}, "eos")))


def test_mid_stream_error_payload_becomes_stream_error() -> None:
    """OpenRouter sends {"error": {...}} as a data chunk when the provider fails mid-stream."""
    parser = openai_chat.new_stream_parser(ctx())
    parser.feed(None, orjson.dumps(chunk({"content": "x"})))
    out = parser.feed(None, b'{"error": {"code": 429, "message": "Rate limit exceeded"}}')
    assert out == [StreamError(kind="rate_limit", message="Rate limit exceeded", status=429)]
    assert parser.finish() == []


def test_stop_with_tool_calls_in_stream_is_tool_use_and_names_map_back() -> None:
    c = ctx()
    sent = c.names.to_upstream_name("fs.read", openai_chat.TOOL_NAME)
    raw = data(
        chunk(
            {"tool_calls": [{"index": 0, "id": "toolu_01", "function": {"name": sent, "arguments": "{}"}}]}
        ),
        chunk({}, "stop"),
        b"[DONE]",
    )
    resp = collect(stream(raw, c=c))
    assert resp.stop_reason == "tool_use"
    assert resp.message.tool_calls[0].name == "fs.read"


def test_deltas_without_index_and_repeated_index_with_new_id() -> None:
    raw = data(
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x":'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": "1}"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    )
    resp = collect(stream(raw))
    assert [(c.id, c.name, c.raw_arguments) for c in resp.message.tool_calls] == [
        ("a", "f", '{"x":1}'),
        ("b", "g", "{}"),
    ]


def test_name_arriving_after_arguments_is_waited_for() -> None:
    raw = data(
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": '{"k"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"name": "late", "arguments": ":2}"}}]}),
        chunk({}, "tool_calls"),
    )
    events = stream(raw)
    assert events[1] == PartStart(index=0, kind="tool_call", id="a", name="late")
    assert collect(events).message.tool_calls[0].raw_arguments == '{"k":2}'


def test_feed_obj_is_the_dict_level_entry_point() -> None:
    parser = openai_chat.new_stream_parser(ctx())
    out = parser.feed_obj(chunk({"content": "hi"}, "stop"))
    assert [type(e) for e in out] == [MessageStart, PartStart, PartDelta, PartEnd]
    assert parser.feed(None, b"[DONE]") == [MessageEnd(stop_reason="stop")]


# ---------------------------------------------------------------------------- corpus-wide

# Chat-Completions-shaped vercel-ai streams (``choices`` deltas); Responses API, Gemini and
# Cohere streams have other shapes and are not this module's input.
_CHAT_DIRS = [
    "openai/src/chat",
    "openai-compatible/src/chat",
    "deepseek/src/chat",
    "groq/src",
    "xai/src",
    "alibaba/src",
    "mistral/src",
    "perplexity/src",
]


def _chat_stream_files() -> list[str]:
    root = corpus_dir() / "vercel-ai" / "packages"
    files: list[str] = []
    for d in _CHAT_DIRS:
        files.extend(sorted(glob.glob(str(root / d / "__fixtures__" / "*.chunks.txt"))))
    return files


@pytest.mark.skipif(not (corpus_dir() / "vercel-ai").is_dir(), reason="corpus not present")
def test_every_vercel_ai_chat_stream_parses() -> None:
    files = _chat_stream_files()
    assert len(files) >= 15
    for path in files:
        text = Path(path).read_text(encoding="utf-8")
        resp = collect(stream(chunks_to_sse(text)))
        assert resp.stop_reason in ("stop", "length", "tool_use"), path
        for call in resp.message.tool_calls:
            assert call.id and call.name, path
