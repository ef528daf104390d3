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

Responses are not stored yet: ``GET``/``DELETE /v1/responses/{id}`` and its ``input_items``
answer 404 (:func:`not_stored`).
"""

from __future__ import annotations

from gateway.edges.openai_chat_render import render_models
from gateway.edges.openai_responses_input import NATIVE
from gateway.edges.openai_responses_parse import ResponsesRequest, parse_input_tokens, parse_request
from gateway.edges.openai_responses_render import (
    render_error,
    render_input_tokens,
    render_response,
    render_usage,
    status_of,
)
from gateway.edges.openai_responses_stream import StreamRenderer, ping_frame, tool_progress_frame
from gateway.errors import TurnstileError

DIALECT = "openai_responses"


class ResponseNotStored(TurnstileError):
    """A stored response was asked for (``GET``/``DELETE /v1/responses/{id}``,
    ``input_items``): this gateway stores none yet. HTTP 404, code ``not_found``."""

    status = 404
    kind = "response_not_found"


def not_stored(response_id: str) -> ResponseNotStored:
    """The 404 for the stored response ``response_id``."""
    return ResponseNotStored(
        f"No response found with id {response_id!r}: this gateway does not store responses (every answer "
        'says "store": false); send the whole conversation in input',
        param="response_id",
    )


__all__ = [
    "DIALECT",
    "NATIVE",
    "ResponseNotStored",
    "ResponsesRequest",
    "StreamRenderer",
    "not_stored",
    "parse_input_tokens",
    "parse_request",
    "ping_frame",
    "render_error",
    "render_input_tokens",
    "render_models",
    "render_response",
    "render_usage",
    "status_of",
    "tool_progress_frame",
]
