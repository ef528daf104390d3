"""Thinking across dialects: an OpenAI Chat client on Claude with ``reasoning_effort`` and tools.

Recording: charmbracelet/fantasy TestAnthropicThinking (claude-sonnet-4: thinking + signature +
``weather`` tool_use, then the answer). The stand-in enforces the real API's rules
(:mod:`standins.anthropic_thinking_rule`): with thinking on, round 2's final assistant turn
must start with a thinking block whose signature the stand-in issued. Round 2 passes both when
the client sends the reasoning back (the SDK's message object, with ``reasoning_details``) and
when it drops it (a hand-built assistant message: the gateway restores the signed block from
its memory). When neither holds (the memory forgot), thinking is turned off for that request
and the answer says so (``x-turnstile-dropped: thinking``).

Gemini 3 (fantasy TestGoogleThinking): the signature rides on the tool call (its id), which
every OpenAI client echoes, so the same two rounds reach Gemini with the real
``thoughtSignature``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.lib.streaming._deltas import accumulate_delta
from standins import recordings
from standins.drive import ask, tool_results, user
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import recorded_calls, recorded_text, transcript_row

from gateway.thinking_memory import ThinkingMemory

WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Get weather information for a location",
            "parameters": {
                "type": "object",
                "required": ["location"],
                "properties": {"location": {"description": "the city", "type": "string"}},
            },
        },
    }
]
SYSTEM = {"role": "system", "content": "You are a helpful assistant"}
QUESTION = {"role": "user", "content": "What's the weather in Florence, Italy?"}
CLAUDE = MATRIX["anthropic_messages"][0]
GEMINI = MATRIX["gemini"][0]


def _recorded_thinking(ex: recordings.Exchange) -> tuple[str, str]:
    if not ex.stream:
        block = next(b for b in ex.json()["content"] if b["type"] == "thinking")
        return block["thinking"], block["signature"]
    text, sig = "", ""
    for ev in ex.sse_data():
        delta = ev.get("delta") or {}
        text += delta.get("thinking", "") if delta.get("type") == "thinking_delta" else ""
        sig += delta.get("signature", "") if delta.get("type") == "signature_delta" else ""
    return text, sig


def _create(oai: openai.OpenAI, model: str, messages: list[Any], stream: bool) -> tuple[dict[str, Any], Any]:
    """One request of the tool loop through the official SDK: ``(headers, message)`` where the
    message is what the SDK hands the user (whole: ``choices[0].message``; streamed: the
    chunks merged by the SDK's own ``accumulate_delta``, as its stream helper does)."""
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "tools": WEATHER,
        "max_tokens": 4096,
        "reasoning_effort": "low",
    }
    if not stream:
        raw = oai.chat.completions.with_raw_response.create(**kwargs)
        return dict(raw.headers), raw.parse().choices[0].message
    raw = oai.chat.completions.with_raw_response.create(**kwargs, stream=True)
    acc: dict[object, object] = {}
    for chunk in raw.parse():
        for choice in chunk.choices:
            acc = accumulate_delta(acc, choice.delta.to_dict())
    acc.pop("role", None)
    return dict(raw.headers), {"role": "assistant", **acc}


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


def _tool_calls(message: Any) -> list[dict[str, Any]]:
    calls = _field(message, "tool_calls") or []
    return [c if isinstance(c, dict) else c.to_dict() for c in calls]


def _hand_built(message: Any) -> dict[str, Any]:
    """The assistant message as a plain SDK user writes it: content and tool calls only."""
    return {
        "role": "assistant",
        "content": _field(message, "content") or None,
        "tool_calls": [
            {"id": c["id"], "type": "function", "function": c["function"]} for c in _tool_calls(message)
        ],
    }


