"""The stream parsers' shortcuts for the usual chunk give what the general path gives."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gateway.config import Deployment
from gateway.providers.openai_stream import OpenAIChatStreamParser
from gateway.providers.wire import CallContext
from gateway.schema import Request, StreamEvent, TextPart, UserMessage

DEP = Deployment(name="d", api="openai_chat", model="gpt-x")
CTX = CallContext(
    deployment=DEP, request=Request(model="d", messages=[UserMessage(content=[TextPart(text="q")])])
)

_TEXT = st.text(max_size=6)
_DELTA = st.one_of(
    _TEXT.map(lambda t: {"content": t}),
    _TEXT.map(lambda t: {"role": "assistant", "content": t}),
    _TEXT.map(lambda t: {"reasoning_content": t}),
    _TEXT.map(lambda t: {"refusal": t}),
    st.just({"content": None}),
    st.integers(min_value=0, max_value=1).flatmap(
        lambda i: _TEXT.map(
            lambda t: {"tool_calls": [{"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": t}}]}
        )
    ),
)


def _run(deltas: list[dict[str, Any]], pad: bool) -> list[StreamEvent]:
    parser = OpenAIChatStreamParser(CTX)
    out: list[StreamEvent] = []
    for delta in [*deltas, {}]:
        d = {**delta, "x_unknown": 1} if pad else delta  # an unknown key: the general path
        finish = "stop" if not delta else None
        body = {"id": "c", "model": "gpt-x", "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
        out += parser.feed(None, orjson.dumps(body))
    return out + parser.feed(None, b"[DONE]")


@given(st.lists(_DELTA, max_size=12))
def test_openai_text_only_chunks_parse_as_the_general_path_does(deltas: list[dict[str, Any]]) -> None:
    assert _run(deltas, pad=False) == _run(deltas, pad=True)


_AN_INDEX = st.sampled_from([0, 0, 0, 1, 1, True, "0", None])
_AN_EVENT = st.one_of(
    st.tuples(_AN_INDEX, st.sampled_from(["text", "text", "thinking", "tool_use", "server_tool_use"])).map(
        lambda t: {
            "type": "content_block_start",
            "index": t[0],
            "content_block": {"type": t[1], "id": "t", "name": "f"},
        }
    ),
    st.tuples(
        _AN_INDEX, st.sampled_from(["text_delta", "text_delta", "thinking_delta", "input_json_delta"]), _TEXT
    ).map(
        lambda t: {
            "type": "content_block_delta",
            "index": t[0],
            "delta": {"type": t[1], "text": t[2], "thinking": t[2], "partial_json": t[2]},
        }
    ),
    st.tuples(_AN_INDEX, _TEXT).map(lambda t: {"type": "content_block_delta", "index": t[0], "delta": t[1]}),
    _AN_INDEX.map(lambda i: {"type": "content_block_stop", "index": i}),
)
_AN_START = {"type": "message_start", "message": {"id": "m", "model": "x", "usage": {"input_tokens": 1}}}
_AN_END = [
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]


def _an_text(index: Any, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


def _an_start(index: Any, kind: str) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": kind, "id": "t", "name": "f"},
    }


@settings(max_examples=300)
@given(st.lists(_AN_EVENT, max_size=14))
@example(
    [_an_start(0, "text"), _an_text(0, "a"), {"type": "content_block_stop", "index": 0}, _an_text(0, "b")]
)
@example([_an_start(0, "text"), _an_text(0, ""), _an_text(0, "a"), _an_text(True, "b"), _an_text(1, "c")])
@example([_an_start(0, "thinking"), _an_text(0, "a"), _an_start(1, "server_tool_use"), _an_text(1, "b")])
def test_anthropic_text_deltas_parse_as_the_general_path_does(events: list[dict[str, Any]]) -> None:
    from gateway.providers.anthropic_stream import AnthropicStreamParser

    dep = Deployment(name="d", api="anthropic_messages", model="claude-x")
    ctx = CallContext(deployment=dep, request=CTX.request)
    fast, general = AnthropicStreamParser(ctx), AnthropicStreamParser(ctx)
    got: list[StreamEvent] = []
    want: list[StreamEvent] = []
    for ev in [_AN_START, *events, *_AN_END]:
        got += fast.feed(ev["type"], orjson.dumps(ev))  # takes the shortcut where it applies
        want += general.feed_obj(ev, ev["type"])  # never does
    assert got == want
