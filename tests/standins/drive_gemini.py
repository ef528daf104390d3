"""Driving the gateway with the official ``google-genai`` SDK (the ``gemini`` dialect of
:mod:`standins.drive`), and reading the answer into :class:`standins.drive.Turn`.

Messages are Gemini ``Content`` dicts (text only) or ``types.Content`` objects (an echoed model
turn, tool results with images: the SDK keeps ``thoughtSignature`` and image data as bytes, so
they must not go through dicts of base64 text)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from google.genai import errors, types

from .wirekit import PNG_B64

GEMINI_STOP = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "OTHER": "error"}


def user_content(text: str) -> dict[str, Any]:
    """A user turn with plain text."""
    return {"role": "user", "parts": [{"text": text}]}


def tool_results(results: list[tuple[str, str, bool]], names: dict[str, str]) -> list[types.Content]:
    """Tool results ``(call id, text, with_image)`` as one user turn of ``functionResponse``
    parts (``names``: call id -> function name; an image rides in the response's ``parts``)."""
    parts = []
    for cid, text, img in results:
        media = (
            [
                types.FunctionResponsePart(
                    inline_data=types.FunctionResponseBlob(
                        mime_type="image/png", data=base64.b64decode(PNG_B64)
                    )
                )
            ]
            if img
            else None
        )
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=cid, name=names[cid], response={"output": text}, parts=media
                )
            )
        )
    return [types.Content(role="user", parts=parts)]


def tools_for(tools: list[dict[str, Any]]) -> list[types.Tool]:
    """Neutral ``{name, description, parameters}`` tools as one Gemini ``Tool``."""
    decls = [
        types.FunctionDeclaration(
            name=t["name"], description=t["description"], parameters_json_schema=t["parameters"]
        )
        for t in tools
    ]
    return [types.Tool(function_declarations=decls)]


def ask(
    turn: Any,
    client: Any,
    *,
    model: str,
    messages: list[Any],
    stream: bool,
    tools: list[dict[str, Any]] | None,
    max_tokens: int,
    system: str | None,
    on_chunk: Callable[[Any], None] | None,
    **extra: Any,
) -> Any:
    """Fill ``turn`` (a fresh :class:`standins.drive.Turn`) with one answer; raises what the
    SDK raises for an HTTP error, an error inside a stream goes in ``turn.error``."""
    cfg = types.GenerateContentConfig(
        max_output_tokens=max_tokens,
        system_instruction=system,
        tools=tools_for(tools) if tools else None,
        **extra,
    )
    if not stream:
        resp = client.models.generate_content(model=model, contents=messages, config=cfg)
        turn.headers = dict(resp.sdk_http_response.headers or {})
        _read(turn, [resp])
        return turn
    chunks: list[Any] = []
    try:
        for chunk in client.models.generate_content_stream(model=model, contents=messages, config=cfg):
            if not chunks:
                turn.headers = dict(chunk.sdk_http_response.headers or {})
            chunks.append(chunk)
            if on_chunk is not None:
                on_chunk(chunk)
    except errors.APIError as err:
        turn.error = err
    _read(turn, chunks)
    return turn


def _read(turn: Any, chunks: list[Any]) -> None:
    parts: list[types.Part] = []
    finish = None
    usage = None
    for chunk in chunks:
        usage = chunk.usage_metadata or usage
        for cand in chunk.candidates or []:
            finish = cand.finish_reason or finish
            for p in (cand.content.parts if cand.content else None) or []:
                plain = p.text is not None and not p.thought and p.thought_signature is None
                prev = parts[-1] if parts else None
                if (
                    plain
                    and prev is not None
                    and prev.text is not None
                    and not prev.thought
                    and prev.thought_signature is None
                ):
                    parts[-1] = types.Part(text=(prev.text or "") + (p.text or ""))
                elif p.text == "" and p.thought_signature is None and p.function_call is None:
                    continue
                else:
                    parts.append(p)
    turn.raw = chunks
    for p in parts:
        if p.function_call is not None:
            fc = p.function_call
            turn.calls.append({"id": fc.id, "name": fc.name, "raw": None, "args": fc.args or {}})
        elif p.thought:
            turn.thinking.append({"thinking": p.text or "", "signature": p.thought_signature})
        elif p.text:
            turn.text += p.text
    turn.raw_stop = finish.value if finish is not None else None
    turn.stop = GEMINI_STOP.get(turn.raw_stop or "", turn.raw_stop)
    if turn.stop == "stop" and turn.calls:
        turn.stop = "tool_use"  # Gemini ends an answer with function calls with STOP
    if usage is not None:
        turn.input_total = usage.prompt_token_count
        turn.input_uncached = (usage.prompt_token_count or 0) - (usage.cached_content_token_count or 0)
        turn.output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    turn.echo = types.Content(role="model", parts=parts)  # type: ignore[assignment]
    turn.echo_items = [turn.echo]
