"""Anthropic message threads through the gateway (issue 14 item 6): the official SDK's
``beta.messages.tool_runner`` with its defaults threads the loop (``thread: create``, then
``thread: continue`` with only the tool result, no ``system`` or ``tools``); the gateway holds
the thread in its session log, so the upstream — Anthropic Messages or OpenAI Chat — gets the
whole conversation on round 2, and the answer ids are the thread's. With threads off
(``sessions.threads``) the refusal carries ``error_code: thread_unsupported_request`` and the
SDK falls back to sending the whole history itself; an unknown thread is
``thread_not_found``, on which the SDK replays under a new thread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from anthropic import beta_tool
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.upstream import UpstreamStandin, replay

TARGETS = {"an": "anthropic_messages", "oa": "openai_chat"}
SYSTEM = "You answer weather questions with the tool."
QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."


@beta_tool
def get_weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city's name
    """
    return f"sunny in {city}"


@pytest.fixture
def sent() -> list[dict[str, Any]]:
    """The bodies the SDK sent to the gateway, in order."""
    return []


@pytest.fixture
def client(gateway_url: str, sent: list[dict[str, Any]]) -> Iterator[anthropic.Anthropic]:
    """The official Anthropic SDK, unchanged, pointed at the gateway; every request body it
    sends is kept in ``sent``."""

    def keep(request: httpx2.Request) -> None:
        sent.append({"body": json.loads(request.content), "beta": request.headers.get("anthropic-beta", "")})

    http = httpx2.Client(event_hooks={"request": [keep]}, timeout=15)
    sdk = anthropic.Anthropic(
        base_url=gateway_url, api_key="sk-ant-client-key", max_retries=0, http_client=http
    )
    yield sdk
    sdk.close()


@pytest.fixture
def threads_off(wire_servers: dict[str, Any]) -> Iterator[None]:
    """The running gateway with ``sessions.threads: false`` for one test."""
    config = wire_servers["gateway"].app.state.gateway.config
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(config.sessions, "threads", False)
        yield


def _script_loop(upstream: UpstreamStandin, api: str, stream: bool = False) -> None:
    call = Call("call_w1" if api == "openai_chat" else "toolu_w1", "get_weather", '{"city": "Paris"}')
    upstream.script(
        replay(tool_call_answer(api, [call], stream=stream), api=api),
        replay(text_answer(api, ANSWER, stream=stream), api=api),
    )


def _run(client: anthropic.Anthropic, model: str, stream: bool = False) -> list[Any]:
    """The SDK's tool runner with its defaults (threaded), whole or streamed: its messages."""
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": 256,
        "system": SYSTEM,
        "tools": [get_weather],
        "messages": [{"role": "user", "content": QUESTION}],
    }
    if stream:
        return [s.get_final_message() for s in client.beta.messages.tool_runner(**params, stream=True)]
    return list(client.beta.messages.tool_runner(**params))


def _roles_and_kinds(api: str, body: dict[str, Any]) -> list[str]:
    """The upstream conversation as ``role:kind`` items (system left out)."""
    if api == "openai_chat":
        out = []
        for m in body["messages"]:
            if m["role"] == "system":
                continue
            out.append(f"{m['role']}:{'tool_calls' if m.get('tool_calls') else 'text'}")
        return out
    out = []
    for m in body["messages"]:
        content = m["content"]
        kinds = ",".join(b["type"] for b in content) if isinstance(content, list) else "text"
        out.append(f"{m['role']}:{kinds}")
    return out


def _system_of(api: str, body: dict[str, Any]) -> str:
    if api == "openai_chat":
        return "".join(m["content"] for m in body["messages"] if m["role"] == "system")
    system = body.get("system")
    return system if isinstance(system, str) else "".join(b["text"] for b in system or [])


def _tool_names(api: str, body: dict[str, Any]) -> list[str]:
    if api == "openai_chat":
        return [t["function"]["name"] for t in body.get("tools", [])]
    return [t["name"] for t in body.get("tools", [])]


