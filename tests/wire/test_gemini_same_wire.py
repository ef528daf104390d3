"""A Gemini client's own fields reach a Gemini upstream as it sent them (issue 14, the
fidelity rule's same-wire half; break-test findings item 8), and another wire API gets the
schema's translation: ``thinkingConfig``, ``responseJsonSchema`` / ``responseSchema``,
``functionResponse.response`` objects, unsigned ``thought`` parts of model turns, and
``functionCallingConfig.mode: VALIDATED``. Raw HTTP (the bytes the client chose), asserting what
reached the upstream stand-in."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

USER = {"role": "user", "parts": [{"text": "hello"}]}
TOOL = {
    "functionDeclarations": [
        {
            "name": "weather",
            "description": "The weather of a city.",
            "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
}


def _post(gateway_url: str, target: str, body: dict[str, Any]) -> httpx.Response:
    name, _ = MATRIX[target]
    return httpx.post(
        f"{gateway_url}/v1beta/models/{name}:generateContent",
        json=body,
        headers={"x-goog-api-key": "gemini-client-key"},
        timeout=15,
    )


def _ask(upstream: UpstreamStandin, gateway_url: str, target: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` to the ``target`` model; the body the upstream got. No field is named
    dropped."""
    upstream.script(replay(text_answer(target, "hi", stream=False)))
    resp = _post(gateway_url, target, body)
    assert resp.status_code == 200, resp.text
    assert "x-turnstile-dropped" not in resp.headers
    sent = upstream.requests()
    assert len(sent) == 1
    return sent[0].body  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "cfg",
    [
        {"thinkingLevel": "LOW", "includeThoughts": False},
        {"thinkingLevel": "HIGH"},
        {"thinkingBudget": -1},
        {"thinkingBudget": 512, "includeThoughts": False},
        {"includeThoughts": False},
    ],
    ids=["level-low-no-thoughts", "level-high", "dynamic-budget", "budget-no-thoughts", "no-thoughts"],
)
def test_thinking_config_reaches_a_gemini_upstream_as_sent(
    cfg: dict[str, Any], upstream: UpstreamStandin, gateway_url: str
) -> None:
    body = _ask(
        upstream, gateway_url, "gemini", {"contents": [USER], "generationConfig": {"thinkingConfig": cfg}}
    )

    assert body["generationConfig"]["thinkingConfig"] == cfg


def test_thinking_level_is_an_effort_toward_anthropic(upstream: UpstreamStandin, gateway_url: str) -> None:
    cfg = {"thinkingLevel": "LOW", "includeThoughts": True}
    body = _ask(
        upstream,
        gateway_url,
        "anthropic_messages",
        {"contents": [USER], "generationConfig": {"thinkingConfig": cfg, "maxOutputTokens": 4000}},
    )

    assert "thinkingConfig" not in str(body)
    assert body.get("thinking", {}).get("type") in ("enabled", "adaptive"), body


def test_response_json_schema_reaches_a_gemini_upstream_in_its_own_slot(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    schema = {
        "type": "object",
        "$defs": {"city": {"type": "string", "minLength": 1}},
        "properties": {"city": {"$ref": "#/$defs/city"}, "temp": {"type": ["number", "null"]}},
        "required": ["city", "temp"],
        "additionalProperties": False,
    }
    gen = {"responseMimeType": "application/json", "responseJsonSchema": schema}

    body = _ask(upstream, gateway_url, "gemini", {"contents": [USER], "generationConfig": gen})

    assert body["generationConfig"]["responseJsonSchema"] == schema
    assert "responseSchema" not in body["generationConfig"]
    assert body["generationConfig"]["responseMimeType"] == "application/json"


def test_response_schema_keeps_its_property_ordering_to_a_gemini_upstream(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"b": {"type": "STRING"}, "a": {"type": "INTEGER", "nullable": True}},
        "required": ["b"],
        "propertyOrdering": ["a", "b"],
    }
    gen = {"responseMimeType": "application/json", "responseSchema": schema}

    body = _ask(upstream, gateway_url, "gemini", {"contents": [USER], "generationConfig": gen})

    assert body["generationConfig"]["responseSchema"] == schema
    assert "responseJsonSchema" not in body["generationConfig"]


def test_response_json_schema_is_translated_toward_openai_chat(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    gen = {"responseMimeType": "application/json", "responseJsonSchema": schema}

    body = _ask(upstream, gateway_url, "openai_chat", {"contents": [USER], "generationConfig": gen})

    assert body["response_format"]["json_schema"]["schema"]["properties"] == schema["properties"]


def _tool_history(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "parts": [{"text": "weather in Paris?"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"id": "fc-1", "name": "weather", "args": {"city": "Paris"}}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "fc-1", "name": "weather", "response": response}}],
        },
    ]


@pytest.mark.parametrize(
    "response",
    [{"temp": 21}, {"output": {"temp": 21}}, {"output": "21 C"}, {"error": "no such city"}],
    ids=["object", "output-object", "output-text", "error-text"],
)
def test_function_response_object_reaches_a_gemini_upstream_as_sent(
    response: dict[str, Any], upstream: UpstreamStandin, gateway_url: str
) -> None:
    body = _ask(upstream, gateway_url, "gemini", {"contents": _tool_history(response), "tools": [TOOL]})

    parts = [p for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    assert [p["functionResponse"]["response"] for p in parts] == [response]


def test_function_response_object_is_its_json_toward_openai_chat(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    body = _ask(
        upstream, gateway_url, "openai_chat", {"contents": _tool_history({"temp": 21}), "tools": [TOOL]}
    )

    tool_msgs = [m for m in body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ['{"temp":21}']


def test_unsigned_thought_parts_of_a_model_turn_reach_a_gemini_upstream(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    contents = [
        {"role": "user", "parts": [{"text": "2+2?"}]},
        {"role": "model", "parts": [{"text": "Adding two and two.", "thought": True}, {"text": "4"}]},
        {"role": "user", "parts": [{"text": "and 3+3?"}]},
    ]

    body = _ask(upstream, gateway_url, "gemini", {"contents": contents})

    model = next(c for c in body["contents"] if c["role"] == "model")
    assert model["parts"] == [{"text": "Adding two and two.", "thought": True}, {"text": "4"}]


def test_validated_mode_reaches_a_gemini_upstream_with_nothing_named_dropped(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    req = {
        "contents": [USER],
        "tools": [TOOL],
        "toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}},
    }

    body = _ask(upstream, gateway_url, "gemini", req)

    assert body["toolConfig"]["functionCallingConfig"] == {"mode": "VALIDATED"}
    assert "strict" not in str(body["tools"])


def test_validated_mode_makes_the_tools_strict_toward_openai_chat(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    req = {
        "contents": [USER],
        "tools": [TOOL],
        "toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}},
    }

    body = _ask(upstream, gateway_url, "openai_chat", req)

    assert [t["function"].get("strict") for t in body["tools"]] == [True]
    assert body.get("tool_choice", "auto") == "auto"


def test_a_streamed_turn_sends_the_clients_own_forms_too(upstream: UpstreamStandin, gateway_url: str) -> None:
    name, _ = MATRIX["gemini"]
    upstream.script(replay(text_answer("gemini", "hi", stream=True)))
    cfg = {"thinkingLevel": "LOW", "includeThoughts": False}
    req = {"contents": [USER], "generationConfig": {"thinkingConfig": cfg}}

    resp = httpx.post(
        f"{gateway_url}/v1beta/models/{name}:streamGenerateContent?alt=sse",
        json=req,
        headers={"x-goog-api-key": "gemini-client-key"},
        timeout=15,
    )

    assert resp.status_code == 200, resp.text
    assert "x-turnstile-dropped" not in resp.headers
    assert upstream.requests()[0].body["generationConfig"]["thinkingConfig"] == cfg


ENUM = {"type": "STRING", "enum": ["red", "green"]}


def test_enum_output_reaches_a_gemini_upstream_as_sent(upstream: UpstreamStandin, gateway_url: str) -> None:
    gen = {"responseMimeType": "text/x.enum", "responseSchema": ENUM}

    body = _ask(upstream, gateway_url, "gemini", {"contents": [USER], "generationConfig": gen})

    assert body["generationConfig"]["responseMimeType"] == "text/x.enum"
    assert body["generationConfig"]["responseSchema"] == ENUM


def test_enum_output_toward_openai_chat_is_refused_naming_the_mime_type(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    gen = {"responseMimeType": "text/x.enum", "responseSchema": ENUM}

    resp = _post(gateway_url, "openai_chat", {"contents": [USER], "generationConfig": gen})

    assert resp.status_code == 400
    assert "generationConfig.responseMimeType" in resp.json()["error"]["message"]
    assert upstream.requests() == []


def test_enum_output_without_an_enum_schema_is_refused(upstream: UpstreamStandin, gateway_url: str) -> None:
    gen = {"responseMimeType": "text/x.enum", "responseSchema": {"type": "STRING"}}

    resp = _post(gateway_url, "gemini", {"contents": [USER], "generationConfig": gen})

    assert resp.status_code == 400 and "text/x.enum" in resp.json()["error"]["message"]
