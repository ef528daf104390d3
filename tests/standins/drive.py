"""Driving the gateway with the official SDKs in either client dialect, and reading the answer
back into one comparable shape (:class:`Turn`).

``dialect`` is ``"openai"`` (``openai.OpenAI().chat.completions``), ``"anthropic"``
(``anthropic.Anthropic().messages``), ``"responses"`` (``openai.OpenAI().responses``) or
``"gemini"`` (``google.genai.Client().models``, :mod:`standins.drive_gemini`). Requests are
built from dialect-neutral pieces (user text, tool definitions, tool results with images) so
one test runs in every dialect.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .wirekit import PNG_B64, collect_anthropic, collect_openai

OPENAI_STOP = {
    "stop": "stop",
    "tool_calls": "tool_use",
    "length": "length",
    "content_filter": "content_filter",
}
ANTHROPIC_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_use",
    "max_tokens": "length",
    "refusal": "content_filter",
}

ADD_MULTIPLY = [
    {
        "name": "add",
        "description": "Add two numbers",
        "parameters": {
            "type": "object",
            "required": ["a", "b"],
            "properties": {
                "a": {"description": "first number", "type": "integer"},
                "b": {"description": "second number", "type": "integer"},
            },
        },
    },
    {
        "name": "multiply",
        "description": "Multiply two numbers",
        "parameters": {
            "type": "object",
            "required": ["a", "b"],
            "properties": {
                "a": {"description": "first number", "type": "integer"},
                "b": {"description": "second number", "type": "integer"},
            },
        },
    },
]


def tools_for(dialect: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral ``{name, description, parameters}`` tools in the dialect's shape."""
    if dialect == "openai":
        return [{"type": "function", "function": t} for t in tools]
    if dialect == "responses":
        return [{"type": "function", **t} for t in tools]
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in tools
    ]


@dataclass
class Turn:
    """One answer as the client saw it. ``calls`` hold ``id``, ``name``, ``raw`` (the argument
    string the client received: OpenAI ``arguments``, Anthropic streamed ``partial_json``; None
    for a non-streamed Anthropic ``input``) and ``args`` (parsed). ``stop`` is normalised to the
    internal stop reasons; ``raw_stop`` is the dialect's value. Token counts: ``input_total``
    includes cache tokens."""

    dialect: str
    headers: dict[str, str]
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    stop: str | None = None
    raw_stop: str | None = None
    input_total: int | None = None
    input_uncached: int | None = None
    output: int | None = None
    thinking: list[dict[str, Any]] = field(default_factory=list)
    echo: dict[str, Any] = field(default_factory=dict)
    error: Exception | None = None
    usage_chunks: int = 0
    usage_chunk_choices: list[int] = field(default_factory=list)
    raw: Any = None
    echo_items: list[dict[str, Any]] = field(default_factory=list)
    """What the client sends back as history: the one assistant message (``echo``), or for
    Responses the output items."""


