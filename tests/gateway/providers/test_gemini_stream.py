"""Gemini stream parser over recorded streams (vercel-ai chunks, fantasy and pydantic-ai SSE
cassettes; see tests/fixtures/**/ORIGIN.md), handed case C13 and a corpus-wide replay."""

from __future__ import annotations

import orjson
import pytest
from _gemini_helpers import (
    FANTASY_GOOGLE,
    PYDANTIC_GOOGLE,
    VERCEL_GOOGLE,
    chunks_file,
    context,
    corpus_dir,
    deployment,
    govcr,
    replay,
    replay_response,
    sse_payloads,
    user_request,
)

from gateway.errors import UnknownStopReason, UpstreamProtocolError
from gateway.providers import gemini
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    Request,
    StreamError,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    Usage,
)

C13_CHUNK = {
    "candidates": [
        {
            "index": 0,
            "content": {
                "role": "model",
                "parts": [{"functionCall": {"name": "add_numbers", "args": {"a": 17, "b": 25}}}],
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 8, "totalTokenCount": 38},
}


def _c13_context():  # type: ignore[no-untyped-def]
    tool = ToolDefinition(
        name="add_numbers",
        description="test tool",
        parameters={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
    )
    return context(request=user_request("Use add_numbers for 17 + 25.", tools=[tool], stream=True))


def test_c13_whole_function_call_in_one_chunk_streams_start_one_delta_end() -> None:
    ctx = _c13_context()
    events = replay(ctx, [orjson.dumps(C13_CHUNK)])
    assert [type(e) for e in events] == [MessageStart, PartStart, PartDelta, PartEnd, MessageEnd]
    start, delta, end = events[1], events[2], events[4]
    assert isinstance(start, PartStart) and start.kind == "tool_call" and start.name == "add_numbers"
    assert isinstance(delta, PartDelta) and orjson.loads(delta.arguments or "") == {"a": 17, "b": 25}
    assert isinstance(end, MessageEnd) and end.stop_reason == "tool_use"
    assert end.usage == Usage(input_tokens=30, output_tokens=8)


def test_c13_streamed_result_equals_non_streaming_result() -> None:
    ctx = _c13_context()
    streamed = replay_response(ctx, [orjson.dumps(C13_CHUNK)])
    whole = gemini.parse_response(orjson.dumps(C13_CHUNK), ctx)
    assert streamed == whole


def test_recorded_text_stream_with_trailing_signature() -> None:
    ctx = context(deployment("gemini-3-pro-preview"))
    resp = replay_response(ctx, chunks_file(VERCEL_GOOGLE / "google-reasoning.chunks.txt"))
    text, sig = resp.message.content
    assert isinstance(text, TextPart) and isinstance(sig, ThinkingPart)
    assert text.text == 'There are **3** "r"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.'
    assert sig.text == "" and (sig.signature or "").startswith("Eo0HCooHAb4+9vutXdtKMt")
    assert sig.provenance == Provenance(api="gemini", provider="google", model="gemini-3-pro-preview")
    assert resp.id == "dX6LadKVC7SZ28oPr9yJoQs"
    assert resp.stop_reason == "stop"
    assert resp.usage == Usage(input_tokens=9, output_tokens=29 + 256, reasoning_tokens=256)


def test_recorded_tool_call_stream_matches_its_non_streaming_shape() -> None:
    ctx = context(deployment("gemini-3-pro-preview"))
    resp = replay_response(ctx, chunks_file(VERCEL_GOOGLE / "google-tool-call.chunks.txt"))
    (call,) = resp.message.content
    assert isinstance(call, ToolCallPart)
    assert (call.name, call.arguments) == ("weather", {"location": "San Francisco"})
    assert (call.signature or "").startswith("EqUCCqICAb4+9vsh8Pd5taZVoPzSvjWW")
    assert resp.stop_reason == "tool_use"
    assert resp.usage.output_tokens == 15 + 45


def test_recorded_partial_args_stream_assembles_two_calls() -> None:
    ctx = context(deployment("gemini-3.1-pro-preview"))
    resp = replay_response(ctx, chunks_file(VERCEL_GOOGLE / "google-stream-tool-call-arguments.chunks.txt"))
    calls = resp.message.tool_calls
    assert [(c.name, c.raw_arguments) for c in calls] == [
        ("getWeather", '{"location":"Boston"}'),
        ("getWeather", '{"location":"San Francisco"}'),
    ]
    assert calls[0].signature is not None and calls[1].signature is None
    assert calls[0].id != calls[1].id
    assert resp.stop_reason == "tool_use"


def test_recorded_array_partial_args_without_terminal_call_chunk() -> None:
    ctx = context()
    name = "google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks.txt"
    resp = replay_response(ctx, chunks_file(VERCEL_GOOGLE / name))
    (call,) = resp.message.tool_calls
    assert call.name == "writeItems"
    assert call.arguments == {
        "operations": [
            {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
            {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3},
        ]
    }


def test_recorded_thought_then_parallel_calls_including_no_args_call() -> None:
    ctx = context(deployment("gemini-3-flash-preview"))
    resp = replay_response(ctx, chunks_file(VERCEL_GOOGLE / "google-stream-no-args-tool-call.chunks.txt"))
    thinking, *calls = resp.message.content
    assert isinstance(thinking, ThinkingPart) and thinking.text.startswith("**Processing User Requests**")
    assert [(c.name, c.arguments) for c in calls if isinstance(c, ToolCallPart)] == [
        ("read_theme", {}),
        ("read_screen", {"id": "A"}),
        ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"}),
    ]
    assert resp.usage.input_tokens == 249


def test_call_cut_off_mid_arguments_keeps_json_incomplete() -> None:
    chunks = [
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "w", "willContinue": True}}]}}]},
        {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {
                                "functionCall": {
                                    "partialArgs": [
                                        {"jsonPath": "$.text", "stringValue": "hel", "willContinue": True}
                                    ],
                                    "willContinue": True,
                                }
                            }
                        ]
                    },
                    "finishReason": "MAX_TOKENS",
                }
            ]
        },
    ]
    resp = replay_response(context(), [orjson.dumps(c) for c in chunks])
    (call,) = resp.message.tool_calls
    assert resp.stop_reason == "length"
    assert call.raw_arguments == '{"text":"hel"'
    assert call.arguments == {}


