"""Stored internal-schema messages (:mod:`gateway.schema`, as transcript and session JSON) made
readable: one view per message, its parts as text, tool calls with their arguments, tool
results, and a line for what is not text (an image's type and size, never its bytes).

A value of a shape this module does not know is shown as its JSON, never dropped.
"""

from __future__ import annotations

from typing import Any

from gateway.console.render import pretty_json

MAX_TEXT_CHARS = 20_000
"""Characters of one text part shown (the rest is cut, with a note)."""


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n… ({len(text) - MAX_TEXT_CHARS} more characters not shown)"


def _source(part: dict[str, Any]) -> str:
    """Where a media part's bytes are: its URL, ``N bytes inline``, or its file id."""
    if part.get("url"):
        return str(part["url"])[:200]
    if part.get("data"):
        return f"{len(str(part['data'])) * 3 // 4:,} bytes inline"
    if part.get("file_id"):
        return f"file {part['file_id']}"
    if part.get("text") is not None:
        return f"{len(str(part['text'])):,} characters of text"
    return "no source"


PART_KEYS = ("kind", "text", "name", "id", "arguments", "note")


def part_view(part: Any) -> dict[str, Any]:
    """One content part as ``{kind, text, name, id, arguments, note}`` (None where it has
    none): ``kind`` is the part's type (``text``, ``tool_call``, ``thinking``, ``image``...),
    ``note`` a one-line description of what is not shown in full."""
    return dict.fromkeys(PART_KEYS) | _part(part)


def _part(part: Any) -> dict[str, Any]:
    if not isinstance(part, dict):
        return {"kind": "other", "text": pretty_json(part)}
    kind = str(part.get("type", "other"))
    if kind == "text":
        return {"kind": kind, "text": _cut(str(part.get("text", "")))}
    if kind == "thinking":
        return {
            "kind": kind,
            "text": _cut(str(part.get("text", ""))),
            "note": "signed" if part.get("signature") else None,
        }
    if kind == "redacted_thinking":
        return {"kind": kind, "note": f"{len(str(part.get('data', ''))):,} bytes, encrypted by the provider"}
    if kind == "tool_call":
        return {
            "kind": kind,
            "id": part.get("id"),
            "name": part.get("name"),
            "arguments": pretty_json(part.get("arguments", {})),
        }
    if kind in ("image", "document", "audio"):
        detail = part.get("media_type") or ""
        name = part.get("filename")
        return {"kind": kind, "note": " · ".join(x for x in (name, detail, _source(part)) if x)}
    if kind == "native":
        block = part.get("block")
        label = block.get("type") if isinstance(block, dict) else None
        return {"kind": kind, "note": f"{part.get('api')} {label or 'block'}", "text": pretty_json(block)}
    return {"kind": "other", "text": pretty_json(part)}


def message_view(message: Any) -> dict[str, Any]:
    """One message as ``{role, name, parts, tool_call_id, is_error, answer}`` (``parts`` by
    :func:`part_view`; ``tool_call_id`` and ``is_error`` of a tool result, else None and False;
    ``answer`` False: :func:`conversation` marks the answer)."""
    view: dict[str, Any] = {
        "role": "unknown",
        "name": None,
        "parts": [],
        "tool_call_id": None,
        "is_error": False,
        "answer": False,
    }
    if not isinstance(message, dict):
        view["parts"] = [part_view(message)]
        return view
    content = message.get("content")
    if isinstance(content, list):
        view["parts"] = [part_view(p) for p in content]
    elif isinstance(content, str):
        view["parts"] = [part_view({"type": "text", "text": content})]
    view["role"] = str(message.get("role", "unknown"))
    view["name"] = message.get("name")
    if view["role"] == "tool":
        view["tool_call_id"] = message.get("tool_call_id")
        view["is_error"] = bool(message.get("is_error"))
    return view


def conversation(request: Any, response: Any) -> list[dict[str, Any]]:
    """The messages of a stored request (its ``messages``) followed by the answer's message,
    each as :func:`message_view`; either may be missing or not an object (then left out)."""
    out = []
    if isinstance(request, dict) and isinstance(request.get("messages"), list):
        out += [message_view(m) for m in request["messages"]]
    if isinstance(response, dict) and isinstance(response.get("message"), dict):
        answer = message_view(response["message"])
        answer["answer"] = True
        out.append(answer)
    return out
