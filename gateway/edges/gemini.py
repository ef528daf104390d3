"""The Gemini ``generateContent`` client dialect (``POST /v1beta/models/{model}:generateContent``,
``:streamGenerateContent?alt=sse``, ``:countTokens``, ``GET /v1beta/models``; the same under
``/v1/``).

The verbs the server and pipeline call:

* ``parse_request(body: bytes, limits, *, model, stream) -> Request``,
  ``parse_count_tokens(body, limits, *, model) -> Request`` (:mod:`gateway.edges.gemini_parse`;
  the model and the stream flag come from the URL; tools and configuration:
  :mod:`gateway.edges.gemini_options`);
* ``render_response(resp, request) -> dict``, ``render_error(err) -> (status, body)``,
  ``render_count_tokens(n) -> dict``, ``render_models(entries) -> dict``,
  ``render_model(entry) -> dict`` (:mod:`gateway.edges.gemini_render`);
* ``StreamRenderer(request)`` with ``render(event) -> list[bytes]``, ``finish()`` and
  ``closed``, and ``ping_frame() -> bytes`` (:mod:`gateway.edges.gemini_stream`).
"""

from __future__ import annotations

from gateway.edges.gemini_options import json_schema_from_gemini
from gateway.edges.gemini_parse import (
    NATIVE,
    call_id,
    parse_count_tokens,
    parse_request,
)
from gateway.edges.gemini_render import (
    FINISH_REASONS,
    finish_reason,
    render_count_tokens,
    render_error,
    render_model,
    render_models,
    render_response,
    render_usage,
)
from gateway.edges.gemini_stream import StreamRenderer, ping_frame, tool_progress_frame

DIALECT = "gemini"

__all__ = [
    "DIALECT",
    "FINISH_REASONS",
    "NATIVE",
    "StreamRenderer",
    "call_id",
    "finish_reason",
    "json_schema_from_gemini",
    "parse_count_tokens",
    "parse_request",
    "ping_frame",
    "render_count_tokens",
    "render_error",
    "render_model",
    "render_models",
    "render_response",
    "render_usage",
    "tool_progress_frame",
]
