"""An OpenAI Responses upstream (``api: openai_responses``) behind both client dialects: the
encrypted reasoning round trip, truncation, failures and what has no slot.

Recording: charmbracelet/fantasy TestOpenAIResponsesWithSummaryThinking/openai-gpt-5 (``store:
false``, ``include: ["reasoning.encrypted_content"]``: a reasoning item with summary and
``encrypted_content`` + a ``weather`` call, then reasoning + the answer). The stand-in accepts
``encrypted_content`` only as it issued it, for the same model (:mod:`standins.responses_rules`).
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from standins import recordings
from standins.drive import ADD_MULTIPLY, ask, tool_results, user
from standins.responses_answers import answer, failed_body, failed_stream
from standins.tool_answers import Call
from standins.topology import MATRIX, RESPONSES_REASONING, RS_FALLBACK
from standins.upstream import UpstreamStandin, http_error, replay
from standins.wirekit import recorded_calls, recorded_text, responses_output

RS = "openai_responses"
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
REASONER = "rs-gpt-5"  # deployment of the model the recording came from
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])


def _recorded_reasoning(ex: recordings.Exchange) -> list[dict[str, Any]]:
    return [i for i in responses_output(ex) if i["type"] == "reasoning"]


def _turn1(ant: Any, upstream: UpstreamStandin, stream: bool) -> tuple[Any, recordings.Exchange, list[Any]]:
    first = recordings.responses_thinking(stream)[0]
    upstream.script(replay(first, api=RS))
    history = [user("anthropic", "What's the weather in Florence, Italy?")]
    turn = ask(
        "anthropic",
        ant,
        model=REASONER,
        stream=stream,
        messages=history,
        tools=WEATHER,
        max_tokens=4096,
        system="You are a helpful assistant",
        thinking=THINKING,
    )
    assert turn.error is None, turn.error
    return turn, first, history


@STREAMS
def test_encrypted_reasoning_round_trips_to_the_deployment_that_made_it(
    stream: bool, upstream: UpstreamStandin, ant: Any
) -> None:
    turn1, first, history = _turn1(ant, upstream, stream)
    reasoning = _recorded_reasoning(first)
    assert len(reasoning) == 1
    assert [t["thinking"] for t in turn1.thinking] == [reasoning[0]["summary"][0]["text"]]
    assert turn1.thinking[0]["signature"], "the client must get the encrypted reasoning to echo"
    assert turn1.stop == "tool_use"
    assert [c["name"] for c in turn1.calls] == ["weather"]
    sent1 = upstream.requests()[0].body
    assert sent1["store"] is False
    assert sent1["include"] == ["reasoning.encrypted_content"]
    assert sent1["reasoning"] == {"effort": "low", "summary": "auto"}  # budget 4000 tokens -> low
    assert sent1["instructions"] == "You are a helpful assistant"

    second = recordings.responses_thinking(stream)[1]
    upstream.script(replay(second, api=RS))
    call_id = turn1.calls[0]["id"]
    history2 = [*history, turn1.echo, *tool_results("anthropic", [(call_id, "40 C", False)])]
    turn2 = ask(
        "anthropic",
        ant,
        model=REASONER,
        stream=stream,
        messages=history2,
        tools=WEATHER,
        max_tokens=4096,
        system="You are a helpful assistant",
        thinking=THINKING,
    )

    assert turn2.error is None, turn2.error
    assert turn2.text == recorded_text(second, RS)
    items = upstream.requests()[1].body["input"]
    kinds = [i.get("type", "message") for i in items]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    sent_reasoning = items[1]
    assert sent_reasoning["encrypted_content"] == reasoning[0]["encrypted_content"], "byte-identical"
    assert sent_reasoning["summary"] == [{"type": "summary_text", "text": reasoning[0]["summary"][0]["text"]}]
    assert items[2]["call_id"] == recorded_calls(first, RS)[0].id == items[3]["call_id"]


@pytest.mark.parametrize("target", ["an", "oa", "rs-gpt-5-mini"])
def test_encrypted_reasoning_never_goes_to_another_api_or_model(
    target: str, upstream: UpstreamStandin, ant: Any
) -> None:
    turn1, first, history = _turn1(ant, upstream, stream=False)
    signature = _recorded_reasoning(first)[0]["encrypted_content"]
    api = {"an": "anthropic_messages", "oa": "openai_chat"}.get(target, RS)
    if api == RS:
        upstream.script(replay(recordings.responses_thinking(False)[1], api=RS))
    else:
        upstream.script(replay(recordings.common(api, "simple", False)[0], api=api))
    call_id = turn1.calls[0]["id"]
    history2 = [*history, turn1.echo, *tool_results("anthropic", [(call_id, "40 C", False)])]
    turn2 = ask(
        "anthropic", ant, model=target, stream=False, messages=history2, tools=WEATHER, max_tokens=4096
    )

    assert turn2.error is None, turn2.error
    sent = upstream.requests()[1]
    assert sent.api == api
    assert signature not in sent.raw.decode(), "encrypted reasoning left for another API or model"
    assert "gAAAA" not in sent.raw.decode()
    assert target in RESPONSES_REASONING or api != RS


@STREAMS
def test_openai_client_tool_loop_over_a_reasoning_model(
    stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    first, second = recordings.responses_thinking(stream)
    upstream.script(replay(first, api=RS), replay(second, api=RS))
    history = [user("openai", "What's the weather in Florence, Italy?")]
    turn1 = ask(
        "openai", oai, model=REASONER, stream=stream, messages=history, tools=WEATHER, reasoning_effort="high"
    )
    assert turn1.error is None, turn1.error
    assert turn1.stop == "tool_use"
    rec = recorded_calls(first, RS)
    assert [(c["id"], c["raw"]) for c in turn1.calls] == [(r.id, r.raw) for r in rec]
    assert upstream.requests()[0].body["reasoning"] == {"effort": "high", "summary": "auto"}

    history2 = [*history, turn1.echo, *tool_results("openai", [(rec[0].id, "40 C", False)])]
    turn2 = ask("openai", oai, model=REASONER, stream=stream, messages=history2, tools=WEATHER)
    assert turn2.error is None, turn2.error
    assert turn2.text == recorded_text(second, RS)
    items = upstream.requests()[1].body["input"]
    # the hand-built assistant message has no encrypted reasoning: the gateway's memory
    # (keyed by the call id) puts the reasoning item back, byte-identical, before the call
    kinds = [i.get("type", "message") for i in items]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    assert items[1]["encrypted_content"] == _recorded_reasoning(first)[0]["encrypted_content"]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@STREAMS
def test_incomplete_for_max_output_tokens_is_length_and_the_cut_call_is_withheld(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    calls = [Call("call_whole_1", "add", '{"a":2,"b":3}'), Call("call_cut_2", "multiply", '{"a":2,"b"')]
    upstream.script(replay(answer(calls, stream=stream, incomplete=True, output_tokens=64), api=RS))
    client = oai if dialect == "openai" else ant
    turn = ask(
        dialect,
        client,
        model=MATRIX[RS][0],
        stream=stream,
        messages=[user(dialect, "Add and multiply 2 and 3")],
        tools=ADD_MULTIPLY,
        max_tokens=64,
    )
    assert turn.error is None, turn.error
    assert turn.stop == "length"
    assert "call_cut_2" not in [c["id"] for c in turn.calls], "a cut call must never reach the client"
    assert upstream.requests()[0].body["max_output_tokens"] == 64


@STREAMS
def test_rate_limited_response_falls_back_to_the_next_deployment(
    stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    limited = (
        failed_stream("rate_limit_exceeded", "Rate limit reached for gpt-4o-mini")
        if stream
        else failed_body("rate_limit_exceeded", "Rate limit reached for gpt-4o-mini")
    )
    backup = recordings.common("openai_chat", "simple", stream)[0]
    upstream.script(replay(limited, api=RS), replay(backup, api="openai_chat"))
    turn = ask("openai", oai, model=RS_FALLBACK, stream=stream, messages=[user("openai", "Say hi")])
    assert turn.error is None, turn.error
    assert {k.lower(): v for k, v in turn.headers.items()}["x-turnstile-deployment"] == "oa-backup"
    assert turn.text == recorded_text(backup, "openai_chat")


@STREAMS
def test_http_429_from_the_responses_upstream_falls_back_like_chat(
    stream: bool, upstream: UpstreamStandin, ant: Any
) -> None:
    body = {
        "error": {
            "message": "Rate limit reached for gpt-4o-mini",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    backup = recordings.common("openai_chat", "simple", stream)[0]
    upstream.script(http_error(429, body, api=RS, retry_after="1"), replay(backup, api="openai_chat"))
    turn = ask("anthropic", ant, model=RS_FALLBACK, stream=stream, messages=[user("anthropic", "Say hi")])
    assert turn.error is None, turn.error
    assert {k.lower(): v for k, v in turn.headers.items()}["x-turnstile-deployment"] == "oa-backup"
    assert [r.api for r in upstream.requests()] == [RS, "openai_chat"]


def test_context_overflow_in_a_stream_is_a_400_in_the_client_dialect(
    upstream: UpstreamStandin, ant: Any
) -> None:
    upstream.script(
        replay(
            failed_stream("context_length_exceeded", "Your input exceeds the context window of this model."),
            api=RS,
        )
    )
    with pytest.raises(anthropic.BadRequestError) as info:
        ask("anthropic", ant, model=MATRIX[RS][0], stream=True, messages=[user("anthropic", "long")])
    assert "context_length_exceeded" in str(info.value)


def test_failure_after_output_started_ends_the_stream_with_an_error(
    upstream: UpstreamStandin, oai: Any
) -> None:
    upstream.script(
        replay(failed_stream("server_error", "The server had an error", after_text="Hel"), api=RS)
    )
    turn = ask("openai", oai, model=MATRIX[RS][0], stream=True, messages=[user("openai", "Say hello")])
    assert turn.text == "Hel"
    assert turn.error is not None
    assert "server_error" in str(turn.error)


def test_stop_sequences_are_refused_by_name(upstream: UpstreamStandin, oai: Any) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        ask("openai", oai, model=MATRIX[RS][0], stream=False, messages=[user("openai", "count")], stop=["5"])
    assert "stop" in str(info.value)
    assert upstream.requests() == [], "nothing may go upstream"


def test_forged_encrypted_reasoning_is_refused_by_the_upstream(upstream: UpstreamStandin, ant: Any) -> None:
    from gateway.edges.signatures import wrap_signature
    from gateway.schema import Provenance

    forged = wrap_signature("gAAAAforged", Provenance(api=RS, provider="openai", model="gpt-5"))
    history = [
        user("anthropic", "What's the weather in Florence, Italy?"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": forged},
                {"type": "text", "text": "ok"},
            ],
        },
        user("anthropic", "and now?"),
    ]
    with pytest.raises(anthropic.BadRequestError) as info:
        ask("anthropic", ant, model=REASONER, stream=False, messages=history, max_tokens=4096)
    assert "could not be verified" in str(info.value)
    assert upstream.requests()[0].body["input"][1]["encrypted_content"] == "gAAAAforged"
