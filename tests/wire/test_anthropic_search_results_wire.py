"""An Anthropic client's ``search_result`` blocks in a tool result (RAG with citations) reach a
Claude upstream as sent and another wire API's model as their text (title, source and content),
asserted on what reached the upstream stand-in; a key the SDK type does not have is refused by
name."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

AN = MATRIX["anthropic_messages"][0]
OA = MATRIX["openai_chat"][0]
RESULT = {
    "type": "search_result",
    "source": "https://docs.example.com/tides",
    "title": "Tides",
    "content": [{"type": "text", "text": "High tide is at noon."}],
    "citations": {"enabled": True},
}
TOOL = {"name": "search", "description": "Search.", "input_schema": {"type": "object", "properties": {}}}


def _messages(result: Any) -> Any:
    return [
        {"role": "user", "content": "When is high tide?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [result]}]},
    ]


def test_a_search_result_reaches_claude_as_sent(upstream: UpstreamStandin, ant: anthropic.Anthropic) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "At noon.", stream=False)))
    ant.messages.create(model=AN, max_tokens=64, tools=[TOOL], messages=_messages(RESULT))
    (got,) = upstream.requests()
    (block,) = got.body["messages"][2]["content"]
    assert block["content"] == [RESULT]


def test_a_search_result_reaches_another_api_as_its_text(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("openai_chat", "At noon.", stream=False)))
    ant.messages.create(model=OA, max_tokens=64, tools=[TOOL], messages=_messages(RESULT))
    (got,) = upstream.requests()
    (tool_msg,) = [m for m in got.body["messages"] if m["role"] == "tool"]
    text = tool_msg["content"] if isinstance(tool_msg["content"], str) else tool_msg["content"][0]["text"]
    assert "Tides" in text and "https://docs.example.com/tides" in text and "High tide is at noon." in text


def test_an_unknown_key_on_a_search_result_is_refused_by_name(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(
            model=AN, max_tokens=64, tools=[TOOL], messages=_messages({**RESULT, "colour": 1})
        )
    assert "messages[2].content[0].content[0].colour" in exc.value.message
    assert upstream.requests() == []
