"""The OpenAI Responses client dialect (``POST /v1/responses``, ``/v1/responses/input_tokens``).

The verbs the server and pipeline call:

* ``parse_request(body: bytes, limits) -> Request``, ``parse_input_tokens(body, limits) ->
  Request`` (:mod:`gateway.edges.openai_responses_parse`, items in
  :mod:`gateway.edges.openai_responses_input`);
* ``render_response(resp, request) -> dict``, ``render_error(err) -> (status, body)``,
  ``render_input_tokens(n) -> dict`` (:mod:`gateway.edges.openai_responses_render`),
  ``render_models(entries) -> dict`` (one body every SDK reads, shared with Chat);
* ``StreamRenderer(request)`` with ``render(event) -> list[bytes]``, ``finish()``, ``closed``
  and ``tool_progress(name, is_error) -> bytes``, and ``ping_frame() -> bytes``
  (:mod:`gateway.edges.openai_responses_stream`).

Stored responses (:mod:`gateway.sessions.responses`): ``store_intent(request)``,
``with_history(request, history, response_id=, stored=)`` (the server binds the turn), and
``render_stored``, ``render_input_items``, ``render_deleted``, ``check_retrieve_query``
(:mod:`gateway.edges.openai_responses_stored`).
"""

from __future__ import annotations

from gateway.edges.openai_chat_render import render_models
from gateway.edges.openai_responses_input import NATIVE
from gateway.edges.openai_responses_parse import (
    ResponsesRequest,
    parse_input_tokens,
    parse_request,
    store_intent,
    with_history,
)
from gateway.edges.openai_responses_render import (
    render_error,
    render_input_tokens,
    render_response,
    render_usage,
    status_of,
)
from gateway.edges.openai_responses_stored import (
    check_retrieve_query,
    render_deleted,
    render_input_items,
    render_stored,
)
from gateway.edges.openai_responses_stream import StreamRenderer, ping_frame, tool_progress_frame

DIALECT = "openai_responses"

__all__ = [
    "DIALECT",
    "NATIVE",
    "ResponsesRequest",
    "StreamRenderer",
    "check_retrieve_query",
    "parse_input_tokens",
    "parse_request",
    "ping_frame",
    "render_deleted",
    "render_error",
    "render_input_items",
    "render_input_tokens",
    "render_models",
    "render_response",
    "render_stored",
    "render_usage",
    "status_of",
    "store_intent",
    "tool_progress_frame",
    "with_history",
]