WHOLE_HISTORY = {
    "anthropic_messages": ["user:text", "assistant:tool_use", "user:tool_result"],
    "openai_chat": ["user:text", "assistant:tool_calls", "tool:text"],
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("model", sorted(TARGETS))
def test_the_default_tool_runner_threads_a_two_round_loop_and_the_upstream_gets_the_whole_history(
    model: str,
    stream: bool,
    upstream: UpstreamStandin,
    client: anthropic.Anthropic,
    sent: list[dict[str, Any]],
) -> None:
    api = TARGETS[model]
    _script_loop(upstream, api, stream)
    first, last = _run(client, model, stream)
    assert last.content[0].text == ANSWER
    # what the SDK sent: a create with everything, then a continue with only the tool result
    create, cont = (s["body"] for s in sent)
    assert create["thread"] == {"type": "create"}
    assert "message-threads-2026-08-12" in sent[0]["beta"]
    assert cont["thread"] == {"type": "continue", "previous_message_id": first.id}
    assert "system" not in cont and "tools" not in cont
    assert [b["type"] for m in cont["messages"] for b in m["content"]] == ["tool_result"]
    assert first.id.startswith("msg_") and last.id.startswith("msg_") and first.id != last.id
    # what the upstream received: round 2 carries the whole conversation, system and tools
    one, two = upstream.requests(api)
    assert _roles_and_kinds(api, one.body) == ["user:text"]
    assert _roles_and_kinds(api, two.body) == WHOLE_HISTORY[api]
    for body in (one.body, two.body):
        assert _system_of(api, body) == SYSTEM
        assert _tool_names(api, body) == ["get_weather"]
        assert "thread" not in body
    assert "message-threads" not in two.headers.get("anthropic-beta", ""), "the gateway holds the thread"


@pytest.mark.parametrize("model", sorted(TARGETS))
def test_with_threads_off_the_sdk_falls_back_to_the_whole_history_by_itself(
    model: str,
    upstream: UpstreamStandin,
    client: anthropic.Anthropic,
    sent: list[dict[str, Any]],
    threads_off: None,
) -> None:
    api = TARGETS[model]
    _script_loop(upstream, api)
    *_, last = _run(client, model)
    assert last.content[0].text == ANSWER
    # refused create, the same turn resent unthreaded, then round 2 unthreaded with everything
    refused, *unthreaded = (s["body"] for s in sent)
    assert refused["thread"] == {"type": "create"}
    assert len(unthreaded) == 2 and all("thread" not in b for b in unthreaded)
    assert [m["role"] for m in unthreaded[1]["messages"]] == ["user", "assistant", "user"]
    one, two = upstream.requests(api)
    assert _roles_and_kinds(api, one.body) == ["user:text"]
    assert _roles_and_kinds(api, two.body) == WHOLE_HISTORY[api]


def test_threads_off_refuses_with_the_error_code_the_sdk_falls_back_on(
    gateway_url: str, upstream: UpstreamStandin, threads_off: None
) -> None:
    body = {"model": "an", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(f"{gateway_url}/v1/messages", json={**body, "thread": {"type": "create"}}, timeout=10)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["details"] == {"error_code": "thread_unsupported_request"}
    assert "sessions.threads" in error["message"]
    assert upstream.requests() == []


def test_an_unknown_thread_is_thread_not_found_and_the_sdk_replays_under_a_new_thread(
    gateway_url: str, upstream: UpstreamStandin, client: anthropic.Anthropic, sent: list[dict[str, Any]]
) -> None:
    unknown = {"type": "continue", "previous_message_id": "msg_" + "0" * 32}
    body = {
        "model": "an",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
        "thread": unknown,
    }
    r = httpx.post(f"{gateway_url}/v1/messages", json=body, timeout=10)
    assert r.status_code == 404
    assert r.json()["error"]["type"] == "not_found_error"
    assert r.json()["error"]["details"] == {"error_code": "thread_not_found"}
    assert "msg_" + "0" * 32 in r.json()["error"]["message"]
    assert upstream.requests() == []


def test_the_sdk_replays_the_whole_history_under_a_new_thread_after_thread_not_found(
    upstream: UpstreamStandin, client: anthropic.Anthropic, sent: list[dict[str, Any]]
) -> None:
    api = "anthropic_messages"
    upstream.script(
        replay(text_answer(api, "First.", stream=False), api=api),
        replay(text_answer(api, "Second.", stream=False), api=api),
    )
    thread = client.beta.messages.thread(model="an", max_tokens=64, system=SYSTEM)
    thread.send({"role": "user", "content": "One?"})
    lost = "msg_" + "1" * 32
    thread._state._thread.previous_message_id = lost  # type: ignore[union-attr]  # as if the server lost it
    second = thread.send({"role": "user", "content": "Two?"})
    assert second.content[0].text == "Second."
    cont, replayed = (s["body"] for s in sent[1:])
    assert cont["thread"] == {"type": "continue", "previous_message_id": lost}
    assert replayed["thread"] == {"type": "create"}
    assert [m["role"] for m in replayed["messages"]] == ["user", "assistant", "user"]
    _, two = upstream.requests(api)
    assert [m["role"] for m in two.body["messages"]] == ["user", "assistant", "user"]
    assert thread.previous_message_id == second.id


def test_a_continued_thread_streams_under_its_own_id(
    gateway_url: str, upstream: UpstreamStandin, client: anthropic.Anthropic
) -> None:
    api = "anthropic_messages"
    upstream.script(
        replay(text_answer(api, "First.", stream=False), api=api),
        replay(text_answer(api, "Second.", stream=True), api=api),
    )
    thread = client.beta.messages.thread(model="an", max_tokens=64, system=SYSTEM)
    first = thread.send({"role": "user", "content": "One?"})
    with thread.stream({"role": "user", "content": "Two?"}) as stream:
        second = stream.get_final_message()
    assert second.content[0].text == "Second." and second.id != first.id
    assert thread.previous_message_id == second.id
    _, two = upstream.requests(api)
    assert [m["role"] for m in two.body["messages"]] == ["user", "assistant", "user"]
    assert _system_of(api, two.body) == SYSTEM


def test_a_session_bound_turn_refuses_a_thread_and_the_sdk_keeps_the_session(
    upstream: UpstreamStandin, client: anthropic.Anthropic, sent: list[dict[str, Any]]
) -> None:
    api = "anthropic_messages"
    _script_loop(upstream, api)
    runner = client.beta.messages.tool_runner(
        model="an",
        max_tokens=256,
        system=SYSTEM,
        tools=[get_weather],
        messages=[{"role": "user", "content": QUESTION}],
        extra_headers={"x-turnstile-session": "wire-thread-session"},
    )
    *_, last = list(runner)
    assert last.content[0].text == ANSWER
    assert sent[0]["body"]["thread"] == {"type": "create"}
    assert all("thread" not in s["body"] for s in sent[1:])
    _, two = upstream.requests(api)
    assert _roles_and_kinds(api, two.body) == WHOLE_HISTORY[api]


def test_a_system_message_inside_messages_makes_the_sdk_send_the_loop_unthreaded(
    upstream: UpstreamStandin, client: anthropic.Anthropic, sent: list[dict[str, Any]]
) -> None:
    api = "anthropic_messages"
    _script_loop(upstream, api)
    messages: list[Any] = [
        {"role": "user", "content": QUESTION},
        {"role": "system", "content": "Answer in one sentence."},
    ]
    runner = client.beta.messages.tool_runner(
        model="an", max_tokens=256, system=SYSTEM, tools=[get_weather], messages=messages
    )
    *_, last = list(runner)
    assert last.content[0].text == ANSWER
    assert sent[0]["body"]["thread"] == {"type": "create"}
    assert all("thread" not in s["body"] for s in sent[1:]), "refused, then unthreaded"
    one, two = upstream.requests(api)
    assert len(two.body["messages"]) == len(one.body["messages"]) + 2, "round 2 carries the whole history"
