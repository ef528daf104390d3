"""The Anthropic Messages client dialect (``POST /v1/messages``, ``/v1/messages/count_tokens``).

The verbs the server and pipeline call:

* ``parse_request(body: bytes, limits) -> Request``, ``parse_count_tokens(body, limits) -> Request``
  (:mod:`gateway.edges.anthropic_messages_parse`);
* ``render_response(resp, request) -> dict``, ``render_error(err) -> (status, body)``,
  ``render_count_tokens(n) -> dict`` (:mod:`gateway.edges.anthropic_messages_render`),
  ``render_models(entries) -> dict`` (one body both SDKs read, shared with OpenAI);
* ``thread_of(request)``, ``check_threadable(request)``, ``settings(request)``, ``created(request, id)``,
  ``continued(request, id, ...)``: a message thread's request
  (:mod:`gateway.edges.anthropic_messages_thread`);
* ``StreamRenderer(request)`` with ``render(event) -> list[bytes]``, ``finish()`` and
  ``closed`` (True once the answer's end or an error was rendered), and
  ``ping_frame() -> bytes`` (:mod:`gateway.edges.anthropic_messages_stream`).
"""

from __future__ import annotations

from gateway.edges.anthropic_messages_parse import NATIVE, parse_count_tokens, parse_request
from gateway.edges.anthropic_messages_render import (
    STOP_REASONS,
    render_count_tokens,
    render_error,
    render_response,
    render_usage,
    stop_reason,
)
from gateway.edges.anthropic_messages_stream import StreamRenderer, ping_frame, tool_progress_frame
from gateway.edges.anthropic_messages_thread import (
    ThreadedRequest,
    check_threadable,
    continued,
    created,
    settings,
    thread_of,
)
from gateway.edges.openai_chat_render import render_models

DIALECT = "anthropic_messages"

__all__ = [
    "DIALECT",
    "NATIVE",
    "STOP_REASONS",
    "StreamRenderer",
    "ThreadedRequest",
    "check_threadable",
    "continued",
    "created",
    "parse_count_tokens",
    "parse_request",
    "ping_frame",
    "render_count_tokens",
    "render_error",
    "render_models",
    "render_response",
    "render_usage",
    "settings",
    "stop_reason",
    "thread_of",
    "tool_progress_frame",
]