def ask(
    dialect: str,
    client: Any,
    *,
    model: str,
    messages: list[dict[str, Any]],
    stream: bool,
    tools: list[dict[str, Any]] | None = None,
    max_tokens: int = 4000,
    system: str | None = None,
    on_chunk: Callable[[Any], None] | None = None,
    **extra: Any,
) -> Turn:
    """Send one turn through the SDK of ``dialect`` and read the answer into a :class:`Turn`.

    ``messages`` are already in the dialect's shape. Raises what the SDK raises for an HTTP
    error; an error *inside* a stream is put in ``Turn.error``. ``on_chunk`` sees each streamed
    chunk/event as the client receives it."""
    if dialect == "responses":
        kwargs = {"model": model, "input": messages, "max_output_tokens": max_tokens, **extra}
        if system:
            kwargs["instructions"] = system
        if tools:
            kwargs["tools"] = tools_for("responses", tools)
        if stream:
            kwargs["stream"] = True
        raw = client.responses.with_raw_response.create(**kwargs)
        turn = Turn(dialect, dict(raw.headers))
        parsed = raw.parse()
        if stream:
            _read_responses_stream(turn, parsed, on_chunk)
        else:
            read_response(turn, parsed)
        return turn
    if dialect == "gemini":
        from . import drive_gemini

        return drive_gemini.ask(
            Turn(dialect, {}),
            client,
            model=model,
            messages=messages,
            stream=stream,
            tools=tools,
            max_tokens=max_tokens,
            system=system,
            on_chunk=on_chunk,
            **extra,
        )
    if dialect == "openai":
        msgs = ([{"role": "system", "content": system}] if system else []) + messages
        kwargs: dict[str, Any] = {"model": model, "messages": msgs, "max_tokens": max_tokens, **extra}
        if tools:
            kwargs["tools"] = tools_for("openai", tools)
        if stream:
            kwargs["stream"] = True
            kwargs.setdefault("stream_options", {"include_usage": True})
        raw = client.chat.completions.with_raw_response.create(**kwargs)
        turn = Turn(dialect, dict(raw.headers))
        parsed = raw.parse()
        if stream:
            _read_openai_stream(turn, parsed, on_chunk)
        else:
            _read_openai(turn, parsed)
        return turn
    kwargs = {"model": model, "messages": messages, "max_tokens": max_tokens, **extra}
    if system:
        kwargs["system"] = system
    if tools:
        kwargs["tools"] = tools_for("anthropic", tools)
    if stream:
        kwargs["stream"] = True
    raw = client.messages.with_raw_response.create(**kwargs)
    turn = Turn(dialect, dict(raw.headers))
    parsed = raw.parse()
    if stream:
        _read_anthropic_stream(turn, parsed, on_chunk)
    else:
        _read_anthropic(turn, parsed)
    return turn


def _read_openai(turn: Turn, completion: Any) -> None:
    turn.raw = completion
    choice = completion.choices[0]
    msg = choice.message
    turn.text = msg.content or ""
    for tc in msg.tool_calls or []:
        turn.calls.append(
            {
                "id": tc.id,
                "name": tc.function.name,
                "raw": tc.function.arguments,
                "args": _loads(tc.function.arguments),
            }
        )
    turn.raw_stop = choice.finish_reason
    turn.stop = OPENAI_STOP.get(choice.finish_reason or "", choice.finish_reason)
    if completion.usage is not None:
        turn.input_total = completion.usage.prompt_tokens
        turn.output = completion.usage.completion_tokens
        details = completion.usage.prompt_tokens_details
        cached = (details.cached_tokens or 0) if details is not None else 0
        turn.input_uncached = completion.usage.prompt_tokens - cached
    turn.echo = _openai_echo(turn)
    turn.echo_items = [turn.echo]


def _read_openai_stream(turn: Turn, stream: Any, on_chunk: Callable[[Any], None] | None = None) -> None:
    res = collect_openai(stream, on_chunk)
    turn.raw = res
    turn.error = res.error
    turn.text = res.text
    for _, tc in sorted(res.tool_calls.items()):
        turn.calls.append(
            {
                "id": tc["id"],
                "name": tc["name"],
                "raw": tc["arguments"],
                "args": _loads(tc["arguments"]),
                "ids": tc["ids"],
            }
        )
    if res.finish_reasons:
        turn.raw_stop = res.finish_reasons[-1]
        turn.stop = OPENAI_STOP.get(turn.raw_stop, turn.raw_stop)
    turn.usage_chunks = len(res.usage_chunks)
    turn.usage_chunk_choices = [len(c.choices) for c in res.usage_chunks]
    if res.usage_chunks:
        u = res.usage_chunks[-1].usage
        turn.input_total = u.prompt_tokens
        turn.output = u.completion_tokens
        details = u.prompt_tokens_details
        turn.input_uncached = u.prompt_tokens - ((details.cached_tokens or 0) if details is not None else 0)
    turn.echo = _openai_echo(turn)
    turn.echo_items = [turn.echo]


