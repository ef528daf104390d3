"""Native OpenAI Responses wire module (OpenAI and any Responses-compatible server: Azure
OpenAI, LM Studio's open-responses, vLLM's ``/v1/responses``…).

Implements the :class:`gateway.providers.wire.WireModule` verbs. The request body is built in
:mod:`gateway.providers.openai_responses_request` (its docstring lists the decisions: stateless
``store: false`` with encrypted reasoning, strictness of function tools, what has no slot); the
stream parser is :mod:`gateway.providers.openai_responses_stream`; stop reasons, usage and errors
are in :mod:`gateway.providers.openai_responses_common`.

Reference: https://platform.openai.com/docs/api-reference/responses.

Reading an answer
-----------------
* ``output`` items in order: ``reasoning`` -> a thinking part (summary text; ``encrypted_content``
  as its signature, provenance ``openai_responses`` + the deployment's provider and model, so it
  goes back only there); ``message`` -> text parts (``output_text``; a ``refusal`` is text too;
  the item's ``phase``, ``commentary`` / ``final_answer`` of gpt-5.x, kept on them as
  ``own_keys`` for a Responses client, which sends it back);
  ``function_call`` -> a tool call (``call_id`` is the id the result must name; ``arguments``
  byte-exact); ``custom_tool_call`` -> a tool call of the function a custom tool is emulated
  as (one string argument: arguments ``{"input": <its free-form input>}``, the convention of
  the Responses edge, which maps it back). Other items (hosted tool calls, which the gateway
  never asks for) are skipped.
* ``status: completed`` -> ``stop`` (``tool_use`` with function calls); ``incomplete`` with
  ``incomplete_details.reason: max_output_tokens`` -> ``length`` (the truncation guard then
  withholds cut calls), ``content_filter`` -> ``content_filter``; ``failed`` -> the ``error``
  raised as :class:`UpstreamError` with the status OpenAI gives that error over HTTP
  (``rate_limit_exceeded`` 429, ``context_length_exceeded`` 400, ``server_error`` 500), so
  fallback and overflow handling are the same as for an HTTP error.
* ``usage.input_tokens`` includes ``cached_tokens`` (split out as cache reads);
  ``output_tokens`` includes ``reasoning_tokens``.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.config import Deployment
from gateway.errors import UpstreamProtocolError
from gateway.providers import wire_common
from gateway.providers.naming import NameMap
from gateway.providers.openai_responses_common import API as API  # the wire API name (WireModule.API)
from gateway.providers.openai_responses_common import (
    custom_arguments,
    failure,
    message_texts,
    provenance,
    reasoning_text,
    status_of,
    usage_fields,
)
from gateway.providers.openai_responses_common import map_stop_reason as _map_status
from gateway.providers.openai_responses_request import to_wire_body
from gateway.providers.openai_responses_stream import OpenAIResponsesStreamParser
from gateway.providers.wire import CallContext, StreamParser, UpstreamRequest
from gateway.schema import Request, Response, StopReason

DEFAULT_BASE_URL = "https://api.openai.com/v1"

__all__ = [
    "API",
    "build_request",
    "error_message",
    "from_wire_response",
    "map_stop_reason",
    "new_stream_parser",
    "output_budget",
    "parse_response",
    "to_wire_body",
]


def build_request(
    request: Request, deployment: Deployment, api_key: str | None
) -> tuple[UpstreamRequest, CallContext]:
    """Internal request -> ``POST {base_url}/responses``.

    ``base_url`` defaults to ``https://api.openai.com/v1``; the key goes in
    ``Authorization: Bearer``; ``deployment.quirks.extra_headers`` are added last. Raises
    :class:`CapabilityError` for ``stop`` sequences and images the deployment cannot take.
    """
    ctx = CallContext(deployment=deployment, request=request, names=NameMap())
    body = to_wire_body(request, deployment, ctx.names)
    headers = {"content-type": "application/json", "accept": "application/json"}
    if request.stream:
        headers["accept"] = "text/event-stream"
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(deployment.quirks.extra_headers)
    url = (deployment.base_url or DEFAULT_BASE_URL).rstrip("/") + "/responses"
    return UpstreamRequest(url=url, headers=headers, body=orjson.dumps(body), stream=request.stream), ctx


def parse_response(body: bytes, ctx: CallContext) -> Response:
    """A non-streaming ``response`` object -> :class:`Response` (see :func:`from_wire_response`)."""
    obj = wire_common.loads_object(body, what="response", deployment=ctx.deployment.name)
    return from_wire_response(obj, ctx)


def new_stream_parser(ctx: CallContext) -> StreamParser:
    """A fresh :class:`gateway.providers.openai_responses_stream.OpenAIResponsesStreamParser`."""
    return OpenAIResponsesStreamParser(ctx)


def map_stop_reason(raw: str) -> StopReason:
    """A response ``status`` (``incomplete:<reason>`` for an incomplete one) -> stop reason;
    see :func:`gateway.providers.openai_responses_common.map_stop_reason`."""
    return _map_status(raw)


def error_message(status: int, body: bytes) -> str:
    """``error.message`` of an OpenAI error body, else the raw text (see
    :func:`gateway.providers.wire_common.error_message`)."""
    return wire_common.error_message(status, body)


def output_budget(request: Request, deployment: Deployment) -> int | None:
    """The output budget sent upstream (``max_output_tokens``, tokens: it bounds visible output
    and reasoning tokens together, as ``usage.output_tokens`` counts them), or None."""
    return request.max_output_tokens


def _call_part(item: dict[str, Any], names: NameMap, resp_id: str, n: int) -> dict[str, Any]:
    raw = item.get("arguments")
    if item.get("type") == "custom_tool_call":
        value = item.get("input")
        raw = custom_arguments(value if isinstance(value, str) else "")
    raw = raw if isinstance(raw, str) else "" if raw is None else wire_common.dumps_arguments(raw)
    call_id = item.get("call_id") or item.get("id") or wire_common.synth_id("call", resp_id, n)
    return {
        "type": "tool_call",
        "id": names.from_upstream_id(str(call_id)),
        "name": names.from_upstream_name(str(item.get("name") or "")),
        "arguments": wire_common.parse_arguments(raw),
        "raw_arguments": raw,
    }


def from_wire_response(obj: dict[str, Any], ctx: CallContext) -> Response:
    """A decoded ``response`` object -> :class:`Response` (rules in the module docstring).

    Raises :class:`UpstreamError` for ``status: failed`` (status from the error's code),
    :class:`UpstreamProtocolError` for a body without ``output`` or with a non-object item or a
    reasoning ``encrypted_content`` that is not a string, and :class:`UnknownStopReason` for a
    status that is not an end (``in_progress``, ``queued``, ``cancelled``) or an unknown
    incomplete reason.
    """
    dep = ctx.deployment
    if obj.get("status") == "failed" or (obj.get("error") and obj.get("status") in (None, "failed")):
        raise failure(obj.get("error") or {}, dep.name, what="a failed response")
    output = obj.get("output")
    if not isinstance(output, list):
        raise UpstreamProtocolError("response without an output list", deployment=dep.name)
    resp_id = str(obj.get("id") or "")
    parts: list[dict[str, Any]] = []
    has_calls = False
    has_own = False
    prov = None
    for n, item in enumerate(output):
        if not isinstance(item, dict):
            raise UpstreamProtocolError(f"response output[{n}] is not an object", deployment=dep.name)
        kind = item.get("type")
        if kind == "message":
            phase = item.get("phase")
            if type(phase) is str:  # commentary / final_answer (gpt-5.x): the client sends it back
                own = {"phase": phase}
                parts.extend({"type": "text", "text": t, "own_keys": own} for t in message_texts(item))
                has_own = True
            else:
                parts.extend({"type": "text", "text": t} for t in message_texts(item))
        elif kind == "function_call" or kind == "custom_tool_call":
            parts.append(_call_part(item, ctx.names, resp_id, n))
            has_calls = True
        elif kind == "reasoning":
            sig = item.get("encrypted_content")
            if sig is not None and not isinstance(sig, str):
                raise UpstreamProtocolError(
                    f"response output[{n}].encrypted_content is not a string", deployment=dep.name
                )
            text = reasoning_text(item)
            if text or sig:
                prov = prov or provenance(dep)
                parts.append({"type": "thinking", "text": text, "signature": sig or None, "provenance": prov})
        # hosted tool calls and other item types: not asked for, nothing to carry
    usage = obj.get("usage")
    data = {
        "id": resp_id,
        "model": str(obj.get("model") or dep.model),
        "message": {"content": parts, "own": {"api": API} if has_own else None},
        "stop_reason": _map_status(status_of(obj), has_tool_calls=has_calls),
        "usage": usage_fields(usage) if isinstance(usage, dict) else {},
    }
    return wire_common.validate_response(data, what="response", deployment=dep.name)
