"""Session-bound turns through the real gateway, driven by the official SDKs
(gateway/sessions/turns.py, issue 14 break-test H2 and M2).

* Twenty Chat turns sent at once on one ``x-turnstile-session``, each carrying only its own
  question, are held at the upstream stand-in until all twenty are in flight: each one's
  upstream context is its question alone (no other turn's unanswered question), and the turn
  after them continues from the first to finish.
* A turn carrying only a tool result (its call is in the session log, as a Responses- or
  thread-style client sends it) is accepted and goes upstream paired with its call; a result
  whose call is in neither the request nor the session is refused with the guards' 400 in the
  client's dialect, naming the id, and nothing reaches the upstream or the log.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import httpx
import openai
import pytest
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.upstream import Gate, UpstreamStandin, answering, held, replay

TURNS = 20
BOUND_S = 15.0
"""Every wait in these tests ends by then (a held answer, a client's answer)."""


def _session(sid: str) -> dict[str, Any]:
    return {"extra_headers": {"x-turnstile-session": sid}}


def _last_text(body: Any) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _echo(api: str, body: Any, stream: bool) -> Any:
    """Answer ``a-<question>``: which turn an answer belongs to stays visible in the log."""
    return text_answer(api, "a-" + _last_text(body), stream=stream)


def _log(gateway_url: str, sid: str) -> dict[str, Any]:
    got = httpx.get(f"{gateway_url}/v1/sessions/{sid}", timeout=10)
    assert got.status_code == 200, got.text
    return got.json()  # type: ignore[no-any-return]


def _text(entry: dict[str, Any]) -> str:
    content = entry["payload"]["message"]["content"]
    return "".join(p.get("text", "") for p in content)


def test_parallel_turns_on_one_session_never_see_each_others_questions(
    upstream: UpstreamStandin, oai: openai.OpenAI, gateway_url: str
) -> None:
    sid = "parallel-turns-1"
    gates = [Gate(timeout_s=BOUND_S) for _ in range(TURNS)]
    upstream.script(*(held(answering(_echo, api="openai_chat"), g) for g in gates))
    questions = [f"q{i}" for i in range(TURNS)]

    def ask(question: str) -> str:
        got = oai.chat.completions.create(
            model="oa", messages=[{"role": "user", "content": question}], **_session(sid)
        )
        return got.choices[0].message.content or ""

    with ThreadPoolExecutor(TURNS) as pool:
        answers = {question: pool.submit(ask, question) for question in questions}
        try:
            for g in gates:  # all twenty are in flight at the upstream at once
                assert g.waited.wait(BOUND_S)
            received = upstream.requests()
            for rec in received:
                assert rec.body["messages"] == [{"role": "user", "content": _last_text(rec.body)}]
            assert sorted(_last_text(r.body) for r in received) == sorted(questions)
            # one answer first, then the rest: the first to finish continues the session
            first = _last_text(received[7].body)
            gates[7].release()
            assert answers[first].result(BOUND_S) == "a-" + first
        finally:
            for g in gates:
                g.release()
        assert {q: f.result(BOUND_S) for q, f in answers.items()} == {q: "a-" + q for q in questions}

    upstream.script(answering(_echo, api="openai_chat"))
    oai.chat.completions.create(model="oa", messages=[{"role": "user", "content": "next"}], **_session(sid))
    assert upstream.requests()[-1].body["messages"] == [
        {"role": "user", "content": first},
        {"role": "assistant", "content": "a-" + first},
        {"role": "user", "content": "next"},
    ]
    log = _log(gateway_url, sid)
    assert [_text(e) for e in log["path"]] == [first, "a-" + first, "next", "a-next"]
    own = {e["id"]: e for e in log["entries"]}
    assert len(own) == 2 * TURNS + 2
    for e in own.values():  # every answer sits under its own question
        if _text(e).startswith("a-"):
            assert _text(own[e["parent_id"]]) == _text(e)[2:]


# ---------------------------------------------------------------------------- tool result only

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ANT_WEATHER = {
    "name": "weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def test_a_chat_turn_sending_only_a_tool_result_continues_from_the_session(
    upstream: UpstreamStandin, oai: openai.OpenAI, gateway_url: str
) -> None:
    sid = "tool-result-only-chat"
    upstream.script(
        replay(
            tool_call_answer("openai_chat", [Call("call_w1", "weather", '{"city":"Paris"}')], stream=False)
        ),
        replay(text_answer("openai_chat", "Sunny in Paris.", stream=False)),
    )
    first = oai.chat.completions.create(
        model="oa",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],  # type: ignore[list-item]
        **_session(sid),
    )
    (call,) = first.choices[0].message.tool_calls or []
    second = oai.chat.completions.create(
        model="oa",
        messages=[{"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}],
        tools=[WEATHER],  # type: ignore[list-item]
        **_session(sid),
    )
    assert second.choices[0].message.content == "Sunny in Paris."
    sent = upstream.requests()[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["id"] == call.id
    assert sent[2] == {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}
    assert [e["payload"]["message"]["role"] for e in _log(gateway_url, sid)["path"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_a_chat_tool_result_whose_call_is_nowhere_is_refused_naming_it(
    upstream: UpstreamStandin, oai: openai.OpenAI, gateway_url: str
) -> None:
    sid = "tool-result-orphan-chat"
    upstream.script(replay(text_answer("openai_chat", "Hello.", stream=False)))
    oai.chat.completions.create(model="oa", messages=[{"role": "user", "content": "hi"}], **_session(sid))
    with pytest.raises(openai.BadRequestError) as err:
        oai.chat.completions.create(
            model="oa",
            messages=[{"role": "tool", "tool_call_id": "call_nowhere", "content": "x"}],
            tools=[WEATHER],  # type: ignore[list-item]
            **_session(sid),
        )
    assert err.value.status_code == 400
    body: Any = err.value.body
    assert body["type"] == "invalid_request_error"
    assert "call_nowhere" in body["message"] and "messages[0]" in body["message"]
    assert len(upstream.requests()) == 1  # the first turn only
    assert len(_log(gateway_url, sid)["entries"]) == 2  # nothing of the refused turn


def test_an_anthropic_turn_sending_only_a_tool_result_continues_from_the_session(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, gateway_url: str
) -> None:
    sid = "tool-result-only-anthropic"
    upstream.script(
        replay(
            tool_call_answer(
                "anthropic_messages", [Call("toolu_w1", "weather", '{"city":"Oslo"}')], stream=False
            )
        ),
        replay(text_answer("anthropic_messages", "Cold in Oslo.", stream=False)),
    )
    first = ant.messages.create(
        model="an",
        max_tokens=256,
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[ANT_WEATHER],  # type: ignore[list-item]
        **_session(sid),
    )
    (use,) = [b for b in first.content if b.type == "tool_use"]
    second = ant.messages.create(
        model="an",
        max_tokens=256,
        messages=[
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "-3 C"}]}
        ],
        tools=[ANT_WEATHER],  # type: ignore[list-item]
        **_session(sid),
    )
    assert [b.text for b in second.content if b.type == "text"] == ["Cold in Oslo."]
    sent = upstream.requests()[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent[1]["content"]] == ["tool_use"] and sent[1]["content"][0]["id"] == use.id
    (result,) = sent[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == use.id


def test_an_anthropic_tool_result_whose_call_is_nowhere_is_refused_naming_it(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, gateway_url: str
) -> None:
    sid = "tool-result-orphan-anthropic"
    with pytest.raises(anthropic.BadRequestError) as err:
        ant.messages.create(
            model="an",
            max_tokens=256,
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_nowhere", "content": "x"}],
                }
            ],
            tools=[ANT_WEATHER],  # type: ignore[list-item]
            **_session(sid),
        )
    assert err.value.status_code == 400
    body: Any = err.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "toolu_nowhere" in body["error"]["message"] and "messages[0]" in body["error"]["message"]
    assert upstream.requests() == []
    assert _log(gateway_url, sid)["entries"] == []
