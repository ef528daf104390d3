"""Client dialects: request bodies -> :mod:`gateway.schema`, schema and stream events -> the
client's own response, stream and error shapes.

One module per dialect, each exposing the same verbs (``DIALECT``, ``parse_request``,
``render_response``, ``StreamRenderer``, ``render_error``, ``render_models``, ``ping_frame``):
:mod:`gateway.edges.openai_chat`, :mod:`gateway.edges.anthropic_messages`,
:mod:`gateway.edges.openai_responses` and :mod:`gateway.edges.gemini` (whose ``parse_request``
also takes the model and stream flag from the URL). Provider and
dialect field names live only here and in :mod:`gateway.providers`.
"""

from __future__ import annotations

from types import ModuleType

from gateway.edges import anthropic_messages, gemini, openai_chat, openai_responses

DIALECTS: dict[str, ModuleType] = {
    openai_chat.DIALECT: openai_chat,
    anthropic_messages.DIALECT: anthropic_messages,
    openai_responses.DIALECT: openai_responses,
    gemini.DIALECT: gemini,
}


def get_dialect(name: str) -> ModuleType:
    """The edge module for a dialect name (``openai_chat``, ``anthropic_messages``,
    ``openai_responses`` or ``gemini``).
    Raises ``KeyError`` for another name."""
    return DIALECTS[name]


__all__ = ["DIALECTS", "anthropic_messages", "gemini", "get_dialect", "openai_chat", "openai_responses"]
