"""The upstream stand-in itself: replays recordings byte for byte, checks what the real
providers check first, answers 418 for an unscripted request, records every request."""

from __future__ import annotations

import httpx
from standins import recordings
from standins.upstream import UpstreamStandin, cut_before_stop, replay


def test_replays_a_recorded_stream_byte_for_byte(upstream: UpstreamStandin) -> None:
    ex = recordings.truncated_tool_call_sse()
    upstream.script(replay(ex, api="anthropic_messages"))
    resp = httpx.post(
        f"{upstream.url}/v1/messages",
        json={"model": "m", "max_tokens": 5, "stream": True, "messages": []},
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    assert resp.status_code == 200
    assert resp.content == ex.body
    (rec,) = upstream.requests()
    assert (rec.api, rec.model, rec.stream, rec.body["max_tokens"]) == ("anthropic_messages", "m", True, 5)


def test_cut_before_stop_drops_the_stop_event(upstream: UpstreamStandin) -> None:
    ex = recordings.common("openai_chat", "simple", True)[0]
    upstream.script(cut_before_stop(ex))
    resp = httpx.post(
        f"{upstream.url}/v1/chat/completions",
        json={"model": "m", "stream": True, "messages": []},
        headers={"authorization": "Bearer k"},
    )
    assert b'finish_reason":"stop' not in resp.content and b"[DONE]" not in resp.content
    assert ex.body.startswith(resp.content)


def test_checks_keys_and_required_fields_like_the_providers(upstream: UpstreamStandin) -> None:
    no_key = httpx.post(f"{upstream.url}/v1/chat/completions", json={"model": "m", "messages": []})
    assert no_key.status_code == 401 and "error" in no_key.json()
    no_max = httpx.post(
        f"{upstream.url}/v1/messages",
        json={"model": "m", "messages": []},
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    assert no_max.status_code == 400 and no_max.json()["error"]["type"] == "invalid_request_error"
    gem = httpx.post(
        f"{upstream.url}/v1beta/models/g:streamGenerateContent",
        json={"contents": [{"parts": [{"text": "hi"}]}]},
        headers={"x-goog-api-key": "k"},
    )
    assert gem.status_code == 400, "streaming without ?alt=sse is refused"
    assert len(upstream.received) == 3


def test_unscripted_request_gets_418_naming_it(upstream: UpstreamStandin) -> None:
    resp = httpx.post(
        f"{upstream.url}/v1beta/models/gemini-x:generateContent",
        json={"contents": [{"parts": [{"text": "hi"}]}]},
        params={"key": "k"},
    )
    assert resp.status_code == 418
    assert "gemini-x" in resp.text


def _anthropic(upstream: UpstreamStandin, body: dict[str, object]) -> httpx.Response:
    return httpx.post(
        f"{upstream.url}/v1/messages",
        json={"model": "claude-sonnet-4-20250514", "max_tokens": 4096, **body},
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )


def test_enforces_anthropics_thinking_rules(upstream: UpstreamStandin) -> None:
    first, second = recordings.anthropic_thinking(False)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    question = {"role": "user", "content": "What's the weather in Florence, Italy?"}
    thinking = {"type": "enabled", "budget_tokens": 4000}
    answer = _anthropic(upstream, {"messages": [question], "thinking": thinking}).json()
    blocks = answer["content"]
    call = next(b for b in blocks if b["type"] == "tool_use")
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "40 C"}],
    }

    bare = [question, {"role": "assistant", "content": [call]}, result]
    refused = _anthropic(upstream, {"messages": bare, "thinking": thinking})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."
    )
    forged = [dict(b, signature="forged") if b["type"] == "thinking" else b for b in blocks]
    bad_sig = _anthropic(upstream, {"messages": [question, {"role": "assistant", "content": forged}, result]})
    assert bad_sig.status_code == 400
    assert (
        bad_sig.json()["error"]["message"] == "messages.1.content.0: Invalid `signature` in `thinking` block"
    )
    assert _anthropic(upstream, {"messages": bare}).status_code == 200, "without thinking a bare turn is fine"


def test_enforces_gemini_3_thought_signatures_on_the_current_turn(upstream: UpstreamStandin) -> None:
    call = {"functionCall": {"name": "weather", "args": {"location": "Florence"}}}
    result = {"functionResponse": {"name": "weather", "response": {"result": "40 C"}}}

    def post(model: str, model_part: dict[str, object]) -> httpx.Response:
        contents = [
            {"role": "user", "parts": [{"text": "Weather in Florence?"}]},
            {"role": "model", "parts": [model_part]},
            {"role": "user", "parts": [result]},
        ]
        return httpx.post(
            f"{upstream.url}/v1beta/models/{model}:generateContent",
            json={"contents": contents},
            headers={"x-goog-api-key": "k"},
        )

    refused = post("gemini-3-pro-preview", call)
    assert refused.status_code == 400 and refused.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert "missing a thought_signature" in refused.json()["error"]["message"]
    sentinel = {**call, "thoughtSignature": "skip_thought_signature_validator"}
    assert post("gemini-3-pro-preview", sentinel).status_code == 418, "accepted (then unscripted)"
    assert post("gemini-2.5-flash", call).status_code == 418, "older models are not checked"


def test_refuses_gemini_generation_config_fields_it_takes_one_of(upstream: UpstreamStandin) -> None:
    def post(gen: dict[str, object]) -> httpx.Response:
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": gen}
        return httpx.post(
            f"{upstream.url}/v1beta/models/gemini-2.5-flash:generateContent",
            json=body,
            headers={"x-goog-api-key": "k"},
        )

    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    both = post(
        {"responseMimeType": "application/json", "responseSchema": schema, "responseJsonSchema": schema}
    )
    assert both.status_code == 400 and "response_json_schema" in both.json()["error"]["message"]
    thinking = post({"thinkingConfig": {"thinkingBudget": 512, "thinkingLevel": "LOW"}})
    assert thinking.status_code == 400 and "thinking_level" in thinking.json()["error"]["message"]
    json_schema = {**schema, "additionalProperties": False, "$defs": {}}
    one = post({"responseMimeType": "application/json", "responseJsonSchema": json_schema})
    assert one.status_code == 418, "responseJsonSchema takes JSON Schema (accepted, then unscripted)"
