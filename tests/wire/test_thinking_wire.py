"""Signed thinking over the wire (recording: charmbracelet/fantasy TestAnthropicThinking,
claude-sonnet-4: thinking + signature + ``weather`` tool_use, then the answer).

Anthropic client <-> Anthropic upstream: the signature round-trips byte-identical. The same
history sent to another upstream: thinking signed by Anthropic is stripped (policy ``strip``,
the default) and its signature never leaves the gateway."""

from __future__ import annotations

from typing import Any

import pytest
from standins import recordings
from standins.drive import ask, tool_results, user
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import recorded_calls, recorded_text

WEATHER = [
    {
        "name": "weather",
        "description": "Get weather information for a location",
        "parameters": {
            "type": "object",
            "required": ["location"],
            "properties": {"location": {"description": "the city", "type": "string"}},
        },
    }
]
THINKING = {"type": "enabled", "budget_tokens": 4000}


def _recorded_thinking(ex: recordings.Exchange) -> tuple[str, str]:
    if not ex.stream:
        block = next(b for b in ex.json()["content"] if b["type"] == "thinking")
        return block["thinking"], block["signature"]
    text, sig = "", ""
    for ev in ex.sse_data():
        if ev["type"] == "content_block_delta" and ev["delta"]["type"] == "thinking_delta":
            text += ev["delta"]["thinking"]
        if ev["type"] == "content_block_delta" and ev["delta"]["type"] == "signature_delta":
            sig += ev["delta"]["signature"]
    return text, sig


def _turn1(
    ant: Any, upstream: UpstreamStandin, stream: bool
) -> tuple[Any, recordings.Exchange, list[dict[str, Any]]]:
    first = recordings.anthropic_thinking(stream)[0]
    upstream.script(replay(first, api="anthropic_messages"))
    history = [user("anthropic", "What's the weather in Florence, Italy?")]
    turn = ask(
        "anthropic",
        ant,
        model=MATRIX["anthropic_messages"][0],
        stream=stream,
        messages=history,
        tools=WEATHER,
        max_tokens=4096,
        system="You are a helpful assistant",
        thinking=THINKING,
    )
    assert turn.error is None, turn.error
    return turn, first, history


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_anthropic_signature_round_trips_byte_identical(
    stream: bool, upstream: UpstreamStandin, ant: Any
) -> None:
    turn1, first, history = _turn1(ant, upstream, stream)
    rec_text, rec_sig = _recorded_thinking(first)
    assert [t["thinking"] for t in turn1.thinking] == [rec_text]
    assert turn1.thinking[0]["signature"], "the client must receive a signature to echo"
    assert turn1.stop == "tool_use"
    assert upstream.requests()[0].body["thinking"] == THINKING

    second = recordings.anthropic_thinking(stream)[1]
    upstream.script(replay(second, api="anthropic_messages"))
    call_id = turn1.calls[0]["id"]
    assert call_id == recorded_calls(first, "anthropic_messages")[0].id
    history2 = [*history, turn1.echo, *tool_results("anthropic", [(call_id, "40 C", False)])]
    turn2 = ask(
        "anthropic",
        ant,
        model=MATRIX["anthropic_messages"][0],
        stream=stream,
        messages=history2,
        tools=WEATHER,
        max_tokens=4096,
        system="You are a helpful assistant",
        thinking=THINKING,
    )

    assert turn2.error is None, turn2.error
    assert turn2.text == recorded_text(second, "anthropic_messages")
    body = upstream.requests()[1].body
    thinking_blocks = [b for b in body["messages"][1]["content"] if b["type"] == "thinking"]
    assert thinking_blocks == [{"type": "thinking", "thinking": rec_text, "signature": rec_sig}]
    assert body["messages"][1]["content"][0]["type"] == "thinking", "thinking must stay first in the turn"


@pytest.mark.parametrize("target", ["openai_chat", "gemini"])
def test_anthropic_signature_is_stripped_toward_another_upstream(
    target: str, upstream: UpstreamStandin, ant: Any
) -> None:
    turn1, first, history = _turn1(ant, upstream, False)
    rec_text, rec_sig = _recorded_thinking(first)
    answer = recordings.common(target, "simple", False)[0]
    upstream.script(replay(answer, api=target))
    call_id = turn1.calls[0]["id"]
    history2 = [*history, turn1.echo, *tool_results("anthropic", [(call_id, "40 C", False)])]

    turn2 = ask(
        "anthropic",
        ant,
        model=MATRIX[target][0],
        messages=history2,
        stream=False,
        tools=WEATHER,
        max_tokens=4096,
        system="You are a helpful assistant",
        thinking=THINKING,
    )

    assert turn2.text == recorded_text(answer, target)
    sent = upstream.requests(api=target)
    assert len(sent) == 1
    raw = sent[0].raw.decode()
    assert rec_sig not in raw, "an Anthropic signature must never reach another provider"
    assert turn1.thinking[0]["signature"] not in raw
    assert rec_text not in raw, "policy strip drops foreign thinking (it is not sent as text either)"
    assert call_id in raw or target == "gemini", "the tool call itself is kept"
    assert "40 C" in raw, "the tool result is kept"
