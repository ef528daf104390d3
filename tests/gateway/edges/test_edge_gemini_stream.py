"""Internal stream events -> Gemini SSE frames: incremental parts, calls when they end, usage
and finishReason in the last frame, errors as Gemini's in-stream error object."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.edges import gemini
from gateway.edges.signatures import unwrap_b64_signature
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
    Usage,
    UserMessage,
    WithheldToolCall,
)

REQ = Request(model="g", messages=[UserMessage(content=[TextPart(text="hi")])], stream=True)
PROV = Provenance(api="gemini", provider="google", model="m")


def _chunks(frames: list[bytes]) -> list[dict[str, Any]]:
    out = []
    for frame in frames:
        assert frame.startswith(b"data: ") and frame.endswith(b"\n\n"), frame
        out.append(orjson.loads(frame[6:]))
    return out


def _parts(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    return chunk["candidates"][0]["content"]["parts"]


def test_text_thinking_and_a_call_stream_in_order() -> None:
    r = gemini.StreamRenderer(REQ)
    frames: list[bytes] = []
    for ev in [
        MessageStart(id="rid", model="m"),
        PartStart(index=0, kind="thinking", provenance=PROV),
        PartDelta(index=0, text="think"),
        PartDelta(index=0, signature="TS"),
        PartEnd(index=0),
        PartStart(index=1, kind="text"),
        PartDelta(index=1, text="Hel"),
        PartDelta(index=1, text="lo"),
        PartEnd(index=1),
        PartStart(index=2, kind="tool_call", id="c1", name="f", signature="FS", provenance=PROV),
        PartDelta(index=2, arguments='{"a":'),
        PartDelta(index=2, arguments=" 1}"),
        PartEnd(index=2),
        MessageEnd(stop_reason="tool_use", usage=Usage(input_tokens=5, output_tokens=9, reasoning_tokens=2)),
    ]:
        frames += r.render(ev)
    assert r.closed
    chunks = _chunks(frames)
    parts = [_parts(c) for c in chunks]
    assert parts[0] == [{"text": "think", "thought": True}]
    assert parts[1][0]["thought"] is True and unwrap_b64_signature(parts[1][0]["thoughtSignature"])[0] == "TS"
    assert parts[2:4] == [[{"text": "Hel"}], [{"text": "lo"}]]
    assert parts[4][0]["functionCall"] == {"id": "c1", "name": "f", "args": {"a": 1}}
    assert unwrap_b64_signature(parts[4][0]["thoughtSignature"]) == ("FS", PROV, False)
    assert all("usageMetadata" not in c for c in chunks[:-1])
    last = chunks[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["usageMetadata"]["promptTokenCount"] == 5
    assert last["usageMetadata"]["thoughtsTokenCount"] == 2
    assert {c["responseId"] for c in chunks} == {"rid"}
    assert r.finish() == []


def test_a_signature_after_text_goes_out_as_a_signed_empty_text_part() -> None:
    r = gemini.StreamRenderer(REQ)
    frames: list[bytes] = []
    for ev in [
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="ok"),
        PartEnd(index=0),
        PartStart(index=1, kind="thinking", provenance=PROV),
        PartDelta(index=1, signature="SIG"),
        PartEnd(index=1),
    ]:
        frames += r.render(ev)
    last = _parts(_chunks(frames)[-1])[0]
    assert last["text"] == "" and "thought" not in last
    assert unwrap_b64_signature(last["thoughtSignature"])[0] == "SIG"


def test_withheld_calls_never_appear_only_in_turnstile() -> None:
    r = gemini.StreamRenderer(REQ)
    w = WithheldToolCall(id="c1", name="f", raw_arguments='{"a":', reason="not complete JSON")
    chunks = _chunks(r.render(MessageEnd(stop_reason="length", withheld_tool_calls=[w])))
    assert chunks[-1]["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert chunks[-1]["turnstile"]["withheld_tool_calls"][0]["id"] == "c1"
    assert not any("functionCall" in p for c in chunks for p in _parts(c))


def test_an_error_after_the_start_is_a_last_error_frame() -> None:
    r = gemini.StreamRenderer(REQ)
    r.render(PartStart(index=0, kind="text"))
    chunks = _chunks(r.render(StreamError(kind="upstream", message="boom", status=502)))
    assert chunks == [{"error": {"code": 502, "message": "boom", "status": "INTERNAL"}}]
    assert r.closed and r.render(PartDelta(index=0, text="x")) == []


def test_a_stream_cut_before_its_end_finishes_with_an_error() -> None:
    r = gemini.StreamRenderer(REQ)
    r.render(PartStart(index=0, kind="text"))
    (chunk,) = _chunks(r.finish())
    assert chunk["error"]["code"] == 502


def test_keep_alive_is_an_empty_data_frame() -> None:
    assert _chunks([gemini.ping_frame()]) == [{}]
    assert gemini.tool_progress_frame("x") == gemini.ping_frame()


def test_without_include_thoughts_a_stream_sends_the_signature_and_no_thought_text() -> None:
    body = orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    r = gemini.StreamRenderer(gemini.parse_request(body, model="g", stream=True))
    frames: list[bytes] = []
    for ev in [
        MessageStart(id="rid", model="m"),
        PartStart(index=0, kind="thinking", provenance=PROV),
        PartDelta(index=0, text="secret"),
        PartDelta(index=0, signature="TS"),
        PartEnd(index=0),
        PartStart(index=1, kind="text"),
        PartDelta(index=1, text="Hello"),
        PartEnd(index=1),
        MessageEnd(stop_reason="stop", usage=Usage(input_tokens=5, output_tokens=9)),
    ]:
        frames += r.render(ev)
    assert b"secret" not in b"".join(frames)
    parts = [_parts(c) for c in _chunks(frames)]
    assert parts[0][0]["text"] == "" and unwrap_b64_signature(parts[0][0]["thoughtSignature"])[0] == "TS"
    assert parts[1] == [{"text": "Hello"}]