def test_fantasy_gemini3_tool_stream_uses_upstream_call_id_and_turn2_sends_it_back() -> None:
    turn1, turn2 = govcr(FANTASY_GOOGLE / "TestGoogleCommon/gemini-3-pro-preview/tool_streaming.yaml")
    dep = deployment("gemini-3-pro-preview")
    resp = replay_response(context(dep), sse_payloads(turn1["body"]))
    (call,) = resp.message.tool_calls
    assert call.id == "89nz05jy"
    req = Request(
        model="m",
        messages=[
            *user_request("What's the weather in Florence,Italy?").messages,
            resp.message,
            ToolResultMessage(tool_call_id=call.id, content=[TextPart(text="40 C")]),
        ],
    )
    up, _ = gemini.build_request(req, dep, "k")
    ours = orjson.loads(up.body)["contents"]
    theirs = turn2["request"]["contents"]
    assert ours[1]["parts"] == theirs[1]["parts"]  # functionCall with id + signature, byte-identical
    assert ours[2]["parts"][0]["functionResponse"]["id"] == theirs[2]["parts"][0]["functionResponse"]["id"]
    answer = replay_response(context(dep), sse_payloads(turn2["body"]))
    assert (
        answer.message.text
        == "The current weather in Florence, Italy is 40°C (104°F). Stay hydrated, it's quite hot!"
    )
    assert answer.usage.input_tokens == 206  # usage of the last chunk


def test_pydantic_ai_streaming_call_with_signature() -> None:
    import yaml

    data = yaml.safe_load(
        (PYDANTIC_GOOGLE / "test_google_streaming_tool_call_thought_signature.yaml").read_text(
            encoding="utf-8"
        )
    )
    body = data["interactions"][0]["response"]["body"]["string"]
    resp = replay_response(context(deployment("gemini-3-pro-preview")), sse_payloads(body))
    (call,) = resp.message.tool_calls
    assert call.name == "get_country" and call.arguments == {}
    assert (call.signature or "").startswith("EpwICpkIAXLI2nxlU6gsWZaZHRYk")


def test_stream_without_finish_reason_is_cut_off() -> None:
    parser = gemini.new_stream_parser(context())
    parser.feed(None, b'{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}')
    with pytest.raises(UpstreamProtocolError, match="cut-off"):
        parser.finish()


def test_error_chunk_mid_stream_becomes_stream_error() -> None:
    parser = gemini.new_stream_parser(context())
    events = parser.feed(None, b'{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}')
    events += parser.feed(None, b'{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}')
    assert (
        isinstance(events[-1], StreamError) and events[-1].status == 503 and events[-1].kind == "overloaded"
    )
    assert isinstance(events[-2], PartEnd)
    assert parser.finish() == []


def test_non_json_chunk_and_unknown_finish_reason_raise() -> None:
    with pytest.raises(UpstreamProtocolError):
        gemini.new_stream_parser(context()).feed(None, b"{nope")
    with pytest.raises(UnknownStopReason):
        gemini.new_stream_parser(context()).feed(None, b'{"candidates":[{"finishReason":"BRAND_NEW"}]}')


def test_thought_chunks_merge_until_signed() -> None:
    chunks = [
        {"candidates": [{"content": {"parts": [{"text": "a", "thought": True}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "b", "thought": True, "thoughtSignature": "S"}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "c", "thought": True}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "answer"}]}, "finishReason": "STOP"}]},
    ]
    resp = replay_response(context(), [orjson.dumps(c) for c in chunks])
    assert [
        (type(p).__name__, getattr(p, "text", ""), getattr(p, "signature", None))
        for p in resp.message.content
    ] == [
        ("ThinkingPart", "ab", "S"),
        ("ThinkingPart", "c", None),
        ("TextPart", "answer", None),
    ]


# ---------------------------------------------------------------------------- corpus-wide


def _corpus_chunk_files() -> list[str]:
    root = corpus_dir() / "vercel-ai/packages/google/src/__fixtures__"
    if not root.is_dir():
        return []
    return sorted(str(p) for p in root.glob("*.chunks.txt"))


@pytest.mark.skipif(not _corpus_chunk_files(), reason="corpus not present (set TURNSTILE_CORPUS)")
@pytest.mark.parametrize("path", _corpus_chunk_files() or ["-"])
def test_every_vercel_google_chunks_file_parses_to_a_complete_answer(path: str) -> None:
    from pathlib import Path

    payloads = chunks_file(Path(path))
    ctx = context()
    events = replay(ctx, payloads)
    assert isinstance(events[0], MessageStart)
    assert isinstance(events[-1], MessageEnd)
    resp = replay_response(ctx, payloads)
    assert resp.message.content
    assert resp.stop_reason in ("stop", "tool_use")
    for call in resp.message.tool_calls:
        assert orjson.loads(call.raw_arguments) == call.arguments
    last_usage = [orjson.loads(p) for p in payloads][-1].get("usageMetadata")
    assert resp.usage.input_tokens == (last_usage or {}).get("promptTokenCount", 0)
