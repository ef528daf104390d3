"""The Vercel AI SDK (npm ``ai`` with its OpenAI, Anthropic and Google providers, pinned in
:mod:`compat.npm_pins`) through the gateway to every upstream API: ``generateText``,
``streamText``, a ``generateText`` tool loop the SDK runs with ``stopWhen``, and
``generateObject`` with a zod schema. Each provider is the SDK's own, pointed at the gateway by
``baseURL``; the scenario scripts are ``tests/compat/vercel/*.mjs`` on the pinned Node. One
matrix row per (scenario, provider): ``openai.chat()`` is Chat Completions, ``openai()`` the
provider's default Responses model, ``anthropic()`` Messages, ``google()`` Gemini."""

from __future__ import annotations

import json
from typing import Any

import pytest
from standins.recordings import Exchange
from standins.structured_output import instance, structured
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.upstream import Received, UpstreamStandin, answering

from .conftest import MODEL_FOR, UPSTREAM_MODEL
from .npm_clients import VercelWorker, npm_clients_fixture, vercel_worker_fixture  # noqa: F401
from .scripts import call_tools, dump, only, say, tool_names, user_texts

APIS = list(MODEL_FOR)
PROVIDERS = {
    "openai.chat": "openai.chat()",
    "openai.responses": "openai() Responses",
    "anthropic": "anthropic()",
    "google": "google()",
}
CALL_IDS = {
    "openai_chat": "call_vercel_weather_1",
    "openai_responses": "call_vercel_weather_1",
    "anthropic_messages": "toolu_vercel_weather_1",
    "gemini": "gemini_weather_1",
}
WEATHER = {"city": "Paris", "celsius": 21}
FIELDS = ["celsius", "city", "sunny"]


def cases(scenario: str, checks: str, providers: list[str] | None = None) -> list[Any]:
    """``provider`` parameters, each marked as the matrix row ``<scenario> via <provider>``."""
    return [
        pytest.param(
            p,
            id=p,
            marks=pytest.mark.compat(
                client="vercel-ai", scenario=f"{scenario} via {PROVIDERS[p]}", checks=checks
            ),
        )
        for p in providers or list(PROVIDERS)
    ]


def _run(worker: VercelWorker, scenario: str, provider: str, url: str, api: str, *extra: str) -> Any:
    out = worker.run(scenario, provider, url, MODEL_FOR[api], *extra)
    assert "error" not in out, f"the SDK threw: {out}"
    return out


