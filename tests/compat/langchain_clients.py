"""LangChain chat models pointed at the gateway, unchanged but for the URL and a fake key
(shared by the LangChain and langgraph compat tests): label -> (compat client label, factory
``(gateway_url, model) -> chat model``)."""

from __future__ import annotations

from collections.abc import Callable

from langchain_anthropic import ChatAnthropic
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI


def chat_openai(url: str, name: str) -> BaseChatModel:
    """``ChatOpenAI`` on the gateway's ``/v1`` (Chat Completions), no retries."""
    return ChatOpenAI(model=name, base_url=f"{url}/v1", api_key="sk-client-key", max_retries=0, timeout=15)


def chat_openai_responses(url: str, name: str) -> BaseChatModel:
    """``ChatOpenAI`` with ``use_responses_api=True`` on the gateway's ``/v1`` (Responses)."""
    return ChatOpenAI(
        model=name,
        base_url=f"{url}/v1",
        api_key="sk-client-key",
        max_retries=0,
        timeout=15,
        use_responses_api=True,
    )


def chat_anthropic(url: str, name: str) -> BaseChatModel:
    """``ChatAnthropic`` on the gateway's root (Messages), no retries."""
    return ChatAnthropic(  # type: ignore[call-arg]
        model=name, base_url=url, api_key="sk-ant-client-key", max_retries=0, timeout=15, max_tokens=1024
    )


CHATS: dict[str, tuple[str, Callable[[str, str], BaseChatModel]]] = {
    "ChatOpenAI": ("langchain-openai", chat_openai),
    "ChatOpenAI(use_responses_api)": ("langchain-openai", chat_openai_responses),
    "ChatAnthropic": ("langchain-anthropic", chat_anthropic),
}
