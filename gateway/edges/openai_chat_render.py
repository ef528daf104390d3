"""Internal schema -> OpenAI Chat Completions bodies: responses, errors and the models list.

References: https://platform.openai.com/docs/api-reference/chat/object,
https://platform.openai.com/docs/guides/error-codes, https://platform.openai.com/docs/api-reference/models/list.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from gateway.edges._common import jsonable
from gateway.edges.signatures import wrap_signature, wrap_tool_call_id
from gateway.errors import TurnstileError
from gateway.schema import (
    Provenance,
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
    "stop": "stop",
    "length": "length",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    # A paused server-tool loop (Anthropic pause_turn): OpenAI has no such value, and only an
    # Anthropic client can ask for server tools; the nearest is the plain end.
    "pause": "stop",
    # OpenAI has no value for a failed or aborted generation; OpenRouter normalises such
    # endings to "error" (https://openrouter.ai/docs/api-reference/overview, finish_reason).
    # The SDKs accept it, and it never passes a partial answer off as a clean "stop".
    "error": "error",
    "aborted": "error",
}


def finish_reason(stop: StopReason) -> str:
    """The OpenAI ``finish_reason`` for an internal stop reason (see :data:`FINISH_REASONS`)."""
    return FINISH_REASONS[stop]


def completion_id(resp_id: str) -> str:
    """``resp_id`` with the ``chatcmpl-`` prefix OpenAI clients expect."""
    return resp_id if resp_id.startswith("chatcmpl-") else "chatcmpl-" + resp_id


def render_usage(u: Usage) -> dict[str, Any]:
    """OpenAI usage: ``prompt_tokens`` = input + cache read + cache write (OpenAI counts cached
    tokens inside prompt tokens), ``prompt_tokens_details.cached_tokens`` = cache read,
    ``completion_tokens`` = output (reasoning included), ``cost`` in USD when known (OpenRouter's
    field name). Cache writes, which OpenAI does not report, appear as
    ``prompt_tokens_details.cache_write_tokens`` when non-zero."""
    prompt = u.total_input_tokens
    details: dict[str, Any] = {"cached_tokens": u.cache_read_tokens}
    if u.cache_write_tokens:
        details["cache_write_tokens"] = u.cache_write_tokens
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": details,
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
    }
    if u.cost_usd is not None:
        out["cost"] = u.cost_usd
    if u.estimated:
        out["estimated"] = True
    return out


def turnstile_meta(withheld: list[WithheldToolCall], stop: StopReason | None = None) -> dict[str, Any] | None:
    """The top-level ``"turnstile"`` metadata object, or None when there is nothing to say:
    ``withheld_tool_calls`` (calls not forwarded because their arguments were truncated) and
    the internal ``stop_reason`` when it is ``error`` or ``aborted``."""
    meta: dict[str, Any] = {}
    if withheld:
        meta["withheld_tool_calls"] = [w.model_dump() for w in withheld]
    if stop in ("error", "aborted"):
        meta["stop_reason"] = stop
    return meta or None


def client_tool_call_id(part: ToolCallPart) -> str:
    """The id shown to the client: the call's own signature, if any, wrapped into the id."""
    if part.signature is None:
        return part.id
    return wrap_tool_call_id(part.id, part.signature, part.provenance)


REASONING_FORMATS: dict[str, str] = {
    "anthropic_messages": "anthropic-claude-v1",
    "gemini": "google-gemini-v1",
    "openai_responses": "openai-responses-v1",
}
"""Wire API that signed a reasoning part -> the ``format`` of its ``reasoning_details`` entry
(OpenRouter's values: https://openrouter.ai/docs/use-cases/reasoning-tokens#reasoning-details);
any other API is ``"unknown"``."""


def reasoning_detail(part: ThinkingPart | RedactedThinkingPart, index: int) -> dict[str, Any]:
    """One ``reasoning_details`` entry in OpenRouter's shape
    (https://openrouter.ai/docs/use-cases/reasoning-tokens#reasoning-details): thinking is
    ``{"type": "reasoning.text", "text", "signature", "format", "index"}``, redacted thinking
    ``{"type": "reasoning.encrypted", "data", "format", "index"}``. A signature (or the data)
    with a known provenance is wrapped in Turnstile's envelope
    (:func:`gateway.edges.signatures.wrap_signature`), so the signed block can be restored
    when the client sends the entry back; ``signature`` is null for unsigned thinking."""
    prov = part.provenance
    fmt = REASONING_FORMATS.get(prov.api, "unknown") if prov is not None else "unknown"
    if type(part) is RedactedThinkingPart:
        return {
            "type": "reasoning.encrypted",
            "data": _wrapped(part.data, prov),
            "format": fmt,
            "index": index,
        }
    sig = part.signature  # type: ignore[union-attr]
    return {
        "type": "reasoning.text",
        "text": part.text,  # type: ignore[union-attr]
        "signature": _wrapped(sig, prov) if sig else None,
        "format": fmt,
        "index": index,
    }


def _wrapped(sig: str, prov: Provenance | None) -> str:
    return wrap_signature(sig, prov) if prov is not None else sig


def custom_tool_names(request: Request) -> frozenset[str]:
    """Names of the tools the client declared ``custom`` (free-form input), whose calls it gets
    as ``custom`` tool calls."""
    return frozenset(t.name for t in request.tools if t.freeform is not None)


