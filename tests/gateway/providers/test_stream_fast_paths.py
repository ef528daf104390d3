"""The stream parsers' shortcuts for the usual chunk give what the general path gives."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from gateway.config import Deployment
from gateway.providers.base import CallContext
from gateway.providers.openai_stream import OpenAIChatStreamParser
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
