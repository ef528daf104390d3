"""Property tests: dialect request -> schema -> the same dialect's request shape -> schema is
a fixed point, and ids, names, raw arguments, text and image bytes survive.

``render_*_request`` below are test-side inverses of the parsers (the gateway itself never
renders a client request)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.edges import anthropic_messages, openai_chat
from gateway.edges.anthropic_messages_render import client_signature
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

texts = st.text(min_size=1, max_size=20)
names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_-]{0,15}", fullmatch=True)
b64 = st.binary(min_size=1, max_size=30).map(lambda b: base64.b64encode(b).decode())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
arg_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
raw_args = arg_objects.map(lambda d: orjson.dumps(d).decode()) | st.text(max_size=20)


# ---------------------------------------------------------------------------- OpenAI


def render_openai_request(req: Request) -> dict[str, Any]:
    """Schema -> an OpenAI Chat Completions request body (test-side inverse of the parser)."""
    msgs: list[dict[str, Any]] = []
    for m in req.messages:
        if isinstance(m, SystemMessage):
            msgs.append({"role": "system", "content": [{"type": "text", "text": p.text} for p in m.content]})
        elif isinstance(m, UserMessage | ToolResultMessage):
            parts: list[dict[str, Any]] = []
            for p in m.content:
                if isinstance(p, TextPart):
                    parts.append({"type": "text", "text": p.text})
                else:
                    url = p.url or f"data:{p.media_type};base64,{p.data}"
                    parts.append({"type": "image_url", "image_url": {"url": url}})
            if isinstance(m, UserMessage):
                msgs.append({"role": "user", "content": parts})
            else:
                msgs.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": parts})
        elif isinstance(m, AssistantMessage):
            out: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            thinking = "".join(p.text for p in m.content if isinstance(p, ThinkingPart))
            if thinking:
                out["reasoning_content"] = thinking
            if m.tool_calls:
                out["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.raw_arguments},
                    }
                    for c in m.tool_calls
                ]
            msgs.append(out)
    return {"model": req.model, "messages": msgs}


@st.composite
def openai_conversations(draw: st.DrawFn) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(texts)})
    n_turns = draw(st.integers(1, 3))
    used: set[str] = set()
    for turn in range(n_turns):
        user_parts: list[dict[str, Any]] = [{"type": "text", "text": draw(texts)}]
        if draw(st.booleans()):
            user_parts.append(
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{draw(b64)}"}}
            )
        msgs.append({"role": "user", "content": user_parts})
        calls = []
        for k in range(draw(st.integers(0, 3))):
            cid = f"call_{turn}_{k}_{draw(names)}"
            if cid in used:
                continue
            used.add(cid)
            calls.append(
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": draw(names), "arguments": draw(raw_args)},
                }
            )
        assistant: dict[str, Any] = {"role": "assistant", "content": draw(st.none() | texts)}
        if calls:
            assistant["tool_calls"] = calls
        msgs.append(assistant)
        for c in calls:
            msgs.append({"role": "tool", "tool_call_id": c["id"], "content": draw(texts)})
    return {"model": "m", "messages": msgs}


@settings(max_examples=150, deadline=None)
@given(body=openai_conversations())
def test_openai_request_round_trip_preserves_ids_names_raw_arguments_text_images(
    body: dict[str, Any],
) -> None:
    req = openai_chat.parse_request(orjson.dumps(body))
    again = openai_chat.parse_request(orjson.dumps(render_openai_request(req)))
    assert again.model_dump() == req.model_dump()
    sent_calls = [c for m in body["messages"] for c in m.get("tool_calls", [])]
    got_calls = [c for m in again.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in sent_calls] == [
        (c.id, c.name, c.raw_arguments) for c in got_calls
    ]
    sent_images = [
        p["image_url"]["url"].split(",", 1)[1]
        for m in body["messages"]
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p["type"] == "image_url"
    ]
    got_images = [
        p.data
        for m in again.messages
        if isinstance(m, UserMessage)
        for p in m.content
        if isinstance(p, ImagePart)
    ]
    assert sent_images == got_images
    results = [m.tool_call_id for m in again.messages if isinstance(m, ToolResultMessage)]
    assert results == [c["id"] for c in sent_calls]


# ---------------------------------------------------------------------------- Anthropic


def _an_parts(parts: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, TextPart):
            out.append({"type": "text", "text": p.text})
        elif isinstance(p, ImagePart):
            src: dict[str, Any] = (
                {"type": "url", "url": p.url}
                if p.url
                else {"type": "base64", "media_type": p.media_type, "data": p.data}
            )
            out.append({"type": "image", "source": src})
    return out


def render_anthropic_request(req: Request) -> dict[str, Any]:
    """Schema -> an Anthropic Messages request body (tool results and the user text of one
    turn merged back into one user message, results first)."""
    body: dict[str, Any] = {"model": req.model, "max_tokens": req.max_output_tokens or 1, "messages": []}
    msgs: list[dict[str, Any]] = body["messages"]
    pending: list[dict[str, Any]] = []
    for m in req.messages:
        if isinstance(m, SystemMessage):
            body["system"] = [{"type": "text", "text": p.text} for p in m.content]
        elif isinstance(m, ToolResultMessage):
            pending.append(
                {
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id,
                    "content": _an_parts(m.content),
                    "is_error": m.is_error,
                }
            )
        elif isinstance(m, UserMessage):
            msgs.append({"role": "user", "content": pending + _an_parts(m.content)})
            pending = []
        elif isinstance(m, AssistantMessage):
            if pending:
                msgs.append({"role": "user", "content": pending})
                pending = []
            blocks: list[dict[str, Any]] = []
            for p in m.content:
                if isinstance(p, ThinkingPart):
                    blocks.append(
                        {
                            "type": "thinking",
                            "thinking": p.text,
                            "signature": client_signature(p.signature, p.provenance),
                        }
                    )
                elif isinstance(p, ToolCallPart):
                    blocks.append({"type": "tool_use", "id": p.id, "name": p.name, "input": p.arguments})
                elif isinstance(p, TextPart):
                    blocks.append({"type": "text", "text": p.text})
            msgs.append({"role": "assistant", "content": blocks})
    if pending:
        msgs.append({"role": "user", "content": pending})
    return body


@st.composite
def anthropic_conversations(draw: st.DrawFn) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 3))):
        content: list[dict[str, Any]] = list(results)
        content.append({"type": "text", "text": draw(texts)})
        if draw(st.booleans()):
            content.append(
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": draw(b64)}}
            )
        msgs.append({"role": "user", "content": content})
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(texts), "signature": draw(b64)})
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(texts)})
        results = []
        for k in range(draw(st.integers(0 if blocks else 1, 3))):
            cid = f"toolu_{turn}_{k}"
            blocks.append({"type": "tool_use", "id": cid, "name": draw(names), "input": draw(arg_objects)})
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": cid,
                    "content": draw(texts),
                    "is_error": draw(st.booleans()),
                }
            )
        msgs.append({"role": "assistant", "content": blocks})
    body: dict[str, Any] = {"model": "c", "max_tokens": 64, "messages": msgs}
    if draw(st.booleans()):
        body["system"] = draw(texts)
    return body


@settings(max_examples=150, deadline=None)
@given(body=anthropic_conversations())
def test_anthropic_request_round_trip_preserves_ids_names_inputs_text_images(body: dict[str, Any]) -> None:
    req = anthropic_messages.parse_request(orjson.dumps(body))
    again = anthropic_messages.parse_request(orjson.dumps(render_anthropic_request(req)))
    assert [m.model_dump(exclude={"src"}) for m in again.messages] == [m.model_dump() for m in req.messages]
    sent = [
        b
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    got = [c for m in again.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [(b["id"], b["name"], b["input"]) for b in sent] == [(c.id, c.name, c.arguments) for c in got]
    assert all(orjson.loads(c.raw_arguments) == c.arguments for c in got)
    sigs = [
        b["signature"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "thinking"
    ]
    got_sigs = [
        p.signature
        for m in again.messages
        if isinstance(m, AssistantMessage)
        for p in m.content
        if isinstance(p, ThinkingPart)
    ]
    assert sigs == got_sigs
