"""langgraph's prebuilt ReAct agent (``langgraph.prebuilt.create_react_agent``: in 1.2.x still
there, deprecated in favour of ``langchain.agents.create_agent``, which the ``langchain`` package
holds) with one tool, on ``ChatOpenAI`` and ``ChatAnthropic`` pointed at the gateway: the whole
loop (model -> tool node -> model) through the gateway to every upstream API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR
from .framework_wire import assert_paired
from .langchain_clients import CHATS
from .scripts import call_tools, only, say, tool_names, user_texts

APIS = list(MODEL_FOR)
CALLS: list[str] = []


@tool
def lookup_population(city: str) -> str:
    """How many people live in ``city``."""
    CALLS.append(city)
    return f"{city}: 2102650 inhabitants"


def _model(kind: str, url: str, api: str) -> BaseChatModel:
    make: Callable[[str, str], BaseChatModel] = CHATS[kind][1]
    return make(url, MODEL_FOR[api])


@pytest.mark.compat(
    client="langgraph",
    scenario="create_react_agent, one tool",
    checks="the tool is declared upstream; the tool node's result reaches the upstream paired to the "
    "call's id; the final answer ends the run",
)
@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
@pytest.mark.parametrize("kind", list(CHATS))
@pytest.mark.parametrize("api", APIS)
def test_react_agent_tool_loop_runs_through_the_gateway(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    CALLS.clear()
    call_tools(upstream, api, Call("call_pop_1", "lookup_population", '{"city": "Paris"}'))
    say(upstream, api, "Paris has about 2.1 million inhabitants.")
    agent = create_react_agent(_model(kind, gateway_url, api), [lookup_population])
    state: dict[str, Any] = agent.invoke(
        {"messages": [("user", "How many people live in Paris?")]}, {"recursion_limit": 6}
    )
    messages = state["messages"]
    assert CALLS == ["Paris"]
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].text == "Paris has about 2.1 million inhabitants."
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert (
        isinstance(messages[2], ToolMessage) and messages[2].tool_call_id == messages[1].tool_calls[0]["id"]
    )
    first, second = only(upstream, api)
    assert tool_names(first) == ["lookup_population"]
    assert user_texts(first) == ["How many people live in Paris?"]
    assert_paired(second, "lookup_population", "Paris: 2102650 inhabitants")
