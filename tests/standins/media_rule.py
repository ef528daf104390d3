"""The real APIs' rules for document, file and audio content in a request, as the stand-in
enforces them: a request whose media parts are not in the API's own shape gets the 400 the
real API gives (messages paraphrased from the real errors).

* Anthropic ``document`` (https://docs.anthropic.com/en/docs/build-with-claude/pdf-support):
  ``source.type`` ``base64`` (``media_type`` ``application/pdf``), ``text`` (``text/plain``),
  ``content`` (a string or text and image blocks: the SDK's ``ContentBlockSourceParam``),
  ``url`` or ``file``; only ``title``, ``context``, ``citations``, ``cache_control`` beside it.
* OpenAI Chat ``file`` (``file_data`` a data URI, or ``file_id``) and ``input_audio``
  (``data``, ``format`` ``wav`` / ``mp3``) (https://platform.openai.com/docs/guides/pdf-files).
* Responses ``input_file``: one of ``file_data`` (data URI, with ``filename``), ``file_url``,
  ``file_id``.
* Gemini ``inlineData`` ``{mimeType, data}`` / ``fileData`` ``{mimeType, fileUri}`` only (no
  ``displayName`` on the Gemini API).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

_DOC_KEYS = {"type", "source", "title", "context", "citations", "cache_control"}


def _b64(data: Any) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError, TypeError):
        return False
    return True


def _anthropic(block: dict[str, Any], where: str) -> str | None:
    extra = set(block) - _DOC_KEYS
    if extra:
        return f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted"
    src = block.get("source") or {}
    kind = src.get("type")
    if kind == "base64":
        if src.get("media_type") != "application/pdf" or not _b64(src.get("data")):
            return f"{where}.source.base64: expected application/pdf with base64 data"
    elif kind == "text":
        if src.get("media_type") != "text/plain" or not isinstance(src.get("data"), str):
            return f"{where}.source.text: expected text/plain data"
    elif kind == "content":
        content = src.get("content")
        blocks = content if isinstance(content, list) else []
        if not isinstance(content, (str, list)) or any(
            not isinstance(b, dict) or b.get("type") not in ("text", "image") for b in blocks
        ):
            return f"{where}.source.content: expected a string or text and image blocks"
    elif kind == "url":
        if not str(src.get("url", "")).startswith("https://"):
            return f"{where}.source.url: expected an https URL"
    elif kind != "file":
        tag = f"Input tag {kind!r} found using 'type'"
        return f"{where}.source.type: {tag} does not match any of the expected tags"
    return None


def _openai(part: dict[str, Any], where: str) -> str | None:
    if part["type"] == "file":
        f = part.get("file") or {}
        data = f.get("file_data")
        if data is None and f.get("file_id") is None:
            return f"Missing required parameter: '{where}.file.file_data'."
        if data is not None and not (str(data).startswith("data:") and _b64(str(data).partition(",")[2])):
            return f"Invalid '{where}.file.file_data': expected a base64 data URL."
    elif part["type"] == "input_audio":
        a = part.get("input_audio") or {}
        if a.get("format") not in ("wav", "mp3") or not _b64(a.get("data")):
            return f"Invalid '{where}.input_audio': expected base64 data and format 'wav' or 'mp3'."
    return None


def _responses(part: dict[str, Any], where: str) -> str | None:
    given = [k for k in ("file_data", "file_url", "file_id") if part.get(k) is not None]
    if len(given) != 1:
        return f"Invalid '{where}': give exactly one of file_data, file_url, file_id."
    if given == ["file_data"] and not part.get("filename"):
        return f"Missing required parameter: '{where}.filename'."
    return None


def _gemini(part: dict[str, Any], where: str) -> str | None:
    for key, need in (("inlineData", {"mimeType", "data"}), ("fileData", {"mimeType", "fileUri"})):
        if key in part:
            value = part[key]
            if set(value) != need:
                return f'Invalid JSON payload received. Unknown or missing name in "{where}.{key}".'
            if key == "inlineData" and not _b64(value["data"]):
                return f"{where}.inlineData.data: Invalid value (bytes)"
    return None


def media_violation(api: str, body: dict[str, Any]) -> str | None:
    """The real API's error message for the first media part of ``body`` not in ``api``'s
    shape, or None."""
    if api == "gemini":
        for i, turn in enumerate(body.get("contents") or []):
            for j, part in enumerate(turn.get("parts") or []):
                bad = _gemini(part, f"contents[{i}].parts[{j}]")
                if bad:
                    return bad
        return None
    items = body.get("input") if api == "openai_responses" else body.get("messages")
    for i, msg in enumerate(items if isinstance(items, list) else []):
        content = msg.get("content") if isinstance(msg, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            kind = part.get("type") if isinstance(part, dict) else None
            where = f"messages[{i}].content[{j}]" if api != "openai_responses" else f"input[{i}].content[{j}]"
            bad = None
            if api == "anthropic_messages" and kind == "document":
                bad = _anthropic(part, where)
            elif api == "openai_chat" and kind in ("file", "input_audio"):
                bad = _openai(part, where)
            elif api == "openai_responses" and kind == "input_file":
                bad = _responses(part, where)
            if bad:
                return bad
    return None
