"""Internal schema -> OpenAI Responses bodies: the Response object, its output items, errors
and the input-token count.

References: https://platform.openai.com/docs/api-reference/responses/object,
https://platform.openai.com/docs/api-reference/responses/input-tokens. Decisions:

* ``status``: ``completed`` for a stop or tool stop; ``incomplete`` with
  ``incomplete_details.reason`` ``max_output_tokens`` (stop reason ``length``) or
  ``content_filter``; ``failed`` with ``error.code`` ``server_error`` when the upstream's
  answer ended in error (e.g. every tool call withheld as not complete JSON). Withheld tool
  calls are never output items; they are listed under the top-level ``"turnstile"`` key, as
  in Chat answers.
* One output item per content part, in answer order: thinking -> ``reasoning`` (its text as
  one ``summary_text``; ``encrypted_content`` — the signature in Turnstile's envelope, so it
  goes back only to its signer — only when the request's ``include`` asked for it),
  text -> ``message`` with one ``output_text`` part, a tool call -> ``function_call``, or
  ``custom_tool_call`` (``input`` = the emulated function's ``input`` argument) when the
  request declared the tool ``custom``; a call of a ``namespace`` tool's member has the
  member's ``name`` and the ``namespace`` (the tool's flattened name split again).
* The request's own settings are echoed as OpenAI does; ``store`` is true only when the
  answer was stored (:mod:`gateway.sessions.responses`): a turn bound to a session the client
  named itself is recorded there, not as a response.
"""

from __future__ import annotations

import time
from typing import Any