def tool_call_entry(cid: str, name: str, raw_arguments: str, custom: bool) -> dict[str, Any]:
    """One ``tool_calls`` entry: a ``function`` call with its arguments byte-exact, or for a
    ``custom`` tool ``{"type": "custom", "custom": {"name", "input"}}`` (``input``: the emulated
    function's argument, else the raw arguments)."""
    if custom:
        try:
            value = orjson.loads(raw_arguments).get("input")
        except (orjson.JSONDecodeError, AttributeError):
            value = None
        text = value if isinstance(value, str) else raw_arguments
        return {"id": cid, "type": "custom", "custom": {"name": name, "input": text}}
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": raw_arguments}}


def render_response(resp: Response, request: Request) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` body (a dict for the server to encode).

    ``message.content`` is the joined text or null, ``tool_calls`` carry ``raw_arguments``
    byte-exact, thinking text goes in ``reasoning_content`` (DeepSeek's and vLLM's field) and,
    with its signature, in ``reasoning_details`` (OpenRouter's field, :func:`reasoning_detail`;
    redacted thinking only there). Both are extra fields the ``openai`` SDK keeps on the
    message (its models allow extra fields) and sends back when the message object itself is
    appended to ``messages``. Withheld tool calls are listed under the top-level
    ``"turnstile"`` key, never in ``tool_calls``.
    """
    texts: list[str] = []
    thoughts: list[str] = []
    details: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    custom: frozenset[str] | None = None
    for p in resp.message.content:  # one pass; exact classes (isinstance on models is slow)
        if type(p) is TextPart:
            texts.append(p.text)
        elif type(p) is ToolCallPart:
            if custom is None:
                custom = custom_tool_names(request) if request.tools else frozenset()
            calls.append(tool_call_entry(client_tool_call_id(p), p.name, p.raw_arguments, p.name in custom))
        elif type(p) is ThinkingPart:
            thoughts.append(p.text)
            details.append(reasoning_detail(p, len(details)))
        elif type(p) is RedactedThinkingPart:
            details.append(reasoning_detail(p, len(details)))
    text = "".join(texts)
    thinking = "".join(thoughts)
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["reasoning_content"] = thinking
    if details:
        message["reasoning_details"] = details
    body: dict[str, Any] = {
        "id": completion_id(resp.id),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": resp.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason(resp.stop_reason),
            }
        ],
        "usage": render_usage(resp.usage),
    }
    meta = turnstile_meta(resp.withheld_tool_calls, resp.stop_reason)
    if meta:
        body["turnstile"] = meta
    return body


# kind -> (OpenAI error type, code). Types and codes as OpenAI sends them
# (https://platform.openai.com/docs/guides/error-codes/api-errors): unknown model is
# invalid_request_error/model_not_found with 404, a bad key invalid_request_error/invalid_api_key,
# rate limits type "requests" code rate_limit_exceeded, overload and 5xx "server_error".
_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    "invalid_request": ("invalid_request_error", None),
    "payload_too_large": ("invalid_request_error", "request_too_large"),
    "not_found": ("invalid_request_error", "model_not_found"),
    "route_not_found": ("invalid_request_error", None),
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "permission": ("invalid_request_error", "permission_denied"),
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "overloaded": ("server_error", "overloaded"),
    "upstream": ("server_error", "upstream_error"),
    "timeout": ("server_error", "timeout"),
    "api_error": ("server_error", None),
}


ERROR_TYPES = _ERROR_TYPES
"""The error types and codes by ``TurnstileError.kind`` (the OpenAI Responses edge extends them)."""


def error_body(
    kind: str,
    message: str,
    param: str | None = None,
    details: Any = None,
    types: dict[str, tuple[str, str | None]] = _ERROR_TYPES,
) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}`` for a ``TurnstileError.kind``
    (``details``, e.g. the guard problems, is added when given; ``types`` the table of types
    and codes by kind)."""
    etype, code = types.get(kind, ("server_error", None))
    err: dict[str, Any] = {"message": message, "type": etype, "param": param, "code": code}
    if details is not None:
        err["details"] = jsonable(details)
    return {"error": err}


QUOTA_ERROR = ("insufficient_quota", "insufficient_quota")
"""OpenAI's type and code for "out of credit" (HTTP 429), which its SDKs and clients do not retry:
what a budget refusal (``error_code`` ``insufficient_quota``) is rendered as."""


def render_error(err: TurnstileError) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, body)`` of an error in OpenAI's shape; the status is ``err.status``. A
    budget refusal has OpenAI's ``insufficient_quota`` type and code."""
    if getattr(err, "error_code", None) == "insufficient_quota":
        return err.status, error_body("quota", err.message, err.param, err.details, {"quota": QUOTA_ERROR})
    return err.status, error_body(err.kind, err.message, err.param, err.details)


def render_models(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``GET /v1/models`` body, readable by both SDKs' ``models.list()``.

    ``entries``: ``{"id", "owned_by", "description", "created"?}``. Each item carries OpenAI's
    fields (``id``, ``object: "model"``, ``created`` (unix s), ``owned_by``) and Anthropic's
    (``type: "model"``, ``display_name``, ``created_at`` RFC 3339); the page carries OpenAI's
    ``object: "list"`` and Anthropic's ``has_more``/``first_id``/``last_id``.
    """
    data = []
    for e in entries:
        created = int(e.get("created") or 0)
        data.append(
            {
                "id": e["id"],
                "object": "model",
                "created": created,
                "owned_by": e.get("owned_by") or "turnstile",
                "type": "model",
                "display_name": e.get("display_name") or e["id"],
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created)),
                "description": e.get("description"),
            }
        )
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }
