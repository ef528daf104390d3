"""An OpenAI Chat client's history reaches every upstream without losing what it holds (issue 14,
break-test bt14 findings 7, 8, 19): an assistant ``refusal``, tool-call arguments that are not a
JSON object, a user message without content."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

USER: Any = {"role": "user", "content": "q"}
MORE: Any = {"role": "user", "content": "more"}


def _post(gateway_url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(gateway_url + "/v1/chat/completions", json=body, timeout=10)


def _sent(upstream: UpstreamStandin) -> dict[str, Any]:
    (got,) = upstream.requests()
    return got.body  # type: ignore[no-any-return]


@pytest.mark.parametrize("content", ["C1", None])
def test_an_assistant_refusal_reaches_openai_chat_as_its_own_key(
    content: str | None, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    assistant = {"role": "assistant", "content": content, "refusal": "R1"}
    r = _post(gateway_url, {"model": MATRIX["openai_chat"][0], "messages": [USER, assistant, MORE]})
    assert r.status_code == 200, r.text
    sent = _sent(upstream)["messages"][1]
    assert sent["refusal"] == "R1" and sent.get("content") == content


def test_an_assistant_refusal_beside_content_reaches_another_wire_api_as_text(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    assistant = {"role": "assistant", "content": "C1", "refusal": "R1"}
    r = _post(gateway_url, {"model": MATRIX["anthropic_messages"][0], "messages": [USER, assistant, MORE]})
    assert r.status_code == 200, r.text
    blocks = _sent(upstream)["messages"][1]["content"]
    texts = [blocks] if isinstance(blocks, str) else [b["text"] for b in blocks]
    assert "".join(texts).count("C1") == 1 and "".join(texts).count("R1") == 1


def _call_history(arguments: str) -> list[Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]


TOOLS: Any = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("arguments", ["not json", "[1,2]", '"str"', '{"a":1} trailing'])
@pytest.mark.parametrize("api", ["anthropic_messages", "gemini"])
def test_tool_call_arguments_that_are_not_an_object_are_refused_by_name_where_the_target_needs_one(
    api: str, arguments: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    r = _post(gateway_url, {"model": MATRIX[api][0], "messages": _call_history(arguments), "tools": TOOLS})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == "messages[1].tool_calls[0].function.arguments"
    assert api in error["message"]
    assert upstream.requests() == []


@pytest.mark.parametrize("api", ["openai_chat", "openai_responses"])
def test_tool_call_arguments_that_are_not_an_object_reach_openai_as_sent(
    api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer(api, "ok", stream=False)))
    r = _post(gateway_url, {"model": MATRIX[api][0], "messages": _call_history("[1,2]"), "tools": TOOLS})
    assert r.status_code == 200, r.text
    assert "[1,2]" in str(_sent(upstream))


def test_empty_tool_call_arguments_are_no_arguments_toward_anthropic(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    model = MATRIX["anthropic_messages"][0]
    r = _post(gateway_url, {"model": model, "messages": _call_history(""), "tools": TOOLS})
    assert r.status_code == 200, r.text
    assert _sent(upstream)["messages"][1]["content"][0]["input"] == {}


@pytest.mark.parametrize("api", ["anthropic_messages", "openai_chat"])
def test_a_user_message_without_content_is_refused_by_name(
    api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    r = _post(gateway_url, {"model": MATRIX[api][0], "messages": [{"role": "user", "content": None}]})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "messages[0].content"
    assert upstream.requests() == []


EMPTY_TURN: Any = [USER, {"role": "assistant", "content": ""}, MORE]


def test_an_empty_assistant_turn_reaches_openai_chat_as_sent(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    r = _post(gateway_url, {"model": MATRIX["openai_chat"][0], "messages": EMPTY_TURN})
    assert r.status_code == 200 and "x-turnstile-dropped" not in r.headers
    assert [m["role"] for m in _sent(upstream)["messages"]] == ["user", "assistant", "user"]


@pytest.mark.parametrize("api", ["anthropic_messages", "gemini", "openai_responses"])
def test_an_empty_assistant_turn_removed_for_another_api_is_named(
    api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer(api, "ok", stream=False)))
    r = _post(gateway_url, {"model": MATRIX[api][0], "messages": EMPTY_TURN})
    assert r.status_code == 200, r.text
    assert r.headers["x-turnstile-dropped"] == "messages[1]"


def test_store_false_and_service_tier_auto_ask_nothing_of_another_wire_api(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    body = {
        "model": MATRIX["anthropic_messages"][0],
        "messages": [USER],
        "store": False,
        "service_tier": "auto",
    }
    r = _post(gateway_url, body)
    assert r.status_code == 200 and "x-turnstile-dropped" not in r.headers