def _openai_echo(turn: Turn) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.calls:
        msg["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["raw"]}}
            for c in turn.calls
        ]
    return msg


def _read_anthropic(turn: Turn, message: Any) -> None:
    turn.raw = message
    blocks: list[dict[str, Any]] = []
    for b in message.content:
        if b.type == "text":
            turn.text += b.text
            blocks.append({"type": "text", "text": b.text})
        elif b.type == "tool_use":
            turn.calls.append({"id": b.id, "name": b.name, "raw": None, "args": b.input})
            blocks.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
        elif b.type == "thinking":
            turn.thinking.append({"thinking": b.thinking, "signature": b.signature})
            blocks.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
        elif b.type == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": b.data})
    turn.raw_stop = message.stop_reason
    turn.stop = ANTHROPIC_STOP.get(message.stop_reason or "", message.stop_reason)
    u = message.usage
    turn.input_uncached = u.input_tokens
    turn.input_total = (
        u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0)
    )
    turn.output = u.output_tokens
    turn.echo = {"role": "assistant", "content": blocks}
    turn.echo_items = [turn.echo]


def _read_anthropic_stream(turn: Turn, stream: Any, on_chunk: Callable[[Any], None] | None = None) -> None:
    res = collect_anthropic(stream, on_chunk)
    turn.raw = res
    turn.error = res.error
    turn.text = res.text
    blocks: list[dict[str, Any]] = []
    for _, b in sorted(res.blocks.items()):
        if b["type"] == "text":
            blocks.append({"type": "text", "text": b.get("text", "")})
        elif b["type"] == "tool_use":
            raw = b["partial_json"]
            args = _loads(raw) if raw else {}
            turn.calls.append({"id": b["id"], "name": b["name"], "raw": raw, "args": args})
            blocks.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": args})
        elif b["type"] == "thinking":
            turn.thinking.append({"thinking": b.get("thinking", ""), "signature": b.get("signature", "")})
            blocks.append(
                {"type": "thinking", "thinking": b.get("thinking", ""), "signature": b.get("signature", "")}
            )
    turn.raw_stop = res.stop_reason
    turn.stop = ANTHROPIC_STOP.get(res.stop_reason or "", res.stop_reason)
    turn.input_uncached = res.input_tokens
    turn.input_total = res.input_tokens
    turn.output = res.output_tokens
    turn.echo = {"role": "assistant", "content": blocks}
    turn.echo_items = [turn.echo]


RESPONSES_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def read_response(turn: Turn, response: Any) -> None:
    """A Responses ``Response`` object into ``turn``: text, function and custom tool calls
    (``id`` = ``call_id``), the stop (``tool_use`` when it holds calls, ``length`` for an
    incomplete answer), usage and the output items to echo."""
    turn.raw = response
    items = []
    for item in response.output:
        d = item.to_dict()
        items.append(d)
        if item.type == "message":
            turn.text += "".join(c.text for c in item.content if c.type == "output_text")
        elif item.type == "function_call":
            turn.calls.append(
                {"id": item.call_id, "name": item.name, "raw": item.arguments, "args": _loads(item.arguments)}
            )
        elif item.type == "custom_tool_call":
            turn.calls.append({"id": item.call_id, "name": item.name, "raw": None, "args": item.input})
        elif item.type == "reasoning":
            turn.thinking.append(d)
    turn.raw_stop = response.status
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        turn.stop = RESPONSES_INCOMPLETE.get(reason or "", reason)
    elif response.status == "completed":
        turn.stop = "tool_use" if turn.calls else "stop"
    else:
        turn.stop = response.status
    if response.usage is not None:
        u = response.usage
        turn.input_total = u.input_tokens
        turn.input_uncached = u.input_tokens - (u.input_tokens_details.cached_tokens or 0)
        turn.output = u.output_tokens
    turn.echo_items = [{k: v for k, v in d.items() if k not in ("id", "status")} for d in items]
    for d in turn.echo_items:
        if d.get("type") == "message":
            d["content"] = [{"type": "output_text", "text": c["text"]} for c in d["content"]]