def _parsed(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def tool_outputs(rec: Received) -> list[Any]:
    """The tool results the request carries back to the model, parsed where they are JSON,
    whatever the wire API (Gemini's ``{"output": text}`` unwrapped)."""
    body: dict[str, Any] = rec.body or {}
    raw: list[Any] = []
    if rec.api == "openai_chat":
        raw = [m.get("content") for m in body.get("messages") or [] if m.get("role") == "tool"]
    elif rec.api == "openai_responses":
        items = body.get("input") if isinstance(body.get("input"), list) else []
        raw = [i.get("output") for i in items if i.get("type") == "function_call_output"]
    elif rec.api == "anthropic_messages":
        for m in body.get("messages") or []:
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    raw.append(c if isinstance(c, str) else "".join(p.get("text", "") for p in c or []))
    else:
        for c in body.get("contents") or []:
            for p in c.get("parts") or []:
                if "functionResponse" in p:
                    response = p["functionResponse"].get("response") or {}
                    raw.append(response["output"] if set(response) == {"output"} else response)
    return [_parsed(v) for v in raw]


def _forced_tool(api: str, body: dict[str, Any]) -> tuple[str, Any] | None:
    """``(name, parameters schema)`` of the tool the request forces, if it forces one."""
    if api == "gemini":
        mode = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode")
        decls = [d for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        if mode != "ANY" or not decls:
            return None
        return decls[0]["name"], decls[0].get("parametersJsonSchema") or decls[0].get("parameters")
    choice = body.get("tool_choice")
    tools = body.get("tools") or []
    if choice in (None, "auto", "none") or not tools:
        return None
    name = None
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
    tool = next((t for t in tools if (t.get("function") or t).get("name") == name), tools[0])
    fn = tool.get("function") or tool
    return fn["name"], fn.get("parameters")


def _structured_answer(api: str, body: Any, stream: bool) -> Exchange:
    """An instance of the requested schema: a call of the forced tool when the request forces
    one (the SDK's JSON-tool mode), else in the request's output-format slot."""
    forced = _forced_tool(api, body) if api != "anthropic_messages" else None
    if forced is not None:
        call = Call(CALL_IDS[api], forced[0], json.dumps(instance(forced[1])))
        return tool_call_answer(api, [call], stream=stream)
    if api == "openai_responses":
        schema = ((body.get("text") or {}).get("format") or {}).get("schema")
        return text_answer(api, json.dumps(instance(schema)), stream=stream)
    return structured(api, body, stream)


def _schema_in_native_slot(rec: Received) -> Any:
    """The JSON Schema of the request, read from the upstream API's native structured-output
    slot (the forced ``json_output`` tool on a Claude model without ``output_config.format``)."""
    body: dict[str, Any] = rec.body or {}
    if rec.api == "openai_chat":
        assert body["response_format"]["type"] == "json_schema", dump(rec)
        return body["response_format"]["json_schema"]["schema"]
    if rec.api == "openai_responses":
        assert body["text"]["format"]["type"] == "json_schema", dump(rec)
        return body["text"]["format"]["schema"]
    if rec.api == "anthropic_messages":
        # claude-sonnet-4-20250514 has no output_config.format: the gateway forces its output tool.
        assert "output_config" not in body and "output_format" not in body, dump(rec)
        assert body["tool_choice"] == {"type": "tool", "name": "json_output"}, dump(rec)
        return next(t for t in body["tools"] if t["name"] == "json_output")["input_schema"]
    gen = body["generationConfig"]
    assert gen["responseMimeType"] == "application/json", dump(rec)
    return gen.get("responseJsonSchema") or gen["responseSchema"]


def _assert_weather_schema(schema: Any, rec: Received) -> None:
    assert set(schema["properties"]) == set(FIELDS), dump(rec)
    assert sorted(schema["required"]) == FIELDS, dump(rec)


def _assert_weather(obj: Any) -> None:
    assert sorted(obj) == FIELDS
    assert isinstance(obj["city"], str) and isinstance(obj["sunny"], bool)
    assert isinstance(obj["celsius"], int | float)


@pytest.mark.parametrize(
    "provider",
    cases(
        "generateText",
        "the prompt reaches the upstream as the user text, unstreamed; the text comes back",
    ),
)
@pytest.mark.parametrize("api", APIS)
def test_generate_text_reaches_each_upstream_with_the_prompt(
    api: str, provider: str, vercel_worker: VercelWorker, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "hello from upstream")
    out = _run(vercel_worker, "generate_text", provider, gateway_url, api)
    assert out["text"] == "hello from upstream" and out["finishReason"] == "stop"
    assert (out["usage"]["inputTokens"], out["usage"]["outputTokens"]) == (20, 10)  # the upstream's
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["Say hello from Vercel."], dump(rec)
    assert rec.stream is False


@pytest.mark.parametrize(
    "provider",
    cases(
        "streamText",
        "the prompt reaches the upstream on a streamed request; the deltas add up to the text",
    ),
)
@pytest.mark.parametrize("api", APIS)
def test_stream_text_streams_each_upstreams_answer(
    api: str, provider: str, vercel_worker: VercelWorker, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "streamed hello from upstream")
    out = _run(vercel_worker, "stream_text", provider, gateway_url, api)
    assert out["text"] == "streamed hello from upstream" and out["chunks"]
    assert out["finishReason"] == "stop"
    assert (out["usage"]["inputTokens"], out["usage"]["outputTokens"]) == (20, 10)  # the upstream's
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["Stream hello from Vercel."], dump(rec)
    assert rec.stream is True


@pytest.mark.parametrize(
    "provider",
    cases(
        "tool loop (stopWhen)",
        "generateText and streamText: round 1 declares the tool; round 2 carries the SDK-run "
        "tool's result for that call",
    ),
)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("streamed", [False, True], ids=["generateText", "streamText"])
def test_tool_loop_runs_through_the_gateway_with_the_tool_result_in_round_two(
    api: str,
    provider: str,
    streamed: bool,
    vercel_worker: VercelWorker,
    gateway_url: str,
    upstream: UpstreamStandin,
) -> None:
    call_tools(upstream, api, Call(CALL_IDS[api], "weather", json.dumps({"city": "Paris"})))
    say(upstream, api, "It is 21 degrees in Paris.")
    out = _run(vercel_worker, "stream_tool_loop" if streamed else "tool_loop", provider, gateway_url, api)
    assert out["toolCalls"] == [{"name": "weather", "input": {"city": "Paris"}}]
    assert out["toolResults"] == [WEATHER]
    assert out["text"] == "It is 21 degrees in Paris." and out["steps"] == 2
    first, second = only(upstream, api)
    assert tool_names(first) == ["weather"], dump(first)
    assert user_texts(first) == ["What is the weather in Paris?"] and tool_outputs(first) == []
    # The Google provider sends a tool's output as {"name", "content"} (its functionResponse
    # convention); the gateway carries that object as the result.
    want = {"name": "weather", "content": WEATHER} if provider == "google" else WEATHER
    assert tool_outputs(second) == [want], dump(second)
    assert user_texts(second) == ["What is the weather in Paris?"]
    assert first.stream is second.stream is streamed


@pytest.mark.parametrize(
    "provider",
    cases(
        "generateObject (zod)",
        "the zod schema reaches the upstream's native structured-output slot; the object parses",
        ["openai.chat", "openai.responses", "google"],
    )
    + cases(
        "generateObject (zod, structuredOutputMode outputFormat)",
        "output_config.format reaches the upstream's native structured-output slot; the object parses",
        ["anthropic"],
    ),
)
@pytest.mark.parametrize("api", APIS)
def test_generate_object_puts_the_schema_in_each_upstreams_native_slot(
    api: str, provider: str, vercel_worker: VercelWorker, gateway_url: str, upstream: UpstreamStandin
) -> None:
    upstream.script(answering(_structured_answer, api=api, model=UPSTREAM_MODEL[api]))
    extra = ["outputFormat"] if provider == "anthropic" else []
    out = _run(vercel_worker, "generate_object", provider, gateway_url, api, *extra)
    _assert_weather(out["object"])
    (rec,) = only(upstream, api)
    _assert_weather_schema(_schema_in_native_slot(rec), rec)


@pytest.mark.parametrize(
    "provider",
    cases(
        "generateObject (zod, JSON tool)",
        "the SDK's forced `json` tool reaches the upstream as a forced tool; its call is the object",
        ["anthropic"],
    ),
)
@pytest.mark.parametrize("api", APIS)
def test_generate_object_in_json_tool_mode_forces_the_tool_on_each_upstream(
    api: str, provider: str, vercel_worker: VercelWorker, gateway_url: str, upstream: UpstreamStandin
) -> None:
    # For a model id it does not know, the Anthropic provider's "auto" mode asks for a forced
    # tool named "json" (tool_choice "any") instead of output_config.format.
    upstream.script(answering(_structured_answer, api=api, model=UPSTREAM_MODEL[api]))
    out = _run(vercel_worker, "generate_object", provider, gateway_url, api)
    _assert_weather(out["object"])
    (rec,) = only(upstream, api)
    body = rec.body or {}
    assert tool_names(rec) == ["json"], dump(rec)
    if api == "anthropic_messages":
        assert body["tool_choice"]["type"] == "any", dump(rec)
        schema = body["tools"][0]["input_schema"]
    else:
        forced = _forced_tool(api, body)
        assert forced is not None and forced[0] == "json", dump(rec)
        schema = forced[1]
    _assert_weather_schema(schema, rec)


def system_texts(rec: Received) -> list[str]:
    """The system prompt texts the request carries, whatever the wire API."""
    body: dict[str, Any] = rec.body or {}
    if rec.api == "gemini":
        return [p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts") or []]
    if rec.api == "anthropic_messages":
        system = body.get("system")
        return [system] if isinstance(system, str) else [b.get("text", "") for b in system or []]
    out = [body["instructions"]] if rec.api == "openai_responses" and body.get("instructions") else []
    items = body.get("input") if rec.api == "openai_responses" else body.get("messages")
    for m in items if isinstance(items, list) else []:
        if m.get("role") in ("system", "developer"):
            c = m.get("content")
            out += [c] if isinstance(c, str) else [p.get("text", "") for p in c or []]
    return out


def settings_of(rec: Received) -> dict[str, Any]:
    """``{"temperature", "max_tokens", "stop"}`` as the request carries them (None: absent)."""
    body: dict[str, Any] = rec.body or {}
    if rec.api == "gemini":
        gen = body.get("generationConfig") or {}
        return {
            "temperature": gen.get("temperature"),
            "max_tokens": gen.get("maxOutputTokens"),
            "stop": gen.get("stopSequences"),
        }
    if rec.api == "anthropic_messages":
        stop = body.get("stop_sequences")
        return {"temperature": body.get("temperature"), "max_tokens": body.get("max_tokens"), "stop": stop}
    if rec.api == "openai_responses":
        return {
            "temperature": body.get("temperature"),
            "max_tokens": body.get("max_output_tokens"),
            "stop": body.get("stop"),
        }
    stop = body.get("stop")
    return {
        "temperature": body.get("temperature"),
        "max_tokens": body.get("max_completion_tokens") or body.get("max_tokens"),
        "stop": [stop] if isinstance(stop, str) else stop,
    }


@pytest.mark.parametrize(
    "provider",
    cases(
        "generateText with system and settings",
        "system, temperature, maxOutputTokens and stopSequences reach the upstream in its own "
        "fields; stop sequences for a Responses upstream are refused (400 naming stop)",
    ),
)
@pytest.mark.parametrize("api", APIS)
def test_system_prompt_and_call_settings_reach_each_upstream(
    api: str, provider: str, vercel_worker: VercelWorker, gateway_url: str, upstream: UpstreamStandin
) -> None:
    refused = api == "openai_responses" and provider != "openai.responses"
    if not refused:
        say(upstream, api, "hello")
    out = vercel_worker.run("settings", provider, gateway_url, MODEL_FOR[api])
    if refused:
        # The Responses API has no stop sequences: refused by name, in the client's own dialect.
        assert out["status"] == 400, out
        # Named as the client's dialect names it (Chat `stop`, Anthropic `stop_sequences`, Gemini
        # `generationConfig.stopSequences`).
        named = {"anthropic": "stop_sequences", "google": "generationConfig.stopSequences"}
        assert out["error"].startswith(f"{named.get(provider, 'stop')}: "), out
        assert "openai_responses wire API" in out["error"] and "no stop sequences" in out["error"], out
        error = json.loads(out["body"])["error"]
        assert error["message"] == out["error"]
        assert {"openai.chat": "param", "anthropic": "type", "google": "status"}[provider] in error
        assert upstream.received == []
        return
    assert "error" not in out, out
    assert out["text"] == "hello" and out["dropped"] is None
    (rec,) = only(upstream, api)
    assert system_texts(rec) == ["You are terse."], dump(rec)
    # The SDK's Responses model drops stopSequences itself (a warning; the API has none).
    stop = None if provider == "openai.responses" else ["END"]
    assert out["warnings"] == ([] if stop else ["stopSequences"])
    assert settings_of(rec) == {"temperature": 0.25, "max_tokens": 77, "stop": stop}, dump(rec)
