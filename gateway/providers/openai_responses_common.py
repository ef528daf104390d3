"""Pieces of the OpenAI Responses wire API shared by the response parser
(:mod:`gateway.providers.openai_responses`) and the stream parser
(:mod:`gateway.providers.openai_responses_stream`): the stop-reason rule, usage, reasoning
provenance, the readers of output items and the mapping of ``error`` objects to the gateway's
error hierarchy.

References: https://platform.openai.com/docs/api-reference/responses/object and
https://platform.openai.com/docs/api-reference/responses-streaming.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

from gateway.config import Deployment
from gateway.errors import UnknownStopReason, UpstreamError
from gateway.providers import wire_common
from gateway.schema import Provenance, StopReason

API = "openai_responses"

SUMMARY_SEPARATOR = "\n\n"
"""Between two summary parts of one reasoning item, which becomes one thinking part."""

_INCOMPLETE: dict[str, StopReason] = {"max_output_tokens": "length", "content_filter": "content_filter"}

ERROR_STATUS: dict[str, int] = {
    "context_length_exceeded": 400,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_error": 500,
    "server_is_overloaded": 503,
    "slow_down": 503,
    "invalid_prompt": 400,
    "invalid_request_error": 400,
    "model_not_found": 404,
}
"""``error.code`` (or ``type``) of a failed response -> the HTTP status the same error has when
OpenAI answers it before streaming, so the route layer's fallback and the window layer's
overflow retry treat both alike. Codes: https://platform.openai.com/docs/api-reference/responses/object
(``error.code``: ``server_error``, ``rate_limit_exceeded``, ``invalid_prompt``, ``vector_store_timeout``,
``invalid_image*``…) and https://platform.openai.com/docs/guides/error-codes. Other ``invalid_*``
codes are 400; anything else 502."""


def map_stop_reason(raw: str | None, *, has_tool_calls: bool = False) -> StopReason:
    """A response's ``status`` (with ``incomplete_details.reason`` after a colon, as
    ``"incomplete:max_output_tokens"``) -> internal stop reason: ``completed`` is ``stop``
    (``tool_use`` when the output holds function calls); ``incomplete`` for
    ``max_output_tokens`` is ``length``, for ``content_filter`` ``content_filter``. Anything
    else (``in_progress``, ``queued``, ``cancelled``, an unknown reason) raises
    :class:`UnknownStopReason`: nothing is guessed."""
    if raw == "completed":
        return "tool_use" if has_tool_calls else "stop"
    if isinstance(raw, str) and raw.startswith("incomplete:"):
        reason = _INCOMPLETE.get(raw.partition(":")[2])
        if reason is not None:
            return reason
    raise UnknownStopReason(f"unknown OpenAI Responses status {raw!r}")


def status_of(response: dict[str, Any]) -> str:
    """The ``status`` of a response object, with ``:<incomplete_details.reason>`` appended for
    an incomplete one (the input of :func:`map_stop_reason`)."""
    status = str(response.get("status") or "")
    if status == "incomplete":
        details = wire_common.as_dict(response.get("incomplete_details"))
        return f"incomplete:{details.get('reason') or ''}"
    return status


@functools.lru_cache(maxsize=1024)
def _provenance(provider: str, model: str) -> Provenance:
    return Provenance(api=API, provider=provider, model=model)


def provenance(deployment: Deployment) -> Provenance:
    """Provenance of reasoning read from this deployment (one shared, frozen instance per
    provider and model): its ``encrypted_content`` goes back only to the same API, provider and
    model (:mod:`gateway.guards.thinking`)."""
    return _provenance(deployment.provider, deployment.model)


@functools.lru_cache(maxsize=1024)
def _reasoning_model(model: str, provider: str) -> bool:
    from gateway.providers.catalog import model_info

    info = model_info(model, provider)
    return info is None or info.get("supports_reasoning") is True


def is_reasoning_model(deployment: Deployment) -> bool:
    """Whether ``deployment`` may be sent ``reasoning`` and ``include:
    ["reasoning.encrypted_content"]``: it supports thinking (``supports_thinking``) and litellm's
    bundled table does not know its model as one without reasoning. OpenAI refuses both for a
    model without reasoning ("Encrypted content is not supported with this model.", param
    ``include``, for gpt-4o and gpt-4.1: ShishirPatil/gorilla#1148; "Unsupported parameter:
    'reasoning.effort' is not supported with this model."). A model the table does not know
    (a Responses-compatible server's own) is trusted to ``supports_thinking``: set it false for a
    model that has no reasoning."""
    return deployment.supports_thinking and _reasoning_model(deployment.model, deployment.provider)


def is_responses_signed(prov: Provenance | None) -> bool:
    """Whether reasoning with provenance ``prov`` was made by a Responses upstream (the last
    check before ``encrypted_content`` is sent; the thinking policy has already run)."""
    return prov is not None and prov.api == API


def usage_fields(u: dict[str, Any] | None) -> dict[str, int]:
    """The :class:`gateway.schema.Usage` fields (tokens) of a Responses ``usage`` object:
    ``input_tokens`` includes ``input_tokens_details.cached_tokens`` (split out as cache reads)
    and ``cache_write_tokens`` (split out as cache writes; OpenAI reports them for extended
    prompt caching, recorded in pydantic-ai's ``test_openai_responses_prompt_cache_e2e``);
    ``output_tokens`` includes ``output_tokens_details.reasoning_tokens``
    (https://platform.openai.com/docs/api-reference/responses/object#responses/object-usage).
    Empty for a missing usage (the accounting layer then estimates)."""
    if not u:
        return {}
    int_field = wire_common.int_field
    total_in = int_field(u, "input_tokens") or 0
    details = wire_common.as_dict(u.get("input_tokens_details"))
    cached = int_field(details, "cached_tokens") or 0
    written = int_field(details, "cache_write_tokens") or 0
    reasoning = int_field(wire_common.as_dict(u.get("output_tokens_details")), "reasoning_tokens") or 0
    return {
        "input_tokens": max(total_in - cached - written, 0),
        "output_tokens": int_field(u, "output_tokens") or 0,
        "cache_read_tokens": cached,
        "cache_write_tokens": written,
        "reasoning_tokens": reasoning,
    }


def reasoning_text(item: dict[str, Any]) -> str:
    """The readable text of a ``reasoning`` output item: its ``summary`` parts
    (``summary_text``) joined by :data:`SUMMARY_SEPARATOR`, else its raw ``content`` parts
    (``reasoning_text``, open-weight models served over Responses)."""
    texts = [
        str(p.get("text") or "")
        for p in wire_common.as_list(item.get("summary"))
        if isinstance(p, dict) and p.get("text")
    ]
    if not texts:
        texts = [
            str(p.get("text") or "")
            for p in wire_common.as_list(item.get("content"))
            if isinstance(p, dict) and p.get("type") == "reasoning_text" and p.get("text")
        ]
    return SUMMARY_SEPARATOR.join(texts)


def message_texts(item: dict[str, Any]) -> list[str]:
    """The texts of a ``message`` output item's content, in order: ``output_text`` text and
    ``refusal`` text (a refusal is what the model said; it is not dropped)."""
    out: list[str] = []
    for part in wire_common.as_list(item.get("content")):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        value = (
            part.get("text") if kind == "output_text" else part.get("refusal") if kind == "refusal" else None
        )
        if isinstance(value, str) and value:
            out.append(value)
    return out


def error_status(err: dict[str, Any]) -> int:
    """The HTTP status for an ``error`` object of a failed response (see :data:`ERROR_STATUS`)."""
    code = str(err.get("code") or err.get("type") or "")
    if code in ERROR_STATUS:
        return ERROR_STATUS[code]
    if code.startswith("invalid_"):
        return 400
    return 502


def failure(err: Any, deployment: str, *, what: str) -> UpstreamError:
    """An :class:`UpstreamError` for a failed response (``what``: ``response.failed``, an
    ``error`` stream event, a whole body with ``status: failed``): status from
    :func:`error_status`, the message naming the code (which the window layer reads for a
    context overflow), ``body`` the error as JSON."""
    obj = err if isinstance(err, dict) else {"message": str(err)}
    code = obj.get("code") or obj.get("type") or "error"
    message = str(obj.get("message") or code)
    return UpstreamError(
        f"deployment {deployment!r} answered {what} ({code}): {message}",
        status=error_status(obj),
        deployment=deployment,
        body=orjson.dumps(obj).decode("utf-8")[:2000],
    )


CUSTOM_INPUT = "input"
"""The one string argument a ``custom`` tool's call is carried as (its free-form ``input``)."""


def custom_arguments(text: str) -> str:
    """The arguments (a JSON object string) of an emulated custom tool's call whose free-form
    input is ``text``: ``{"input": text}``."""
    return orjson.dumps({CUSTOM_INPUT: text}).decode()
