"""The internal schema in the GenAI conventions' message shapes, for opt-in content capture: an
output format like the providers' wire shapes (its field names, e.g. ``finish_reason``, are the
conventions' vocabulary), so it lives beside them.

``gen_ai.system_instructions``: a list of parts; ``gen_ai.input.messages``: ``[{"role",
"parts"}]`` in the order sent; ``gen_ai.output.messages``: ``[{"role": "assistant",
"parts"}]`` plus the finish reason under :data:`OUTPUT_FINISH_KEY`. Parts: ``{"type": "text",
"content"}``, ``{"type": "reasoning", "content"}``, ``{"type": "tool_call", "id", "name",
"arguments"}``, ``{"type": "tool_call_response", "id", "result"}``, and media as ``{"type": "uri", "modality",
"mime_type", "uri"}`` or ``{"type": "blob", "modality", "mime_type"}`` (the bytes are never
copied into a span: only their size, ``turnstile.bytes``). Only called when
``tracing.capture_content`` is on (:mod:`gateway.tracing`).
"""

from __future__ import annotations

from typing import Any

from gateway.schema import (
    AssistantMessage,
    AudioPart,
    DocumentPart,
    ImagePart,
    Request,
    Response,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
)

OUTPUT_FINISH_KEY = "finish_reason"
"""The key of an output message's finish reason in the GenAI conventions' output-messages
schema (the conventions' vocabulary, not a provider's; the value is the internal stop reason)."""

_MODALITY: dict[type, str] = {ImagePart: "image", AudioPart: "audio", DocumentPart: "document"}


def _part(part: Any) -> dict[str, Any]:
    """One internal-schema content part as a conventions part."""
    kind = type(part)
    if kind is TextPart:
        return {"type": "text", "content": part.text}
    if kind is ThinkingPart:
        return {"type": "reasoning", "content": part.text}
    if kind is ToolCallPart:
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.arguments}
    modality = _MODALITY.get(kind)
    if modality is not None:
        url = getattr(part, "url", None)
        if url:
            return {"type": "uri", "modality": modality, "mime_type": part.media_type, "uri": url}
        data = getattr(part, "data", None) or getattr(part, "text", None) or ""
        return {
            "type": "blob",
            "modality": modality,
            "mime_type": part.media_type,
            "turnstile.bytes": len(data),
        }
    return {"type": getattr(part, "type", kind.__name__)}


def system_instructions(request: Request) -> list[dict[str, Any]]:
    """The request's system messages' parts."""
    return [_part(p) for m in request.messages if type(m) is SystemMessage for p in m.content]


def input_messages(request: Request) -> list[dict[str, Any]]:
    """The request's conversation (system messages excepted), in order."""
    out: list[dict[str, Any]] = []
    for m in request.messages:
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, ToolResultMessage):
            result = "".join(p.text for p in m.content if type(p) is TextPart)
            part: dict[str, Any] = {"type": "tool_call_response", "id": m.tool_call_id, "result": result}
            if m.is_error:
                part["turnstile.is_error"] = True
            out.append({"role": "tool", "parts": [part]})
        else:
            out.append({"role": m.role, "parts": [_part(p) for p in m.content]})
    return out


def output_messages(resp: Response) -> list[dict[str, Any]]:
    """The answer as one output message."""
    message: AssistantMessage = resp.message
    return [
        {
            "role": "assistant",
            "parts": [_part(p) for p in message.content],
            OUTPUT_FINISH_KEY: resp.stop_reason,
        }
    ]
