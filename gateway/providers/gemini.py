"""Native Gemini ``generateContent`` wire module (Google AI Studio / Gemini Developer API).

Implements the :class:`gateway.providers.wire.WireModule` verbs:

* ``build_request(request, deployment, api_key)``: ``POST {base_url}/models/{model}:generateContent``
  or ``:streamGenerateContent?alt=sse``; ``base_url`` defaults to
  ``https://generativelanguage.googleapis.com/v1beta``; the key goes in ``x-goog-api-key``.
  Body: see :mod:`gateway.providers.gemini_request`.
* ``parse_response(body, ctx)`` / ``new_stream_parser(ctx)``: see
  :mod:`gateway.providers.gemini_stream` (one parser for both, so both give the same answer).
* ``map_stop_reason(raw)`` and ``error_message(status, body)``: see
  :mod:`gateway.providers.gemini_common`.

Tool names are rewritten to Gemini's rule (``^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$``) and mapped back;
thinking and thought signatures travel with ``Provenance(api="gemini", provider, model)``.
"""

from __future__ import annotations

from urllib.parse import quote

import orjson

from gateway.config import Deployment
from gateway.errors import UpstreamProtocolError
from gateway.providers.gemini_common import (
    API,
    GEMINI_NAME,
    GeminiNameMap,
    error_message,
    map_stop_reason,
    model_path,
)
from gateway.providers.gemini_request import build_body, output_budget
from gateway.providers.gemini_stream import GeminiStreamParser, assemble
from gateway.providers.wire import CallContext, UpstreamRequest
from gateway.schema import Request, Response

__all__ = [
    "API",
    "DEFAULT_BASE_URL",
    "GEMINI_NAME",
    "GeminiStreamParser",
    "build_request",
    "error_message",
    "map_stop_reason",
    "new_stream_parser",
    "output_budget",
    "parse_response",
]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"


def build_request(
    request: Request, deployment: Deployment, api_key: str | None
) -> tuple[UpstreamRequest, CallContext]:
    """Internal request -> Gemini HTTP request and the context to read its answer.

    ``request.stream`` picks ``:streamGenerateContent?alt=sse`` (SSE) or ``:generateContent``.
    Raises :class:`gateway.errors.CapabilityError` / :class:`gateway.errors.InvalidRequest` for
    content Gemini cannot take (see :func:`gateway.providers.gemini_request.build_body`).
    """
    ctx = CallContext(deployment=deployment, request=request, names=GeminiNameMap())
    body = build_body(request, deployment, ctx.names)
    base = (deployment.base_url or DEFAULT_BASE_URL).rstrip("/")
    model = quote(model_path(deployment.model), safe="-._~")
    if request.stream:
        url = f"{base}/models/{model}:streamGenerateContent?alt=sse"
    else:
        url = f"{base}/models/{model}:generateContent"
    headers = {"content-type": "application/json", **deployment.quirks.extra_headers}
    if request.stream:
        headers["accept"] = "text/event-stream"
    if api_key:
        headers["x-goog-api-key"] = api_key
    return UpstreamRequest(url=url, headers=headers, body=orjson.dumps(body), stream=request.stream), ctx


def parse_response(body: bytes, ctx: CallContext) -> Response:
    """A ``GenerateContentResponse`` JSON body -> :class:`Response`.

    Stop reason: ``finishReason`` via :func:`map_stop_reason` (``STOP`` with function calls ->
    ``tool_use``); a prompt blocked by ``promptFeedback.blockReason`` -> ``content_filter`` with
    an empty message. Raises :class:`UpstreamProtocolError` for a body that is not JSON or has
    no finish reason, :class:`gateway.errors.UnknownStopReason` for an unknown one.
    """
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise UpstreamProtocolError(
            f"Gemini response is not JSON: {err}",
            deployment=ctx.deployment.name,
            body=body[:500].decode("utf-8", "replace"),
        ) from err
    parser = GeminiStreamParser(ctx)
    events = parser.feed_obj(obj)
    events.extend(parser.finish())
    return assemble(events, fallback_model=ctx.deployment.model)


def new_stream_parser(ctx: CallContext) -> GeminiStreamParser:
    """A fresh parser for one ``streamGenerateContent?alt=sse`` response."""
    return GeminiStreamParser(ctx)
