"""Builds one :class:`~gateway.providers.base.Provider` per wire API, sharing one session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.config import TimeoutConfig
from gateway.providers.base import HttpProvider, Provider
from gateway.providers.demo import DemoProvider

if TYPE_CHECKING:
    import aiohttp


def make_providers(session: aiohttp.ClientSession, timeouts: TimeoutConfig) -> dict[str, Provider]:
    """``{api name: provider}`` for every wire API Turnstile speaks: ``openai_chat``,
    ``anthropic_messages``, ``gemini`` (native HTTP over ``session``), ``litellm`` (the long
    tail, through litellm's own clients) and ``demo`` (the local stand-in)."""
    from gateway.providers import anthropic_messages, gemini, openai_chat
    from gateway.providers.litellm_adapter import LitellmProvider

    return {
        "openai_chat": HttpProvider(openai_chat, session, timeouts),
        "anthropic_messages": HttpProvider(anthropic_messages, session, timeouts),
        "gemini": HttpProvider(gemini, session, timeouts),
        "litellm": LitellmProvider(timeouts),
        "demo": DemoProvider(),
    }