@pytest.fixture
def memory(wire_servers: dict[str, Any]) -> Iterator[ThinkingMemory]:
    """The gateway's thinking memory, emptied before and after the test."""
    mem: ThinkingMemory = wire_servers["gateway"].app.state.gateway.thinking
    mem.clear()
    yield mem
    mem.clear()


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
@pytest.mark.parametrize("echo", ["sent_back", "dropped"])
def test_openai_client_tool_loop_on_claude_sends_signed_thinking_on_round_two(
    echo: str, stream: bool, upstream: UpstreamStandin, oai: openai.OpenAI, memory: ThinkingMemory
) -> None:
    first, second = recordings.anthropic_thinking(stream)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    rec_text, rec_sig = _recorded_thinking(first)

    _, msg1 = _create(oai, CLAUDE, [SYSTEM, QUESTION], stream)
    assert upstream.requests()[0].body["thinking"]["type"] == "enabled"
    assert _field(msg1, "reasoning_content") == rec_text, "reasoning text in DeepSeek's field"
    details = _field(msg1, "reasoning_details")
    assert [(d["type"], d["text"], d["format"], d["index"]) for d in details] == [
        ("reasoning.text", rec_text, "anthropic-claude-v1", 0)
    ]
    assert details[0]["signature"].endswith(rec_sig), "the signature travels (in Turnstile's envelope)"
    calls = _tool_calls(msg1)
    assert [c["id"] for c in calls] == [c.id for c in recorded_calls(first, "anthropic_messages")]

    back = msg1 if echo == "sent_back" else _hand_built(msg1)
    result = {"role": "tool", "tool_call_id": calls[0]["id"], "content": "40 C"}
    headers, msg2 = _create(oai, CLAUDE, [SYSTEM, QUESTION, back, result], stream)

    assert _field(msg2, "content") == recorded_text(second, "anthropic_messages")
    body = upstream.requests()[1].body
    assert body["thinking"]["type"] == "enabled", "thinking stays on for round 2"
    blocks = body["messages"][1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": rec_text, "signature": rec_sig}
    assert [b["type"] for b in blocks] == ["thinking", "tool_use"]
    assert "x-turnstile-dropped" not in headers


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_forgotten_thinking_turns_thinking_off_and_says_so(
    stream: bool, upstream: UpstreamStandin, oai: openai.OpenAI, memory: ThinkingMemory, db_path: Any
) -> None:
    first, second = recordings.anthropic_thinking(stream)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    _, msg1 = _create(oai, CLAUDE, [SYSTEM, QUESTION], stream)
    memory.clear()  # evicted (size or TTL)
    result = {"role": "tool", "tool_call_id": _tool_calls(msg1)[0]["id"], "content": "40 C"}

    headers, msg2 = _create(oai, CLAUDE, [SYSTEM, QUESTION, _hand_built(msg1), result], stream)

    assert _field(msg2, "content") == recorded_text(second, "anthropic_messages")
    body = upstream.requests()[1].body
    assert "thinking" not in body or body["thinking"]["type"] == "disabled", "never an invalid request"
    assert headers["x-turnstile-dropped"] == "thinking"
    row = transcript_row(db_path, headers["x-turnstile-request-id"])
    notes = [
        r for r in json.loads(row["repairs"]) if r.get("kind") == "dropped" and r.get("field") == "thinking"
    ]
    assert len(notes) == 1 and "thinking disabled" in notes[0]["reason"]


def test_unsigned_reasoning_sent_back_is_restored_not_switched_off(
    upstream: UpstreamStandin, oai: openai.OpenAI, memory: ThinkingMemory
) -> None:
    first, second = recordings.anthropic_thinking(False)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    rec_text, rec_sig = _recorded_thinking(first)
    _, msg1 = _create(oai, CLAUDE, [SYSTEM, QUESTION], False)
    back = {**_hand_built(msg1), "reasoning_content": _field(msg1, "reasoning_content")}  # DeepSeek-style
    result = {"role": "tool", "tool_call_id": _tool_calls(msg1)[0]["id"], "content": "40 C"}

    headers, _ = _create(oai, CLAUDE, [SYSTEM, QUESTION, back, result], False)

    blocks = upstream.requests()[1].body["messages"][1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": rec_text, "signature": rec_sig}
    assert "x-turnstile-dropped" not in headers


def _gemini_thinking(stream: bool) -> tuple[recordings.Exchange, ...]:
    name = "thinking-streaming" if stream else "thinking"
    return recordings.govcr(f"{recordings.FANTASY}/TestGoogleThinking/gemini-3-pro-preview/{name}.yaml")


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
@pytest.mark.parametrize("echo", ["sent_back", "dropped"])
def test_openai_client_tool_loop_on_gemini_3_sends_the_thought_signature_back(
    echo: str, stream: bool, upstream: UpstreamStandin, oai: openai.OpenAI, memory: ThinkingMemory
) -> None:
    first, second = _gemini_thinking(stream)[:2]
    upstream.script(replay(first, api="gemini"), replay(second, api="gemini"))
    signed = [c.signature for c in recorded_calls(first, "gemini") if c.signature]
    assert signed, "the recording signs its function call"

    _, msg1 = _create(oai, GEMINI, [SYSTEM, QUESTION], stream)
    calls = _tool_calls(msg1)
    back = msg1 if echo == "sent_back" else _hand_built(msg1)
    result = {"role": "tool", "tool_call_id": calls[0]["id"], "content": "40 C"}
    _, msg2 = _create(oai, GEMINI, [SYSTEM, QUESTION, back, result], stream)

    assert _field(msg2, "content") == recorded_text(second, "gemini")
    contents = upstream.requests()[1].body["contents"]
    model_turn = next(c for c in contents if c["role"] == "model")
    sent = [p.get("thoughtSignature") for p in model_turn["parts"] if "functionCall" in p]
    assert sent == signed, "the real thoughtSignature goes back (not the skip sentinel)"


def test_anthropic_client_is_unaffected(upstream: UpstreamStandin, ant: Any, memory: ThinkingMemory) -> None:
    """An Anthropic client that echoes its blocks gets them sent as they are (nothing restored)."""
    first, second = recordings.anthropic_thinking(False)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    history = [user("anthropic", "What's the weather in Florence, Italy?")]
    kw: dict[str, Any] = {
        "model": CLAUDE,
        "stream": False,
        "tools": [{**t["function"]} for t in WEATHER],
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 4000},
    }
    turn1 = ask("anthropic", ant, messages=history, **kw)
    turn2 = ask(
        "anthropic",
        ant,
        messages=[*history, turn1.echo, *tool_results("anthropic", [(turn1.calls[0]["id"], "40 C", False)])],
        **kw,
    )
    assert turn2.error is None and turn2.text == recorded_text(second, "anthropic_messages")
