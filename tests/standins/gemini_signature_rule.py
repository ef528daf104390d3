"""Gemini 3's thought-signature rule for function calling, as the stand-in enforces it.

From "Thought signatures" (https://ai.google.dev/gemini-api/docs/thought-signatures): Gemini 3
models validate the *current turn* strictly — every step since the last user message with
text (not a function response) — and the first ``functionCall`` part of each model step
there must carry its ``thoughtSignature``, else HTTP 400 ``INVALID_ARGUMENT``. The documented
sentinel ``skip_thought_signature_validator`` (for history that lost its signature) is
accepted. Older models are not checked.
"""

from __future__ import annotations

import re
from typing import Any

_GEMINI3 = re.compile(r"^(models/)?gemini-3[.-]")
SENTINEL = "skip_thought_signature_validator"


def violation(model: str, body: dict[str, Any]) -> str | None:
    """The real API's error message when ``body`` breaks the rule for ``model``, or None."""
    if not _GEMINI3.match(model):
        return None
    contents = body.get("contents")
    if not isinstance(contents, list):
        return None
    start = 0
    for i, content in enumerate(contents):
        parts = content.get("parts") if isinstance(content, dict) else None
        if content.get("role", "user") == "user" and any(
            isinstance(p, dict) and "text" in p for p in parts or []
        ):
            start = i + 1
    for i in range(start, len(contents)):
        content = contents[i]
        if not isinstance(content, dict) or content.get("role") != "model":
            continue
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        calls = [(j, p) for j, p in enumerate(parts) if "functionCall" in p]
        if calls and not calls[0][1].get("thoughtSignature"):
            j, part = calls[0]
            name = (part.get("functionCall") or {}).get("name", "")
            return (
                "Function call is missing a thought_signature in functionCall parts. This is required "
                "for tools to work correctly, and missing thought_signature may lead to degraded model "
                f"performance. Additional data, function call `default_api:{name}` , position {j + 1}. "
                "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
            )
    return None
