"""Internal schema -> Gemini bodies: ``GenerateContentResponse``, errors, token counts and the
model list.

References: https://ai.google.dev/api/generate-content#generatecontentresponse (``candidates``,
``Candidate.FinishReason``, ``UsageMetadata``), https://ai.google.dev/api/models (``Model``),
https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes (``{"error": {"code",
"message", "status"}}`` with the google.rpc status names).

* Parts: text -> ``{"text"}``; thinking -> ``{"text", "thought": true, "thoughtSignature"?}``; an
  empty signed thinking part right after text puts its signature on that text part (how Gemini
  itself sends it); redacted thinking -> ``{"text": "", "thought": true, "thoughtSignature"}``
  with a ``redacted:`` envelope; a tool call -> ``{"functionCall": {"id", "name", "args"},
  "thoughtSignature"?}``. Signatures whose provenance is known are sent as base64 envelopes
  (:func:`gateway.edges.signatures.wrap_b64_signature`), which the client sends back as they are.
* ``functionCall.id`` is always given (the upstream's id, or the gateway's deterministic one):
  a client echoes it in its ``functionResponse`` (Gemini CLI invents one otherwise, which
  answers nothing in its own history).
* Usage: ``promptTokenCount`` counts cached tokens (Gemini's convention), ``cachedContentTokenCount``
  the cache reads, ``candidatesTokenCount`` the output without thoughts, ``thoughtsTokenCount``
  the reasoning tokens.
* Withheld tool calls, the cost and an ``error``/``aborted`` ending go under the top-level
  ``"turnstile"`` key, which the SDKs ignore.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.edges.gemini_parse import shows_thoughts
from gateway.edges.signatures import wrap_b64_signature
from gateway.errors import TurnstileError
from gateway.schema import (
    NativePart,
    RedactedThinkingPart,
    Request,
    Response,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    WithheldToolCall,
)

FINISH_REASONS: dict[str, str] = {
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "tool_use": "STOP",  # Gemini has no separate value: an answer with function calls stops with STOP
    "content_filter": "SAFETY",
    "pause": "STOP",  # a paused server-tool loop (Anthropic pause_turn): Gemini has no such value
    # A failed or aborted generation: Gemini's value for "stopped for another reason"; the
    # internal stop reason is stated under "turnstile".
    "error": "OTHER",
    "aborted": "OTHER",
}


def finish_reason(stop: StopReason) -> str:
    """The Gemini ``finishReason`` for an internal stop reason (see :data:`FINISH_REASONS`)."""
    return FINISH_REASONS[stop]


def render_usage(u: Usage) -> dict[str, Any]:
    """``usageMetadata`` (tokens): prompt = input + cache read + cache write, candidates =
    output - reasoning, thoughts = reasoning, total = prompt + output."""
    prompt = u.total_input_tokens
    out: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": max(0, u.output_tokens - u.reasoning_tokens),
        "totalTokenCount": prompt + u.output_tokens,
    }
    if u.cache_read_tokens:
        out["cachedContentTokenCount"] = u.cache_read_tokens
    if u.reasoning_tokens:
        out["thoughtsTokenCount"] = u.reasoning_tokens
    return out


def turnstile_meta(usage: Usage, withheld: list[WithheldToolCall], stop: StopReason) -> dict[str, Any] | None:
    """The top-level ``"turnstile"`` object: ``cost_usd`` (USD), ``estimated``,
    ``withheld_tool_calls`` and an ``error``/``aborted`` ``stop_reason``; None when empty."""
    meta: dict[str, Any] = {}
    if usage.cost_usd is not None:
        meta["cost_usd"] = usage.cost_usd
    if usage.estimated:
        meta["estimated"] = True
    if withheld:
        meta["withheld_tool_calls"] = [w.model_dump() for w in withheld]
    if stop in ("error", "aborted"):
        meta["stop_reason"] = stop
    return meta or None


def call_arguments(raw: str, parsed: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool call's ``args`` object: ``parsed`` when given and non-empty, else ``raw`` decoded
    (``{}`` when it is not a JSON object; the truncation guard withholds such calls)."""
    if parsed:
        return parsed
    try:
        value = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def function_call(
    part_id: str, name: str, args: dict[str, Any], sig: str | None, prov: Any
) -> dict[str, Any]:
    """A ``functionCall`` part, with its ``thoughtSignature`` when the call has one."""
    out: dict[str, Any] = {"functionCall": {"id": part_id, "name": name, "args": args}}
    if sig:
        out["thoughtSignature"] = wrap_b64_signature(sig, prov)
    return out


