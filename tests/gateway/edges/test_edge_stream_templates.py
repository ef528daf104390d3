"""Text-delta frames from templates (gateway/edges/_frames.py) are byte-identical to frames
rendered from a dict, for any text, and follow changes of the chunk fields."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from gateway.edges import anthropic_messages, openai_chat
from gateway.edges._frames import MARKER, template
from gateway.schema import MessageStart, PartDelta, PartEnd, PartStart, Request, UserMessage

TEXTS = [
    "tok1 ",
    "",
    'quote " backslash \\ slash /',
    "line\nbreak\ttab\r\x00\x1f\x7f",
    "unicode é ü 中文 🎉 \u2028 \u2029",
    MARKER,
    "</script>",
]


def _request(model: str = "m", include_usage: bool = False) -> Request:
    return Request(model=model, messages=[UserMessage(content=[])], stream=True, include_usage=include_usage)


def _oa_expected(r: openai_chat.StreamRenderer, field: str, text: str) -> bytes:
    body: dict[str, Any] = {
        "id": r.id,
        "object": "chat.completion.chunk",
        "created": r.created,
        "model": r.model,
        "choices": [{"index": 0, "delta": {field: text}, "logprobs": None, "finish_reason": None}],
    }
    if r.include_usage:
        body["usage"] = None
    return b"data: " + orjson.dumps(body) + b"\n\n"


def _oa_delta_frame(r: openai_chat.StreamRenderer, index: int, text: str) -> bytes:
    (frame,) = r.render(PartDelta(index=index, text=text))
    return frame


def _oa_started(model: str = "m", include_usage: bool = False) -> openai_chat.StreamRenderer:
    r = openai_chat.StreamRenderer(_request(model, include_usage))
    r.render(MessageStart(id="abc", model=model))
    r.render(PartStart(index=0, kind="text"))
    r.render(PartStart(index=1, kind="thinking"))
    return r


@given(st.text(max_size=40))
def test_openai_text_delta_frame_is_the_dict_frame_for_any_text(text: str) -> None:
    r = _oa_started()
    if text:
        assert _oa_delta_frame(r, 0, text) == _oa_expected(r, "content", text)
        assert _oa_delta_frame(r, 1, text) == _oa_expected(r, "reasoning_content", text)


def test_openai_text_delta_frames_byte_for_byte() -> None:
    for include_usage in (False, True):
        r = _oa_started("gpt-4o-mini", include_usage)
        for text in TEXTS[2:]:
            assert _oa_delta_frame(r, 0, text) == _oa_expected(r, "content", text)
            assert _oa_delta_frame(r, 1, text) == _oa_expected(r, "reasoning_content", text)


def test_openai_templates_follow_changes_of_the_chunk_fields() -> None:
    r = _oa_started()
    first = _oa_delta_frame(r, 0, "a")
    r.created = 1
    r.model = "other"
    r.id = "chatcmpl-other"
    second = _oa_delta_frame(r, 0, "a")
    assert second != first and second == _oa_expected(r, "content", "a")
    r.include_usage = True
    assert _oa_delta_frame(r, 0, "a") == _oa_expected(r, "content", "a")


def test_openai_model_name_holding_the_marker_falls_back_to_the_dict_frame() -> None:
    r = _oa_started(model=MARKER)
    for text in TEXTS:
        if text:
            assert _oa_delta_frame(r, 0, text) == _oa_expected(r, "content", text)
    assert r._delta_frames["content"] == ()  # no template was made


def _an_expected(n: int, dtype: str, field: str, text: str) -> bytes:
    data = {"type": "content_block_delta", "index": n, "delta": {"type": dtype, field: text}}
    return b"event: content_block_delta\ndata: " + orjson.dumps(data) + b"\n\n"


@given(st.text(min_size=1, max_size=40))
def test_anthropic_text_delta_frame_is_the_dict_frame_for_any_text(text: str) -> None:
    r = anthropic_messages.StreamRenderer(_request())
    r.render(MessageStart(id="abc", model="m"))
    r.render(PartStart(index=0, kind="text"))
    frames = r.render(PartDelta(index=0, text=text))
    assert frames[-1] == _an_expected(0, "text_delta", "text", text)


def test_anthropic_text_and_thinking_delta_frames_byte_for_byte_in_every_block() -> None:
    r = anthropic_messages.StreamRenderer(_request())
    r.render(MessageStart(id="abc", model="m"))
    for block, (index, kind) in enumerate([(0, "thinking"), (1, "text"), (2, "thinking"), (3, "text")]):
        r.render(PartStart(index=index, kind=kind))  # type: ignore[arg-type]
        dtype, field = ("thinking_delta", "thinking") if kind == "thinking" else ("text_delta", "text")
        for text in TEXTS:
            if text:
                frames = r.render(PartDelta(index=index, text=text))
                assert frames[-1] == _an_expected(block, dtype, field, text)


def test_template_is_refused_when_the_marker_occurs_twice_or_not_at_all() -> None:
    one = b'data: {"a":' + orjson.dumps(MARKER) + b"}\n\n"
    assert template(one) == (b'data: {"a":', b"}\n\n")
    assert template(b'data: {"a":' + orjson.dumps(MARKER) * 2 + b"}\n\n") == ()
    assert template(b"data: {}\n\n") == ()


def test_anthropic_thinking_delta_with_a_signature_takes_the_full_path() -> None:
    """Text and signature in one delta: the text frame now, the signature before the block stops."""
    r = anthropic_messages.StreamRenderer(_request())
    r.render(MessageStart(id="abc", model="m"))
    r.render(PartStart(index=0, kind="thinking"))
    assert r.render(PartDelta(index=0, text="hm"))[-1] == _an_expected(0, "thinking_delta", "thinking", "hm")
    frames = r.render(PartDelta(index=0, text="more", signature="SIG"))
    assert frames == [_an_expected(0, "thinking_delta", "thinking", "more")]
    closing = r.render(PartEnd(index=0))
    assert b'"signature_delta"' in closing[0] and b"content_block_stop" in closing[-1]