from gateway.edges import openai_chat_render as chat_render
from gateway.edges.openai_chat_render import client_tool_call_id, turnstile_meta
from gateway.edges.openai_responses_input import CUSTOM_ARGUMENT
from gateway.edges.openai_responses_parse import API, ResponsesRequest
from gateway.edges.signatures import wrap_signature
from gateway.errors import TurnstileError
from gateway.schema import (
    AnyPart,
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
from gateway.sessions.turns import OVERFLOW_MARKERS


def response_id(upstream_id: str, request: Request | None = None) -> str:
    """The ``resp_...`` id of an answer: its stored response's id when the request is stored,
    else one made from the upstream's id ``upstream_id``."""
    if isinstance(request, ResponsesRequest) and request.echo.get("response_id"):
        return str(request.echo["response_id"])
    return upstream_id if upstream_id.startswith("resp_") else "resp_" + upstream_id


def item_id(prefix: str, resp_id: str, n: int) -> str:
    """The id of output item ``n`` of response ``resp_id``: ``msg_``, ``rs_``, ``fc_`` or ``ctc_`` +
    the response id's tail + ``_n``."""
    return f"{prefix}_{resp_id.removeprefix('resp_')}_{n}"


def status_of(stop: StopReason) -> tuple[str, dict[str, Any] | None]:
    """``(status, incomplete_details)`` for an internal stop reason; ``pause`` (an Anthropic
    server-tool loop paused, which only an Anthropic client can ask for) is ``completed``,
    the Responses API having no paused status."""
    if stop == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if stop == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    if stop == "error" or stop == "aborted":
        return "failed", None
    return "completed", None


def render_usage(u: Usage) -> dict[str, Any]:
    """Responses usage: ``input_tokens`` counts cached tokens too (OpenAI's convention),
    ``input_tokens_details.cached_tokens`` the cache reads (``cache_write_tokens`` the cache
    writes, also counted in ``input_tokens``), ``output_tokens`` includes the
    reasoning tokens; ``cost`` (USD) and ``estimated`` as in Chat answers when known."""
    total_in = u.total_input_tokens
    out: dict[str, Any] = {
        "input_tokens": total_in,
        "input_tokens_details": {
            "cached_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
        },
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": total_in + u.output_tokens,
    }
    if u.cost_usd is not None:
        out["cost"] = u.cost_usd
    if u.estimated:
        out["estimated"] = True
    return out


def encrypted_content(sig: str, prov: Provenance | None) -> str:
    """A signature as a Responses client keeps it: in Turnstile's envelope when its signer is
    known (a raw one goes back as OpenAI's own)."""
    return wrap_signature(sig, prov) if prov is not None else sig


def custom_tools(request: Request) -> set[str]:
    """Names of the tools the client declared ``custom``."""
    return request.echo.get("custom_tools", set()) if isinstance(request, ResponsesRequest) else set()


def include_encrypted(request: Request) -> bool:
    """Whether the request's ``include`` asked for ``reasoning.encrypted_content``."""
    return isinstance(request, ResponsesRequest) and bool(request.echo.get("include_encrypted"))


def custom_input(call: ToolCallPart) -> str:
    """The free-form input of an emulated custom tool's call: its ``input`` argument (the
    raw arguments when the model sent no such string)."""
    value = call.arguments.get(CUSTOM_ARGUMENT)
    return value if isinstance(value, str) else call.raw_arguments


def reasoning_item(
    rid: str, summary: str, sig: str | None, prov: Provenance | None, include: bool
) -> dict[str, Any]:
    """A ``reasoning`` output item."""
    item: dict[str, Any] = {
        "id": rid,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }
    if include and sig:
        item["encrypted_content"] = encrypted_content(sig, prov)
    return item


def message_item(mid: str, text: str, status: str = "completed", phase: str | None = None) -> dict[str, Any]:
    """A ``message`` output item with one ``output_text`` part; ``phase`` (``commentary`` /
    ``final_answer``: a Responses upstream's, which the client must send back) when given."""
    item = {
        "id": mid,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }
    if phase is not None:
        item["phase"] = phase
    return item


def phase_of(part: TextPart) -> str | None:
    """The ``phase`` of the upstream message item text ``part`` came from (its ``own_keys``)."""
    own = part.own_keys
    phase = own.get("phase") if own else None
    return phase if type(phase) is str else None


def namespaced_tools(request: Request) -> dict[str, tuple[str, str]]:
    """``(namespace, name)`` of each namespace member the client declared, by flattened name."""
    return request.echo.get("namespaced", {}) if isinstance(request, ResponsesRequest) else {}


def call_item(
    fid: str,
    call: ToolCallPart,
    custom: bool,
    status: str = "completed",
    namespace: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A ``function_call`` (or ``custom_tool_call``) output item; arguments byte-exact. A call
    of a namespace's member (``namespace``: ``(namespace, name)``) has the member's ``name``
    and the ``namespace``, as OpenAI answers it."""
    item: dict[str, Any] = {
        "id": fid,
        "type": "custom_tool_call" if custom else "function_call",
        "status": status,
        "call_id": client_tool_call_id(call),
        "name": call.name if namespace is None else namespace[1],
    }
    if namespace is not None:
        item["namespace"] = namespace[0]
    if custom:
        item["input"] = custom_input(call)
    else:
        item["arguments"] = call.raw_arguments
    return item


def output_item(part: AnyPart, resp_id: str, n: int, request: Request) -> dict[str, Any] | None:
    """Output item ``n`` for one content part of the answer (None for a part with none)."""
    if type(part) is TextPart:
        return message_item(item_id("msg", resp_id, n), part.text, phase=phase_of(part))
    if type(part) is ToolCallPart:
        custom = part.name in custom_tools(request)
        return call_item(
            item_id("ctc" if custom else "fc", resp_id, n),
            part,
            custom,
            namespace=namespaced_tools(request).get(part.name),
        )
    if type(part) is ThinkingPart:
        return reasoning_item(
            item_id("rs", resp_id, n), part.text, part.signature, part.provenance, include_encrypted(request)
        )
    if type(part) is RedactedThinkingPart:
        return reasoning_item(
            item_id("rs", resp_id, n), "", part.data, part.provenance, include_encrypted(request)
        )
    return None


def response_body(
    request: Request,
    *,
    resp_id: str,
    created_at: int,
    model: str,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    incomplete: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The Response object around ``output``, echoing the request's settings as OpenAI does."""
    echo = request.echo if isinstance(request, ResponsesRequest) else {}
    raw = echo.get("raw") or {}
    native = request.native
    extra = native.fields if native is not None and native.api == API else {}
    parallel = echo.get("parallel_tool_calls")
    text = raw.get("text") or {}
    reasoning = raw.get("reasoning") or {}
    return {
        "id": resp_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": echo.get("instructions"),
        "max_output_tokens": request.max_output_tokens,
        "max_tool_calls": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True if parallel is None else parallel,
        "previous_response_id": echo.get("previous_response_id"),
        "prompt_cache_key": extra.get("prompt_cache_key"),
        "reasoning": {
            "effort": reasoning.get("effort"),
            "summary": reasoning.get("summary", reasoning.get("generate_summary")),
        },
        "safety_identifier": extra.get("safety_identifier", None if request.user is None else request.user),
        "service_tier": echo.get("service_tier") or "default",
        "store": bool(echo.get("response_id")),
        "temperature": 1.0 if request.temperature is None else request.temperature,
        "text": {
            "format": text.get("format") or {"type": "text"},
            "verbosity": text.get("verbosity") or "medium",
        },
        "tool_choice": raw.get("tool_choice") or "auto",
        "tools": raw.get("tools") or [],
        "top_logprobs": 0,
        "top_p": 1.0 if request.top_p is None else request.top_p,
        "truncation": raw.get("truncation") or "disabled",
        "usage": usage,
        "user": request.user,
        "metadata": request.metadata,
    }


def add_meta(body: dict[str, Any], withheld: list[WithheldToolCall], stop: StopReason) -> dict[str, Any]:
    """``body`` with the top-level ``"turnstile"`` metadata when there is something to say."""
    meta = turnstile_meta(withheld, stop)
    if meta:
        body["turnstile"] = meta
    return body


def failed_error(stop: StopReason) -> dict[str, Any]:
    """The ``error`` of a response whose answer ended in error."""
    if stop == "aborted":
        return {"code": "server_error", "message": "the upstream's answer was aborted before it was complete"}
    return {
        "code": "server_error",
        "message": "the upstream's answer ended in error (see turnstile.withheld_tool_calls when tool "
        "calls were withheld)",
    }


def render_response(resp: Response, request: Request) -> dict[str, Any]:
    """A non-streaming Response object (a dict for the server to encode)."""
    rid = response_id(resp.id, request)
    output = [
        item
        for n, part in enumerate(resp.message.content)
        if (item := output_item(part, rid, n, request)) is not None
    ]
    status, incomplete = status_of(resp.stop_reason)
    body = response_body(
        request,
        resp_id=rid,
        created_at=int(time.time()),
        model=resp.model,
        status=status,
        output=output,
        usage=render_usage(resp.usage),
        incomplete=incomplete,
        error=failed_error(resp.stop_reason) if status == "failed" else None,
    )
    return add_meta(body, resp.withheld_tool_calls, resp.stop_reason)


_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    **chat_render.ERROR_TYPES,
    "response_not_found": ("invalid_request_error", "not_found"),
}
"""Chat's error types and codes (https://platform.openai.com/docs/guides/error-codes), plus a
stored response that does not exist."""


def error_body(kind: str, message: str, param: str | None = None, details: Any = None) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}`` for a ``TurnstileError.kind``, as
    Chat's (:func:`gateway.edges.openai_chat_render.error_body`) with a stored response's 404."""
    return chat_render.error_body(kind, message, param, details, _ERROR_TYPES)


def render_error(err: TurnstileError) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, body)`` of an error in OpenAI's shape; the status is ``err.status``
    (a budget refusal as OpenAI's ``insufficient_quota``, as the Chat Completions edge does)."""
    if getattr(err, "error_code", None) == "insufficient_quota":
        return chat_render.render_error(err)
    return err.status, error_body(err.kind, err.message, err.param, err.details)


def stream_error_code(kind: str, message: str) -> str:
    """The ``error.code`` of a ``response.failed`` event, the value clients act on:
    ``context_length_exceeded`` when the upstream said the context window was exceeded (the
    wording the session layer's overflow check reads), ``rate_limit_exceeded``, else
    ``server_error``."""
    text = message.lower()
    if any(m in text for m in OVERFLOW_MARKERS):
        return "context_length_exceeded"
    if kind == "rate_limit":
        return "rate_limit_exceeded"
    return "server_error"


def render_input_tokens(n: int) -> dict[str, Any]:
    """The ``POST /v1/responses/input_tokens`` body: ``{"object": "response.input_tokens",
    "input_tokens": n}``."""
    return {"object": "response.input_tokens", "input_tokens": n}