def render_parts(content: list[Any], thoughts: bool = True) -> list[dict[str, Any]]:
    """An assistant message's parts as Gemini parts (module docstring); without ``thoughts``
    (the client did not ask for them: :func:`gateway.edges.gemini_parse.shows_thoughts`) a
    thinking part keeps only its signature. Raises ``TypeError`` for anything that is not an
    assistant part."""
    out: list[dict[str, Any]] = []
    last_text = False
    for p in content:
        kind = type(p)
        if kind is TextPart:
            if p.text:
                out.append({"text": p.text})
                last_text = True
                continue
        elif kind is ThinkingPart:
            text = p.text if thoughts else ""
            if p.signature and not text and last_text and "thoughtSignature" not in out[-1]:
                out[-1]["thoughtSignature"] = wrap_b64_signature(p.signature, p.provenance)
            elif not text and not p.signature:
                pass  # nothing the client may see or must send back
            else:
                part: dict[str, Any] = {"text": text, "thought": True}
                if p.signature:
                    part["thoughtSignature"] = wrap_b64_signature(p.signature, p.provenance)
                out.append(part)
        elif kind is ToolCallPart:
            args = call_arguments(p.raw_arguments, p.arguments)
            out.append(function_call(p.id, p.name, args, p.signature, p.provenance))
        elif kind is RedactedThinkingPart:
            sig = wrap_b64_signature(p.data, p.provenance, redacted=True)
            out.append({"text": "", "thought": True, "thoughtSignature": sig})
        elif kind is NativePart:
            continue  # another wire API's server block: only its own clients ask for them (schema)
        else:
            raise TypeError(f"not an assistant part: {kind.__name__}")
        last_text = False
    return out


def render_response(resp: Response, request: Request) -> dict[str, Any]:
    """A non-streaming ``GenerateContentResponse`` body (a dict for the server to encode)."""
    parts = render_parts(resp.message.content, shows_thoughts(request))
    content: dict[str, Any] = {"role": "model", "parts": parts} if parts else {"role": "model"}
    body: dict[str, Any] = {
        "candidates": [{"content": content, "finishReason": finish_reason(resp.stop_reason), "index": 0}],
        "usageMetadata": render_usage(resp.usage),
        "modelVersion": resp.model,
        "responseId": resp.id,
    }
    meta = turnstile_meta(resp.usage, resp.withheld_tool_calls, resp.stop_reason)
    if meta:
        body["turnstile"] = meta
    return body


# kind -> (HTTP status as Google answers it, google.rpc status name)
_ERRORS: dict[str, str] = {
    "invalid_request": "INVALID_ARGUMENT",
    "payload_too_large": "INVALID_ARGUMENT",
    "not_found": "NOT_FOUND",
    "route_not_found": "NOT_FOUND",
    "authentication": "UNAUTHENTICATED",
    "permission": "PERMISSION_DENIED",
    "rate_limit": "RESOURCE_EXHAUSTED",
    "overloaded": "UNAVAILABLE",
    "upstream": "INTERNAL",
    "timeout": "DEADLINE_EXCEEDED",
    "api_error": "INTERNAL",
}
_BY_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}


def error_body(
    kind: str, message: str, status: int, param: str | None = None, details: Any = None
) -> dict[str, Any]:
    """``{"error": {"code", "message", "status"}}`` for a ``TurnstileError.kind`` and HTTP
    ``status``; the field path leads the message when it is not already in it, and the guard
    problems (``details``) are added as Google's ``details`` list."""
    if param and param not in message:
        message = f"{param}: {message}"
    name = _ERRORS.get(kind) or _BY_STATUS.get(status, "INTERNAL")
    err: dict[str, Any] = {"code": status, "message": message, "status": name}
    if details is not None:
        err["details"] = [
            {
                "@type": "type.googleapis.com/turnstile.Problems",
                "problems": orjson.loads(orjson.dumps(details, default=str)),
            }
        ]
    return {"error": err}


def render_error(err: TurnstileError) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, body)`` of an error in Gemini's shape; the status is ``err.status``."""
    return err.status, error_body(err.kind, err.message, err.status, err.param, err.details)


def render_count_tokens(n: int) -> dict[str, Any]:
    """The ``:countTokens`` body: ``{"totalTokens": n}`` (tokens)."""
    return {"totalTokens": n}


GENERATION_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]


def render_model(entry: dict[str, Any]) -> dict[str, Any]:
    """One ``Model`` (``entry``: ``{"id", "description"?, "display_name"?, "context_window"?,
    "max_output_tokens"?}``): ``name`` is ``models/<id>``."""
    out: dict[str, Any] = {
        "name": "models/" + entry["id"],
        "baseModelId": entry["id"],
        "version": "turnstile",
        "displayName": entry.get("display_name") or entry["id"],
        "description": entry.get("description") or "",
        "supportedGenerationMethods": GENERATION_METHODS,
    }
    if entry.get("context_window"):
        out["inputTokenLimit"] = entry["context_window"]
    if entry.get("max_output_tokens"):
        out["outputTokenLimit"] = entry["max_output_tokens"]
    return out


def render_models(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``GET /v1beta/models`` body: ``{"models": [Model, ...]}`` (one page, no
    ``nextPageToken``)."""
    return {"models": [render_model(e) for e in entries]}
