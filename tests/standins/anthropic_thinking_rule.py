"""The Anthropic Messages API's extended-thinking rules, as the stand-in enforces them.

From "Extended thinking" (https://docs.claude.com/en/docs/build-with-claude/extended-thinking,
"Preserving thinking blocks" and "Thinking encryption"), with the error texts the real API
sends (HTTP 400 ``invalid_request_error``):

* with thinking on (``thinking.type`` ``enabled`` or ``adaptive``), the final assistant
  message of a tool loop (it holds ``tool_use`` blocks) must start with a ``thinking`` or
  ``redacted_thinking`` block: ``messages.N.content.0.type: Expected `thinking` or
  `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant`
  message must start with a thinking block ...``;
* a ``thinking`` block's ``signature`` (and a ``redacted_thinking`` block's ``data``) must be
  one the API issued: ``messages.N.content.M: Invalid `signature` in `thinking` block``.

:class:`Signatures` remembers what this stand-in sent (every answer it serves is noted);
:func:`violation` checks a request body.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from .recordings import Exchange

_LEADING = (
    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
    "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please "
    "consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


class Signatures:
    """The thinking signatures and redacted-thinking data this stand-in issued (thread-safe)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def note(self, ex: Exchange) -> None:
        """Remember every signature / redacted data in an Anthropic answer (whole or SSE)."""
        found: list[str] = []
        if ex.stream:
            try:
                events = ex.sse_data()
            except ValueError:
                return
            for ev in events:
                if not isinstance(ev, dict):
                    continue
                delta = ev.get("delta") or {}
                if delta.get("type") == "signature_delta" and delta.get("signature"):
                    found.append(delta["signature"])
                block = ev.get("content_block") or {}
                found += _block_secrets(block)
        else:
            try:
                body = json.loads(ex.body)
            except ValueError:
                return
            for block in body.get("content") or [] if isinstance(body, dict) else []:
                found += _block_secrets(block)
        with self._lock:
            self._seen.update(found)

    def issued(self, value: str) -> bool:
        """True when this stand-in sent ``value`` as a signature or redacted data."""
        with self._lock:
            return value in self._seen

    def clear(self) -> None:
        """Forget everything issued."""
        with self._lock:
            self._seen.clear()


def _block_secrets(block: Any) -> list[str]:
    if not isinstance(block, dict):
        return []
    if block.get("type") == "thinking" and block.get("signature"):
        return [block["signature"]]
    if block.get("type") == "redacted_thinking" and block.get("data"):
        return [block["data"]]
    return []


def thinking_on(body: dict[str, Any]) -> bool:
    """True when the request asks for extended thinking."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def violation(body: dict[str, Any], issued: Signatures) -> str | None:
    """The real API's error message for the first thinking rule ``body`` breaks, or None."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    last_assistant: int | None = None
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        last_assistant = i
        content = msg.get("content")
        for j, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "thinking" and not issued.issued(str(block.get("signature") or "")):
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
            if block.get("type") == "redacted_thinking" and not issued.issued(str(block.get("data") or "")):
                return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
    if last_assistant is None or not thinking_on(body):
        return None
    content = messages[last_assistant].get("content")
    blocks = content if isinstance(content, list) else []
    if not any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks):
        return None
    first = blocks[0].get("type") if blocks and isinstance(blocks[0], dict) else "text"
    if first in ("thinking", "redacted_thinking"):
        return None
    return _LEADING.format(i=last_assistant, found=first)