def _read_responses_stream(turn: Turn, stream: Any, on_chunk: Callable[[Any], None] | None = None) -> None:
    """A Responses event stream into ``turn`` (from the final ``response.*`` event); the events
    are kept in ``turn.raw`` and a ``response.failed`` becomes ``turn.error``."""
    events = []
    final = None
    text = ""
    for ev in stream:
        if on_chunk is not None:
            on_chunk(ev)
        events.append(ev)
        if ev.type == "response.output_text.delta":
            text += ev.delta
        elif ev.type in ("response.completed", "response.incomplete", "response.failed"):
            final = ev.response
    if final is None:
        turn.error = RuntimeError(f"stream ended without a final event: {[e.type for e in events]}")
        turn.raw = events
        return
    read_response(turn, final)
    turn.raw = events
    if final.status == "failed":
        turn.error = RuntimeError(f"response.failed: {final.error}")
    assert turn.text == text, "the deltas and the final response disagree"


def _loads(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return None


def user(dialect: str, text: str) -> dict[str, Any]:
    """A user message with plain text."""
    if dialect == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    return {"role": "user", "content": text}


def tool_results(
    dialect: str, results: list[tuple[str, str, bool]], names: dict[str, str] | None = None
) -> list[Any]:
    """Tool results ``(call id, text, with_image)`` as the dialect sends them: OpenAI one
    ``role: tool`` message each (content parts when an image is attached), Anthropic one user
    message of ``tool_result`` blocks, Gemini one user turn of ``functionResponse`` parts
    (``names``: call id -> function name, which Gemini's responses carry)."""
    if dialect == "gemini":
        from . import drive_gemini

        return list(drive_gemini.tool_results(results, names or {}))
    image_openai = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}}
    image_anthropic = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
    }
    if dialect == "responses":
        image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_B64}"}
        return [
            {
                "type": "function_call_output",
                "call_id": cid,
                "output": [{"type": "input_text", "text": text}, image] if img else text,
            }
            for cid, text, img in results
        ]
    if dialect == "openai":
        out = []
        for cid, text, img in results:
            content: Any = [{"type": "text", "text": text}, image_openai] if img else text
            out.append({"role": "tool", "tool_call_id": cid, "content": content})
        return out
    blocks = []
    for cid, text, img in results:
        content = [{"type": "text", "text": text}, image_anthropic] if img else text
        blocks.append({"type": "tool_result", "tool_use_id": cid, "content": content})
    return [{"role": "user", "content": blocks}]


def send(
    dialect: str, client: Any, request: dict[str, Any], on_chunk: Callable[[Any], None] | None = None
) -> Turn:
    """Send a complete dialect request body (e.g. a handed case's ``input.request``) through the
    SDK's ``create`` unchanged: fields the SDK names are passed as arguments, any other field
    through ``extra_body``. Streams when ``request["stream"]`` is true."""
    import inspect

    create = client.chat.completions.create if dialect == "openai" else client.messages.create
    known = set(inspect.signature(create).parameters) - {
        "extra_body",
        "extra_headers",
        "extra_query",
        "timeout",
    }
    kwargs = {k: v for k, v in request.items() if k in known}
    extra = {k: v for k, v in request.items() if k not in known}
    if extra:
        kwargs["extra_body"] = extra
    stream = bool(request.get("stream"))
    if dialect == "openai":
        raw = client.chat.completions.with_raw_response.create(**kwargs)
        turn = Turn(dialect, dict(raw.headers))
        parsed = raw.parse()
        _read_openai_stream(turn, parsed, on_chunk) if stream else _read_openai(turn, parsed)
        return turn
    raw = client.messages.with_raw_response.create(**kwargs)
    turn = Turn(dialect, dict(raw.headers))
    parsed = raw.parse()
    _read_anthropic_stream(turn, parsed, on_chunk) if stream else _read_anthropic(turn, parsed)
    return turn
