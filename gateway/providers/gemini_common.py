"""Pieces of the Gemini ``generateContent`` wire API shared by the request builder, the
response parser and the stream parser: tool-name rules, stop reasons, usage, call ids.

Sources: ai.google.dev/api/generate-content (``Candidate.FinishReason``,
``UsageMetadata``), ai.google.dev/api/caching#FunctionDeclaration (names) and the recorded
traffic under ``tests/fixtures/gemini/`` (see its ``ORIGIN.md``).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from gateway.config import Deployment
from gateway.errors import UnknownStopReason
from gateway.providers.naming import NameMap, safe_token
from gateway.schema import Provenance, StopReason, Usage

API = "gemini"

#: Gemini function names: "Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or
#: contain underscores, dots and dashes, with a maximum length of 64" (Vertex AI
#: ``FunctionDeclaration.name``; the Gemini API page also allows colons -- we use the stricter
#: rule that both accept).
GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$")
GEMINI_NAME_MAX = 64

#: Gemini 3 models reject a replayed model turn whose function call has no thought signature
#: (HTTP 400 "Function call is missing a thought_signature"); Google documents this sentinel
#: value for history that has lost its signature (ai.google.dev/gemini-api/docs/thought-signatures).
SKIP_SIGNATURE_SENTINEL = "skip_thought_signature_validator"
_GEMINI3 = re.compile(r"^(models/)?gemini-3[.-]")


def is_gemini3(model: str) -> bool:
    """True for Gemini 3 model ids (``gemini-3-pro-preview``, ``gemini-3.1-flash`` ...)."""
    return bool(_GEMINI3.match(model))


def model_path(model: str) -> str:
    """The model id as it appears in the URL path: ``models/`` prefix removed."""
    return model[len("models/") :] if model.startswith("models/") else model


def gemini_safe_name(name: str) -> str:
    """``name`` if Gemini accepts it as a function name, else a deterministic rewrite that
    does (allowed characters + ``_<8 hex>`` hash of the original, prefixed with ``_`` when it
    would start with a digit or dash). Distinct names give distinct rewrites."""
    out = safe_token(name, GEMINI_NAME, GEMINI_NAME_MAX)
    if not GEMINI_NAME.match(out):
        out = ("_" + out)[:GEMINI_NAME_MAX]
        if not GEMINI_NAME.match(out):  # pragma: no cover - safe_token output is [a-zA-Z0-9_-]
            out = "_" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return out


class GeminiNameMap(NameMap):
    """A :class:`NameMap` whose tool-name rewrite follows Gemini's rule (:data:`GEMINI_NAME`,
    first character a letter or underscore), which :func:`safe_token` alone does not ensure."""

    def to_upstream_name(self, name: str, pattern: re.Pattern[str] = GEMINI_NAME, max_len: int = 64) -> str:
        """Rewrite a tool name for Gemini (see :func:`gemini_safe_name`) and remember it."""
        out = self.names.get(name)
        if out is None:
            out = gemini_safe_name(name)
            self.names[name] = out
            self._names_back[out] = name
        return out


def provenance(deployment: Deployment) -> Provenance:
    """The provenance stamped on thinking parts and signed tool calls from ``deployment``."""
    return Provenance(api=API, provider=deployment.provider, model=deployment.model)


def is_gemini_signed(prov: Provenance | None) -> bool:
    """True when a signed part came from the Gemini wire API (only then is it sent back)."""
    return prov is not None and prov.api == API


# ---------------------------------------------------------------------------- stop reasons

_STOP_REASONS: dict[str, StopReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    # Vertex: output continues in a further response -> the answer is cut at the budget.
    "CONTINUATION": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "ESCALATION": "content_filter",
    # Decided: an unsupported language is a refusal by policy, reported as content_filter.
    "LANGUAGE": "content_filter",
    # The model failed to produce a valid answer: never success.
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "MALFORMED_RESPONSE": "error",
    "IMAGE_OTHER": "error",
    "NO_IMAGE": "error",
    # Decided: "OTHER" (unknown reason) and the unset enum value say nothing about success,
    # so they are reported as ``error`` rather than a normal stop.
    "OTHER": "error",
    "FINISH_REASON_UNSPECIFIED": "error",
}


def map_stop_reason(raw: str) -> StopReason:
    """Gemini ``Candidate.finishReason`` -> internal stop reason.

    ``STOP`` maps to ``stop`` here; callers turn it into ``tool_use`` when the answer holds
    function calls (Gemini has no separate value for that). Raises :class:`UnknownStopReason`
    for any value not in the table above.
    """
    try:
        return _STOP_REASONS[raw]
    except KeyError:
        raise UnknownStopReason(f"unknown Gemini finishReason {raw!r}") from None


# ---------------------------------------------------------------------------- usage


def usage_from(meta: dict[str, Any] | None) -> Usage:
    """``usageMetadata`` -> :class:`Usage` (tokens).

    ``promptTokenCount`` includes ``cachedContentTokenCount``, so input = prompt - cached and
    cache_read = cached. ``toolUsePromptTokenCount`` (tokens of server-side tool results) is
    counted as input. output = ``candidatesTokenCount`` + ``thoughtsTokenCount`` (Gemini
    reports thinking apart from candidates), reasoning = ``thoughtsTokenCount``. Gemini has no
    cache-write count (explicit caches are created out of band).
    """
    if not meta:
        return Usage()
    prompt = int(meta.get("promptTokenCount") or 0)
    cached = int(meta.get("cachedContentTokenCount") or 0)
    tool_prompt = int(meta.get("toolUsePromptTokenCount") or 0)
    candidates = int(meta.get("candidatesTokenCount") or 0)
    thoughts = int(meta.get("thoughtsTokenCount") or 0)
    return Usage(
        input_tokens=max(0, prompt - cached) + tool_prompt,
        output_tokens=candidates + thoughts,
        cache_read_tokens=cached,
        reasoning_tokens=thoughts,
    )


# ---------------------------------------------------------------------------- ids


def call_id(scope: str, ordinal: int, name: str, raw_arguments: str) -> str:
    """A deterministic tool-call id for a ``functionCall`` that came without one:
    ``call_`` + 24 hex of sha256 over the response id (or model), the call's ordinal in the
    answer, its name and its arguments. Same answer -> same id, streamed or not."""
    digest = hashlib.sha256(f"{scope}\x00{ordinal}\x00{name}\x00{raw_arguments}".encode()).hexdigest()
    return f"call_{digest[:24]}"


def response_id(obj: dict[str, Any]) -> str:
    """``responseId`` of a response (or of the first stream chunk), else a deterministic id
    derived from the chunk itself."""
    rid = obj.get("responseId")
    if isinstance(rid, str) and rid:
        return rid
    return "gemini-" + hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]


def error_message(status: int, body: bytes) -> str:
    """The human message in a Gemini error body ``{"error": {"code", "message", "status"}}``
    (also accepted wrapped in a one-element list, as streamed errors are). Falls back to the
    start of the raw body."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        err = obj["error"]
        msg = str(err.get("message") or "")
        code = err.get("status")
        if msg:
            return f"{code}: {msg}" if code else msg
    text = body.decode("utf-8", "replace").strip()
    return text[:500] if text else f"HTTP {status} from Gemini"
