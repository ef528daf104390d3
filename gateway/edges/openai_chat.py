"""The OpenAI Chat Completions client dialect (``POST /v1/chat/completions``).

The verbs the server and pipeline call:

* ``parse_request(body: bytes, limits) -> Request`` (:mod:`gateway.edges.openai_chat_parse`);
* ``render_response(resp, request) -> dict``, ``render_error(err) -> (status, body)``,
  ``render_models(entries) -> dict`` (:mod:`gateway.edges.openai_chat_render`);
* ``StreamRenderer(request)`` with ``render(event) -> list[bytes]``, ``finish()`` and
  ``closed`` (True once the answer's end or an error was rendered), and
  ``ping_frame() -> bytes`` (:mod:`gateway.edges.openai_chat_stream`).
"""

from __future__ import annotations

from gateway.edges.openai_chat_messages import legacy_call_id
from gateway.edges.openai_chat_parse import parse_request
from gateway.edges.openai_chat_render import (
    FINISH_REASONS,
    finish_reason,
    render_error,
    render_models,
    render_response,
    render_usage,
)
from gateway.edges.openai_chat_stream import StreamRenderer, ping_frame, tool_progress_frame

DIALECT = "openai_chat"

__all__ = [
    "DIALECT",
    "FINISH_REASONS",
    "StreamRenderer",
    "finish_reason",
    "legacy_call_id",
    "parse_request",
    "ping_frame",
    "render_error",
    "render_models",
    "render_response",
    "render_usage",
    "tool_progress_frame",
]
