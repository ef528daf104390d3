"""What a response means, read independently of the adapters.

:class:`Meaning` is the client-visible content of one model answer: joined text, thinking
parts with their signatures, redacted thinking, tool calls (id, name, arguments exactly as
carried), stop reason in Turnstile's vocabulary and usage in Turnstile's convention
(``input`` excludes cache reads and writes). It is read from a non-streaming body or from the
decoded JSON events of a stream, in the OpenAI Chat Completions, Anthropic Messages or Gemini
``generateContent`` format. The same reader reads a recorded upstream answer and the answer
Turnstile renders to a client (the client dialects use the same two formats), so the two can
be compared field by field.

This is deliberately a second, simpler implementation (a plain accumulator, no validation):
if it and the adapters disagree, one of them is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

_OPENAI_STOP = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "content_filter",
}
_ANTHROPIC_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "pause",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_use",
    "refusal": "content_filter",
}
_GEMINI_STOP = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "BLOCKLIST": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "LANGUAGE": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "OTHER": "error",
}


STREAMED = "<arguments streamed as partialArgs>"
"""Placeholder arguments of a Gemini call whose arguments arrive as Vertex ``partialArgs``
pieces (not re-assembled here; only the adapter does that)."""


@dataclass
class Call:
    """A tool call: ``id`` (None when the format has none), ``name``, ``arguments`` as the
    wire carried them (a JSON string, or for formats that carry an object its compact JSON)
    and ``signature`` (Gemini ``thoughtSignature`` on the call)."""

    id: str | None
    name: str
    arguments: str
    signature: str | None = None


@dataclass
class Meaning:
    """The meaning of one answer (see module docstring). ``stop`` is None when the answer
    never said why it stopped (a cut stream); ``raw_stop`` the value as carried."""

    text: str = ""
    thinking: list[tuple[str, str | None]] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    stop: str | None = None
    raw_stop: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    withheld: list[str] = field(default_factory=list)


def _openai_usage(u: Any) -> dict[str, int]:
    if not isinstance(u, dict):
        return {}
    pd = u.get("prompt_tokens_details") or {}
    cd = u.get("completion_tokens_details") or {}
    cached = int(pd.get("cached_tokens") or 0)
    write = int(pd.get("cache_write_tokens") or 0)
    output = int(u.get("completion_tokens") or 0)
    reasoning = int(cd.get("reasoning_tokens") or 0)
    if reasoning > output:
        # xAI counts reasoning outside completion_tokens (it cannot be a part of it)
        output += reasoning
    return {
        "input": max(int(u.get("prompt_tokens") or 0) - cached - write, 0),
        "output": output,
        "cache_read": cached,
        "cache_write": write,
        "reasoning": reasoning,
    }


def _openai_stop(m: Meaning, raw: Any) -> None:
    if raw is None:
        return
    m.raw_stop = str(raw)
    stop = _OPENAI_STOP.get(str(raw), f"unknown:{raw}")
    m.stop = "tool_use" if stop == "stop" and m.calls else stop


def _turnstile(m: Meaning, obj: dict[str, Any]) -> None:
    meta = obj.get("turnstile")
    if isinstance(meta, dict):
        m.withheld = [str(w.get("id")) for w in meta.get("withheld_tool_calls") or []]
        if meta.get("stop_reason"):
            m.stop = str(meta["stop_reason"])


def _content_list(m: Meaning, content: list[Any], thought: list[str]) -> None:
    """Content as a list of parts: ``text`` parts, and Mistral's ``thinking`` parts whose
    ``thinking`` is a list of ``{"type": "text", "text"}`` chunks."""
    for p in content:
        if not isinstance(p, dict):
            continue
        if p.get("type") == "thinking":
            chunks = p.get("thinking")
            text = (
                "".join(str(c.get("text") or "") for c in chunks if isinstance(c, dict))
                if isinstance(chunks, list)
                else str(chunks or "")
            )
            if thought is not None:
                thought.append(text)
        else:
            m.text += str(p.get("text") or "")


def openai_body(obj: dict[str, Any]) -> Meaning:
    """A ``chat.completion`` body."""
    m = Meaning()
    choice = (obj.get("choices") or [{}])[0] or {}
    msg = choice.get("message") or {}
    content = msg.get("content")
    listed: list[str] = []
    if isinstance(content, list):
        _content_list(m, content, listed)
    elif content:
        m.text = str(content)
    thought = msg.get("reasoning_content") or msg.get("reasoning") or "".join(listed)
    if thought:
        m.thinking.append((str(thought), None))
    for c in msg.get("tool_calls") or []:
        fn = c.get("function") or {}
        args = fn.get("arguments")
        m.calls.append(
            Call(
                c.get("id"),
                str(fn.get("name")),
                args if isinstance(args, str) else "" if args is None else orjson.dumps(args).decode(),
            )
        )
    _openai_stop(m, choice.get("finish_reason"))
    m.usage = _openai_usage(obj.get("usage"))
    _turnstile(m, obj)
    return m


def openai_chunks(chunks: list[dict[str, Any]]) -> Meaning:
    """The decoded ``chat.completion.chunk`` objects of one stream (``[DONE]`` left out)."""
    m = Meaning()
    text: list[str] = []
    thought: list[str] = []
    calls: dict[Any, dict[str, Any]] = {}
    finish: Any = None
    for ch in chunks:
        if ch.get("usage"):
            m.usage = _openai_usage(ch["usage"])
        _turnstile(m, ch)
        for choice in ch.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), list):
                sub = Meaning()
                _content_list(sub, delta["content"], thought)
                text.append(sub.text)
            elif delta.get("content"):
                text.append(str(delta["content"]))
            r = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(r, str) and r:
                thought.append(r)
            for tc in delta.get("tool_calls") or []:
                key = tc.get("index", len(calls))
                if tc.get("id") and key in calls and calls[key]["id"] and calls[key]["id"] != tc["id"]:
                    key = (key, tc["id"])  # a server that reuses index 0 for every call
                slot = calls.setdefault(key, {"id": None, "name": "", "args": []})
                fn = tc.get("function") or {}
                if tc.get("id") and not slot["id"]:
                    slot["id"] = tc["id"]
                if fn.get("name") and not slot["name"]:
                    slot["name"] = fn["name"]
                if fn.get("arguments"):
                    slot["args"].append(fn["arguments"])
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    m.text = "".join(text)
    if thought:
        m.thinking.append(("".join(thought), None))
    m.calls = [Call(s["id"], s["name"], "".join(s["args"])) for s in calls.values()]
    _openai_stop(m, finish)
    return m


def _anthropic_usage(u: Any, into: dict[str, int]) -> None:
    if not isinstance(u, dict):
        return
    for src, dst in (
        ("input_tokens", "input"),
        ("output_tokens", "output"),
        ("cache_read_input_tokens", "cache_read"),
        ("cache_creation_input_tokens", "cache_write"),
    ):
        if u.get(src) is not None:
            into[dst] = int(u[src])


def _anthropic_stop(m: Meaning, raw: Any) -> None:
    if raw is None:
        return
    m.raw_stop = str(raw)
    m.stop = _ANTHROPIC_STOP.get(str(raw), f"unknown:{raw}")


def _anthropic_block(m: Meaning, b: dict[str, Any]) -> None:
    kind = b.get("type")
    if kind == "text":
        m.text += str(b.get("text") or "")
    elif kind == "thinking":
        m.thinking.append((str(b.get("thinking") or ""), b.get("signature") or None))
    elif kind == "redacted_thinking":
        m.redacted.append(str(b.get("data")))
    elif kind == "tool_use":
        m.calls.append(Call(b.get("id"), str(b.get("name")), orjson.dumps(b.get("input") or {}).decode()))


def anthropic_body(obj: dict[str, Any]) -> Meaning:
    """A Messages ``message`` body."""
    m = Meaning()
    for b in obj.get("content") or []:
        if isinstance(b, dict):
            _anthropic_block(m, b)
    _anthropic_stop(m, obj.get("stop_reason"))
    _anthropic_usage(obj.get("usage"), m.usage)
    m.usage.setdefault("reasoning", 0)
    _turnstile(m, obj)
    return m


def anthropic_events(events: list[dict[str, Any]]) -> Meaning:
    """The decoded ``data`` objects of one Messages stream, in order."""
    m = Meaning()
    blocks: dict[int, dict[str, Any]] = {}
    order: list[int] = []
    for ev in events:
        kind = ev.get("type")
        if kind == "message_start":
            _anthropic_usage((ev.get("message") or {}).get("usage"), m.usage)
        elif kind == "content_block_start":
            i = int(ev.get("index", len(order)))
            block = dict(ev.get("content_block") or {})
            block["_json"] = []
            blocks[i] = block
            order.append(i)
        elif kind == "content_block_delta":
            found = blocks.get(int(ev.get("index", -1)))
            d = ev.get("delta") or {}
            if found is None:
                continue
            dk = d.get("type")
            if dk == "text_delta":
                found["text"] = str(found.get("text") or "") + str(d.get("text") or "")
            elif dk == "thinking_delta":
                found["thinking"] = str(found.get("thinking") or "") + str(d.get("thinking") or "")
            elif dk == "signature_delta":
                found["signature"] = str(found.get("signature") or "") + str(d.get("signature") or "")
            elif dk == "input_json_delta":
                found["_json"].append(str(d.get("partial_json") or ""))
        elif kind == "message_delta":
            _anthropic_stop(m, (ev.get("delta") or {}).get("stop_reason"))
            _anthropic_usage(ev.get("usage"), m.usage)
            _turnstile(m, ev)
    for i in order:
        b = blocks[i]
        if b.get("type") == "tool_use":
            raw = "".join(b["_json"])
            m.calls.append(
                Call(
                    b.get("id"),
                    str(b.get("name")),
                    _compact(raw) if raw else orjson.dumps(b.get("input") or {}).decode(),
                )
            )
        else:
            _anthropic_block(m, b)
    m.usage.setdefault("reasoning", 0)
    return m


def _compact(raw: str) -> str:
    """Anthropic streams a tool's ``input`` as JSON fragments; the object they form, compact
    (the non-streaming form carries the object, not a string). Incomplete JSON stays as is."""
    try:
        return orjson.dumps(orjson.loads(raw)).decode()
    except orjson.JSONDecodeError:
        return raw


def gemini_chunks(chunks: list[dict[str, Any]]) -> Meaning:
    """Gemini ``GenerateContentResponse`` objects (one for a non-streaming body, one per SSE
    event for a stream). Function calls carry an object: ``arguments`` is its compact JSON."""
    m = Meaning()
    thought: list[str] = []
    sigs: list[str] = []
    finish: Any = None
    for ch in chunks:
        if ch.get("usageMetadata"):
            u = ch["usageMetadata"]
            cached = int(u.get("cachedContentTokenCount") or 0)
            reasoning = int(u.get("thoughtsTokenCount") or 0)
            m.usage = {
                "input": int(u.get("promptTokenCount") or 0) - cached,
                "output": int(u.get("candidatesTokenCount") or 0) + reasoning,
                "cache_read": cached,
                "cache_write": 0,
                "reasoning": reasoning,
            }
        for cand in ch.get("candidates") or []:
            for p in (cand.get("content") or {}).get("parts") or []:
                if "functionCall" in p:
                    fc = p["functionCall"]
                    if not fc.get("name"):
                        continue  # Vertex partialArgs continuation of the call before
                    if fc.get("willContinue") or fc.get("partialArgs"):
                        m.calls.append(
                            Call(fc.get("id"), str(fc["name"]), STREAMED, p.get("thoughtSignature"))
                        )
                        continue
                    m.calls.append(
                        Call(
                            fc.get("id"),
                            str(fc.get("name")),
                            orjson.dumps(fc.get("args") or {}).decode(),
                            p.get("thoughtSignature"),
                        )
                    )
                    continue
                if p.get("thought"):
                    thought.append(str(p.get("text") or ""))
                elif "text" in p:
                    m.text += str(p.get("text") or "")
                if p.get("thoughtSignature"):
                    sigs.append(p["thoughtSignature"])
            if cand.get("finishReason"):
                finish = cand["finishReason"]
    if thought or sigs:
        m.thinking.append(("".join(thought), "".join(sigs) or None))
    if finish is not None:
        m.raw_stop = str(finish)
        stop = _GEMINI_STOP.get(str(finish), f"unknown:{finish}")
        m.stop = "tool_use" if stop == "stop" and m.calls else stop
    return m
