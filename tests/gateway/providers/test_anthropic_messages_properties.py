"""Property tests: schema -> Messages wire -> schema keeps tool-call ids, names and arguments,
whole and streamed; merged turns alternate roles with tool results first."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from _wire_helpers import collect
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.config import Deployment
from gateway.providers import anthropic_messages
from gateway.providers.naming import ANTHROPIC_ID, TOOL_NAME, NameMap
from gateway.providers.wire import CallContext
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

DEP = Deployment(name="an", api="anthropic_messages", model="claude-sonnet-4-5")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=10), json_values, max_size=4)


@st.composite
def calls(draw: Any) -> list[tuple[str, str, dict[str, Any]]]:
    id_list = draw(st.lists(st.text(min_size=1, max_size=60), min_size=1, max_size=4, unique=True))
    return [(i, draw(st.text(min_size=1, max_size=90)), draw(arguments)) for i in id_list]


def _sse(events: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(e) for e in events]


def _as_stream(content: list[dict[str, Any]], cut: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": "msg_p", "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}},
        }
    ]
    for i, block in enumerate(content):
        if block["type"] == "text":
            out.append(
                {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}
            )
            out.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "text_delta", "text": block["text"]},
                }
            )
        else:
            out.append({"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}})
            raw = orjson.dumps(block["input"]).decode()
            for k in range(0, len(raw), cut):
                out.append(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": raw[k : k + cut]},
                    }
                )
        out.append({"type": "content_block_stop", "index": i})
    out.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}})
    out.append({"type": "message_stop"})
    return out


@settings(max_examples=150, deadline=None)
@given(calls(), st.text(max_size=20), st.integers(min_value=1, max_value=9))
def test_tool_calls_survive_the_wire_both_ways(
    cs: list[tuple[str, str, dict[str, Any]]], text: str, cut: int
) -> None:
    parts: list[Any] = [TextPart(text=text)] if text else []
    parts += [
        ToolCallPart(id=i, name=n, arguments=a, raw_arguments=orjson.dumps(a).decode()) for i, n, a in cs
    ]
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="go")]),
            AssistantMessage(content=parts),
            *[ToolResultMessage(tool_call_id=i, content=[TextPart(text="ok")]) for i, _, _ in cs],
        ],
    )
    names_map = NameMap()
    body = anthropic_messages.to_wire_body(req, DEP, names_map)
    assistant = body["messages"][1]["content"]
    uses = [b for b in assistant if b["type"] == "tool_use"]
    assert all(ANTHROPIC_ID.match(b["id"]) and TOOL_NAME.match(b["name"]) for b in uses)
    results = body["messages"][2]["content"]
    assert [r["tool_use_id"] for r in results] == [b["id"] for b in uses]
    ctx = CallContext(deployment=DEP, request=Request(model="m", messages=[]), names=names_map)
    whole = anthropic_messages.from_wire_response(
        {"id": "msg_p", "model": "c", "content": assistant, "stop_reason": "tool_use", "usage": {}}, ctx
    )
    expected = [(i, n, a, orjson.dumps(a).decode()) for i, n, a in cs]
    assert [(c.id, c.name, c.arguments, c.raw_arguments) for c in whole.message.tool_calls] == expected
    parser = anthropic_messages.new_stream_parser(ctx)
    events: list[Any] = []
    for data in _sse(_as_stream(assistant, cut)):
        events.extend(parser.feed(None, data))
    events.extend(parser.finish())
    streamed = collect(events)
    assert [(c.id, c.name, c.arguments, c.raw_arguments) for c in streamed.message.tool_calls] == expected
    assert streamed.message.model_dump() == whole.message.model_dump()


roles = st.sampled_from(["user", "assistant", "tool"])


def _message(kind: str, n: int) -> Message:
    if kind == "user":
        return UserMessage(content=[TextPart(text=f"u{n}")])
    if kind == "assistant":
        return AssistantMessage(content=[TextPart(text=f"a{n}"), ToolCallPart(id=f"t{n}", name="f")])
    return ToolResultMessage(tool_call_id=f"t{n}", content=[TextPart(text=f"r{n}")])


@given(st.lists(roles, min_size=1, max_size=12))
def test_merged_turns_alternate_and_results_lead_user_turns(kinds: list[str]) -> None:
    req = Request(model="m", messages=[_message(k, n) for n, k in enumerate(kinds)])
    msgs = anthropic_messages.to_wire_body(req, DEP, NameMap())["messages"]
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(msgs))
    for m in msgs:
        if m["role"] == "user":
            types = [b["type"] for b in m["content"]]
            assert types == sorted(types, key=lambda t: t != "tool_result")
    # nothing is lost: every text and every result is somewhere
    flat = [b for m in msgs for b in m["content"]]
    assert sum(b["type"] == "tool_result" for b in flat) == kinds.count("tool")
    assert sum(b["type"] == "text" for b in flat) == kinds.count("user") + kinds.count("assistant")
