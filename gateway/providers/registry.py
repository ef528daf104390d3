"""Builds one :class:`~gateway.providers.base.Provider` per wire API, sharing one session."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.config import TimeoutConfig
from gateway.providers.base import HttpProvider, Provider
from gateway.providers.demo import DemoProvider

if TYPE_CHECKING:
    import aiohttp


def make_providers(
    session: aiohttp.ClientSession,
    timeouts: TimeoutConfig,
    max_response_bytes: int | None = None,
    on_large: Callable[[], None] | None = None,
) -> dict[str, Provider]:
    """``{api name: provider}`` for every wire API Turnstile speaks: ``openai_chat``,
    ``openai_responses``, ``anthropic_messages``, ``gemini`` (native HTTP over ``session``, answers capped at
    ``max_response_bytes`` bytes while read, ``on_large`` called after a large one),
    ``litellm`` (the long tail, through litellm's own clients, which read whole answers: not
    capped) and ``demo`` (the local stand-in)."""
    from gateway.providers import anthropic_messages, gemini, openai_chat, openai_responses
    from gateway.providers.litellm_adapter import LitellmProvider
    from gateway.providers.transport import DEFAULT_MAX_BYTES

    cap = max_response_bytes or DEFAULT_MAX_BYTES
    return {
        "openai_chat": HttpProvider(openai_chat, session, timeouts, cap, on_large),
        "openai_responses": HttpProvider(openai_responses, session, timeouts, cap, on_large),
        "anthropic_messages": HttpProvider(anthropic_messages, session, timeouts, cap, on_large),
        "gemini": HttpProvider(gemini, session, timeouts, cap, on_large),
        "litellm": LitellmProvider(timeouts),
        "demo": DemoProvider(),
    }
