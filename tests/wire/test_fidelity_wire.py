"""The fidelity rule through the gateway (issue 14 item 1, ``docs/fidelity.md``): what each
class of client field does on the wire. Serving and passed-through fields reach an upstream of
the client's own wire API verbatim; toward another wire API serving fields are dropped and
named in ``x-turnstile-dropped`` and the transcript, passed-through ones are a 400 naming the
field with no upstream call; mid-conversation system messages stay in place; an Anthropic
client's adaptive thinking and effort reach Claude as sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from standins.tool_answers import text_answer
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import transcript_row

USER = [{"role": "user", "content": "hello"}]

OPENAI_SERVING: dict[str, Any] = {
    "service_tier": "flex",
    "store": True,
    "metadata": {"team": "docs"},
    "prompt_cache_key": "pk-1",
    "safety_identifier": "sid-1",
    "seed": 7,
    "prediction": {"type": "content", "content": "hello"},
}
OPENAI_PASSED: dict[str, Any] = {
    "frequency_penalty": 0.5,
    "presence_penalty": -0.25,
    "logit_bias": {"50256": -100},
    "verbosity": "low",
    "web_search_options": {"search_context_size": "low"},
}
ANTHROPIC_SERVING: dict[str, Any] = {
    "cache_control": {"type": "ephemeral"},
    "service_tier": "standard_only",
    "speed": "fast",
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
}
ANTHROPIC_PASSED: dict[str, Any] = {
    "container": "container_011",
    "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "example"}],
}
TOOL = {"name": "lookup", "description": "Look it up.", "input_schema": {"type": "object", "properties": {}}}


def _dropped_notes(db_path: Path, request_id: str) -> list[dict[str, Any]]:
    row = transcript_row(db_path, request_id)
    return [n for n in json.loads(row["repairs"]) if n.get("kind") == "dropped"]


def test_openai_serving_and_passed_through_fields_reach_an_openai_chat_upstream_verbatim(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    raw = oai.chat.completions.with_raw_response.create(
        model="oa", messages=USER, **OPENAI_SERVING, extra_body={**OPENAI_PASSED, "repetition_penalty": 1.1}
    )
    assert raw.http_response.status_code == 200
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    sent = {**OPENAI_SERVING, **OPENAI_PASSED, "repetition_penalty": 1.1}
    assert {k: got.body.get(k) for k in sent} == sent


def test_openai_serving_fields_toward_claude_are_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI, db_path: Path
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=False)))
    raw = oai.chat.completions.with_raw_response.create(model="an", messages=USER, **OPENAI_SERVING)
    assert raw.http_response.status_code == 200
    assert sorted(raw.headers["x-turnstile-dropped"].split(",")) == sorted(OPENAI_SERVING)
    (got,) = upstream.requests()
    assert not set(OPENAI_SERVING) & set(got.body) - {"metadata"}
    assert got.body.get("metadata") is None  # no user: Anthropic's metadata slot stays empty
    notes = _dropped_notes(db_path, raw.headers["x-turnstile-request-id"])
    assert sorted(n["field"] for n in notes) == sorted(OPENAI_SERVING)
    assert {n["deployment"] for n in notes} == {"an"}


@pytest.mark.parametrize("field", sorted(OPENAI_PASSED))
def test_an_answer_changing_openai_field_toward_claude_is_refused_by_name(
    field: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(model="an", messages=USER, extra_body={field: OPENAI_PASSED[field]})
    assert exc.value.status_code == 400
    assert field in exc.value.message
    assert exc.value.body["param"] == field  # type: ignore[index]
    assert upstream.requests() == []


@pytest.mark.parametrize(
    ("field", "value"), [("logprobs", True), ("top_logprobs", 2), ("n", 2), ("modalities", ["text", "audio"])]
)
def test_openai_fields_the_gateway_cannot_relay_are_refused_even_toward_openai(
    field: str, value: Any, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(model="oa", messages=USER, extra_body={field: value})
    assert field in exc.value.message
    assert upstream.requests() == []


def test_anthropic_fields_reach_claude_verbatim_with_adaptive_thinking_and_effort(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=False)))
    tool = {**TOOL, "defer_loading": True}
    raw = ant.messages.with_raw_response.create(
        model="an",
        max_tokens=64,
        messages=USER,
        tools=[tool],
        thinking={"type": "adaptive", "display": "omitted"},
        output_config={"effort": "xhigh"},
        extra_body={**ANTHROPIC_SERVING, **ANTHROPIC_PASSED},
    )
    assert raw.http_response.status_code == 200
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    sent = {**ANTHROPIC_SERVING, **ANTHROPIC_PASSED}
    assert {k: got.body.get(k) for k in sent} == sent
    assert got.body["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert got.body["output_config"] == {"effort": "xhigh"}
    assert got.body["max_tokens"] == 64  # not raised for a thinking budget
    assert got.body["tools"] == [tool]


def test_anthropic_effort_alone_is_sent_as_effort_not_as_extended_thinking(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=False)))
    ant.messages.create(model="an", max_tokens=64, messages=USER, output_config={"effort": "low"})
    (got,) = upstream.requests()
    assert got.body["output_config"] == {"effort": "low"}
    assert "thinking" not in got.body
    assert got.body["max_tokens"] == 64


@pytest.mark.parametrize("target", ["oa", "ge"])
def test_anthropic_serving_fields_toward_another_api_are_dropped_and_named(
    target: str, upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    api = {"oa": "openai_chat", "ge": "gemini"}[target]
    upstream.script(replay(text_answer(api, "hi", stream=False)))
    raw = ant.messages.with_raw_response.create(
        model=target,
        max_tokens=64,
        messages=USER,
        tools=[{**TOOL, "defer_loading": True}],
        extra_body=ANTHROPIC_SERVING,
    )
    assert raw.http_response.status_code == 200
    dropped = [*ANTHROPIC_SERVING, "tools[0].defer_loading"]
    assert raw.headers["x-turnstile-dropped"].split(",") == dropped
    (got,) = upstream.requests()
    text = json.dumps(got.body)
    assert "defer_loading" not in text and "standard_only" not in text and "ephemeral" not in text
    assert [n["field"] for n in _dropped_notes(db_path, raw.headers["x-turnstile-request-id"])] == dropped


@pytest.mark.parametrize("field", sorted(ANTHROPIC_PASSED))
def test_an_answer_changing_anthropic_field_toward_another_api_is_refused_by_name(
    field: str, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(
            model="oa", max_tokens=64, messages=USER, extra_body={field: ANTHROPIC_PASSED[field]}
        )
    assert exc.value.status_code == 400
    assert field in exc.value.message
    assert exc.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert upstream.requests() == []


MID_SYSTEM = [
    {"role": "user", "content": "Review `def add(a, b): return a + b`."},
    {"role": "assistant", "content": "It adds."},
    {"role": "system", "content": "From now on, include type annotations."},
    {"role": "user", "content": "Again, please."},
]


def test_a_mid_conversation_system_message_stays_in_place_for_claude(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=False)))
    oai.chat.completions.create(
        model="an", messages=[{"role": "system", "content": "Be brief."}, *MID_SYSTEM]
    )
    (got,) = upstream.requests()
    assert got.body["system"] == [{"type": "text", "text": "Be brief."}]
    assert [m["role"] for m in got.body["messages"]] == ["user", "assistant", "system", "user"]
    assert got.body["messages"][2]["content"] == [
        {"type": "text", "text": "From now on, include type annotations."}
    ]


def test_a_mid_conversation_system_message_stays_in_place_for_openai(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    ant.messages.create(model="oa", max_tokens=64, system="Be brief.", messages=MID_SYSTEM)  # type: ignore[arg-type]
    (got,) = upstream.requests()
    roles = [m["role"] for m in got.body["messages"]]
    assert roles == ["system", "user", "assistant", "system", "user"]
    assert got.body["messages"][3]["content"] == "From now on, include type annotations."


@pytest.mark.parametrize("effort", ["xhigh", "none"])
def test_an_openai_reasoning_effort_the_schema_reads_coarser_reaches_openai_as_sent(
    effort: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    oai.chat.completions.create(model="some-oai-model", messages=USER, reasoning_effort=effort)  # type: ignore[arg-type]
    (got,) = upstream.requests()
    assert got.body["reasoning_effort"] == effort


def test_a_streamed_answer_names_the_dropped_fields_in_its_headers(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=True)))
    with ant.messages.with_streaming_response.create(
        model="oa", max_tokens=64, messages=USER, stream=True, extra_body={"speed": "fast"}
    ) as raw:
        assert raw.headers["x-turnstile-dropped"] == "speed"
        assert "message_stop" in "".join(raw.iter_text())
    (got,) = upstream.requests()
    assert "speed" not in got.body


CACHED_SYSTEM = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]


def test_cache_marks_on_blocks_reach_claude_and_are_named_when_dropped_elsewhere(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    upstream.script(
        replay(text_answer("anthropic_messages", "hi", stream=False)),
        replay(text_answer("openai_chat", "hi", stream=False)),
    )
    kept = ant.messages.with_raw_response.create(
        model="an", max_tokens=64, system=CACHED_SYSTEM, messages=USER
    )  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in kept.headers
    dropped = ant.messages.with_raw_response.create(
        model="oa", max_tokens=64, system=CACHED_SYSTEM, messages=USER
    )  # type: ignore[arg-type]
    assert dropped.headers["x-turnstile-dropped"] == "cache_control"
    to_claude, to_openai = upstream.requests()
    assert to_claude.body["system"] == CACHED_SYSTEM
    assert "cache_control" not in json.dumps(to_openai.body)
    (note,) = _dropped_notes(db_path, dropped.headers["x-turnstile-request-id"])
    assert note["field"] == "cache_control" and "system" in note["reason"]


PER_TURN = [
    {"role": "user", "content": "hello"},
    {"role": "system", "content": "# Environment", "output_config": {"effort": "medium"}},
]


def test_a_system_messages_per_turn_output_config_reaches_claude_on_that_message(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    """Claude Code 2.1.332 (``per-turn-control-2026-07-01``) puts its effort on the
    mid-conversation system message; it stays on that message."""
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=False)))
    raw = ant.messages.with_raw_response.create(model="an", max_tokens=64, messages=PER_TURN)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["messages"][1] == {
        "role": "system",
        "content": [{"type": "text", "text": "# Environment"}],
        "output_config": {"effort": "medium"},
    }


def test_a_system_messages_per_turn_output_config_toward_openai_is_dropped_and_named(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    raw = ant.messages.with_raw_response.create(model="oa", max_tokens=64, messages=PER_TURN)  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == "messages[1].output_config"
    (got,) = upstream.requests()
    assert "output_config" not in json.dumps(got.body)
    notes = _dropped_notes(db_path, raw.headers["x-turnstile-request-id"])
    assert [n["field"] for n in notes] == ["messages[1].output_config"]


def test_count_tokens_refuses_a_same_wire_field_another_wire_api_cannot_take_as_messages_does(
    gateway_url: str,
) -> None:
    body = {"model": "oa", "messages": [{"role": "user", "content": "hi"}], "container": "cntr_1"}
    r = httpx.post(f"{gateway_url}/v1/messages/count_tokens", json=body, timeout=10)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"].startswith("container:")
