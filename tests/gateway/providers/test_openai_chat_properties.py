"""Property tests: schema -> Chat Completions wire -> schema keeps tool-call ids, names and raw
arguments byte-exact, whole and streamed; rewritten names and ids are injective."""

from __future__ import annotations

from typing import Any

import orjson
from _wire_helpers import collect
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.config import Deployment
from gateway.providers import openai_chat
from gateway.providers.naming import TOOL_NAME, NameMap
from gateway.providers.wire import CallContext
from gateway.schema import AssistantMessage, Request, TextPart, ToolCallPart, ToolResultMessage, UserMessage

DEP = Deployment(name="oa", api="openai_chat", model="gpt-4o-mini")

ids = st.text(min_size=1, max_size=70)
names = st.text(min_size=1, max_size=90)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
raw_arguments = st.one_of(
    st.dictionaries(st.text(max_size=10), json_values, max_size=4).map(lambda d: orjson.dumps(d).decode()),
    st.dictionaries(st.text(max_size=10), json_values, max_size=4).map(
        lambda d: orjson.dumps(d, option=orjson.OPT_INDENT_2).decode()
    ),
    st.text(max_size=40),  # not JSON at all: still kept byte-exact
)


@st.composite
def calls(draw: Any) -> list[tuple[str, str, str]]:
    id_list = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    return [(i, draw(names), draw(raw_arguments)) for i in id_list]


def _request(cs: list[tuple[str, str, str]], text: str) -> Request:
    parts: list[Any] = [TextPart(text=text)] if text else []
    parts += [ToolCallPart(id=i, name=n, raw_arguments=r) for i, n, r in cs]
    return Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="go")]),
            AssistantMessage(content=parts),
            *[ToolResultMessage(tool_call_id=i, content=[TextPart(text="ok")]) for i, _, _ in cs],
        ],
    )


def _stream_chunks(assistant: dict[str, Any], cut: int) -> list[dict[str, Any]]:
    """The wire assistant message as a stream: text, then each call with its arguments split
    every ``cut`` characters, then finish_reason and a usage chunk."""
    out: list[dict[str, Any]] = []
    base = {"id": "chatcmpl-p", "object": "chat.completion.chunk", "model": "m"}
    if assistant.get("content"):
        out.append(
            {
                **base,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": assistant["content"]}}],
            }
        )
    for k, tc in enumerate(assistant.get("tool_calls", [])):
        args = tc["function"]["arguments"]
        pieces = [args[i : i + cut] for i in range(0, len(args), cut)] or [""]
        first = {
            "index": k,
            "id": tc["id"],
            "type": "function",
            "function": {"name": tc["function"]["name"], "arguments": pieces[0]},
        }
        out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
        for p in pieces[1:]:
            out.append(
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"tool_calls": [{"index": k, "function": {"arguments": p}}]}}
                    ],
                }
            )
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    out.append(
        {**base, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    )
    return out


@settings(max_examples=150, deadline=None)
@given(calls(), st.text(max_size=20), st.integers(min_value=1, max_value=9))
def test_tool_calls_survive_the_wire_both_ways(cs: list[tuple[str, str, str]], text: str, cut: int) -> None:
    names_map = NameMap()
    body = openai_chat.to_wire_body(_request(cs, text), DEP, names_map)
    assistant = body["messages"][1]
    # every id/name on the wire obeys the upstream's rules; results point at the sent ids
    sent_ids = [tc["id"] for tc in assistant["tool_calls"]]
    assert all(openai_chat.OPENAI_ID.match(i) for i in sent_ids)
    assert all(TOOL_NAME.match(tc["function"]["name"]) for tc in assistant["tool_calls"])
    assert [m["tool_call_id"] for m in body["messages"][2:]] == sent_ids
    assert len(set(sent_ids)) == len(sent_ids)
    assert assistant["content"] == (text or None)
    ctx = CallContext(deployment=DEP, request=Request(model="m", messages=[]), names=names_map)
    # the wire assistant message read back as an answer
    whole = openai_chat.from_wire_response(
        {
            "id": "r",
            "model": "m",
            "choices": [{"index": 0, "message": assistant, "finish_reason": "tool_calls"}],
        },
        ctx,
    )
    assert [(c.id, c.name, c.raw_arguments) for c in whole.message.tool_calls] == cs
    # and streamed in pieces
    parser = openai_chat.new_stream_parser(ctx)
    events: list[Any] = []
    for obj in _stream_chunks(assistant, cut):
        events.extend(parser.feed(None, orjson.dumps(obj)))
    events.extend(parser.feed(None, b"[DONE]"))
    streamed = collect(events)
    assert [(c.id, c.name, c.raw_arguments) for c in streamed.message.tool_calls] == cs
    assert streamed.message.text == text
    assert streamed.message.model_dump() == whole.message.model_dump()


@given(st.lists(st.text(min_size=1, max_size=120), min_size=1, max_size=20, unique=True))
def test_rewritten_names_and_ids_are_injective_and_restored(values: list[str]) -> None:
    m = NameMap()
    up_names = [openai_chat.upstream_name(m, v) for v in values]
    up_ids = [openai_chat.upstream_id(m, v) for v in values]
    assert len(set(up_names)) == len(values) and len(set(up_ids)) == len(values)
    assert all(TOOL_NAME.match(n) for n in up_names)
    assert all(openai_chat.OPENAI_ID.match(i) for i in up_ids)
    assert [m.from_upstream_name(n) for n in up_names] == values
    assert [m.from_upstream_id(i) for i in up_ids] == values
    # deterministic: a fresh map gives the same rewrites
    m2 = NameMap()
    assert [openai_chat.upstream_name(m2, v) for v in values] == up_names
