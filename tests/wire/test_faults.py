"""Upstream faults through the real gateway: 429 with retry-after and 500 on the primary ->
the fallback serves; both failing -> the SDK raises with the dialect's error shape; a
connection reset or a cut mid-stream -> the stream ends with an error event and the
transcript says so; a slow first byte -> 504 or the fallback; length truncation in the middle
of a tool call -> no tool call reaches the client, stop reason length."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from standins import recordings
from standins.drive import ADD_MULTIPLY, ask, user
from standins.tool_answers import text_answer
from standins.topology import CHAT_FIRST, FALLBACK, MATRIX, SLOW, SLOW_ONLY
from standins.upstream import (
    Gate,
    UpstreamStandin,
    cut_before_stop,
    held,
    http_error,
    huge,
    replay,
    reset_mid_stream,
    stop_frame_index,
)
from standins.wirekit import recorded_text, transcript_count, transcript_row

DIALECTS = ["openai", "anthropic"]
APIS = ["openai_chat", "anthropic_messages", "gemini", "openai_responses"]
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
ANTHROPIC_500 = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}


def _client(dialect: str, oai: Any, ant: Any) -> Any:
    return oai if dialect == "openai" else ant


def _rid(turn_or_headers: Any) -> str:
    headers = turn_or_headers if isinstance(turn_or_headers, dict) else turn_or_headers.headers
    h = {k.lower(): v for k, v in headers.items()}
    return h["x-turnstile-request-id"]


def _stop(row: dict[str, Any]) -> Any:
    return row["stop"] if "stop" in row else row["stop_reason"]


# ------------------------------------------------------------------------------ fallback


@pytest.mark.parametrize("dialect", DIALECTS)
@STREAMS
def test_rate_limited_primary_falls_back_to_next_deployment(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    backup = recordings.common("openai_chat", "simple", stream)[0]
    upstream.script(
        http_error(429, recordings.anthropic_rate_limited(), model="claude-primary", retry_after="7"),
        replay(backup, model="gpt-backup"),
    )
    turn = ask(
        dialect, _client(dialect, oai, ant), model=FALLBACK, stream=stream, messages=[user(dialect, "hi")]
    )

    assert turn.error is None, turn.error
    assert turn.text == recorded_text(backup, "openai_chat")
    assert {k.lower(): v for k, v in turn.headers.items()}["x-turnstile-deployment"] == "oa-backup"
    assert [r.model for r in upstream.requests()] == ["claude-primary", "gpt-backup"]
    row = transcript_row(db_path, _rid(turn))
    assert row["deployment"] == "oa-backup"
    attempts = json.loads(row["attempts"])
    assert any(a.get("deployment") == "an-primary" and a.get("status") == 429 for a in attempts), attempts
    assert transcript_count(db_path, _rid(turn)) == 1


def test_rate_limited_primary_is_skipped_while_its_retry_after_runs(
    upstream: UpstreamStandin, oai: Any
) -> None:
    backup = recordings.common("openai_chat", "simple", False)[0]
    upstream.script(
        http_error(429, recordings.anthropic_rate_limited(), model="claude-primary", retry_after="30"),
        replay(backup, model="gpt-backup"),
        replay(backup, model="gpt-backup"),
    )
    ask("openai", oai, model=FALLBACK, stream=False, messages=[user("openai", "hi")])
    turn = ask("openai", oai, model=FALLBACK, stream=False, messages=[user("openai", "hi again")])

    assert turn.text == recorded_text(backup, "openai_chat")
    assert [r.model for r in upstream.requests()] == ["claude-primary", "gpt-backup", "gpt-backup"], (
        "the primary is not asked again before its retry-after has passed"
    )


@pytest.mark.parametrize("dialect", DIALECTS)
@STREAMS
def test_server_error_on_primary_falls_back(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    backup = recordings.common("openai_chat", "simple", stream)[0]
    upstream.script(
        http_error(500, ANTHROPIC_500, model="claude-primary"), replay(backup, model="gpt-backup")
    )
    turn = ask(
        dialect, _client(dialect, oai, ant), model=FALLBACK, stream=stream, messages=[user(dialect, "hi")]
    )

    assert turn.error is None, turn.error
    assert turn.text == recorded_text(backup, "openai_chat")
    assert {k.lower(): v for k, v in turn.headers.items()}["x-turnstile-deployment"] == "oa-backup"
    assert len(upstream.requests()) == 2


def _assert_dialect_error_shape(dialect: str, err: Any, *kinds: str) -> dict[str, Any]:
    """OpenAI: ``{"error": {"message", "type", ...}}``; Anthropic: ``{"type": "error",
    "error": {"type": <one of kinds>, "message"}}``."""
    body = err.response.json()
    if dialect == "openai":
        assert set(body) == {"error"}, body
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]
        assert "type" in body["error"]
        return dict(body["error"])
    assert body["type"] == "error", body
    assert body["error"]["type"] in kinds, body
    assert body["error"]["message"]
    return dict(body["error"])


@pytest.mark.parametrize("dialect", DIALECTS)
@STREAMS
def test_both_deployments_rate_limited_raises_rate_limit_error(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    upstream.script(
        http_error(429, recordings.anthropic_rate_limited(), model="claude-primary", retry_after="7"),
        http_error(429, recordings.openrouter_rate_limited(), model="gpt-backup", retry_after="3"),
    )
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.RateLimitError) as exc:
        ask(
            dialect, _client(dialect, oai, ant), model=FALLBACK, stream=stream, messages=[user(dialect, "hi")]
        )
    assert exc.value.status_code == 429
    _assert_dialect_error_shape(dialect, exc.value, "rate_limit_error")
    assert exc.value.response.headers.get("retry-after") == "3", (
        "the last upstream's retry-after is passed on"
    )
    assert exc.value.response.headers.get("x-turnstile-request-id")
    assert len(upstream.requests()) == 2


@pytest.mark.parametrize("dialect", DIALECTS)
@STREAMS
def test_both_deployments_failing_raises_api_status_error(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    upstream.script(
        http_error(500, ANTHROPIC_500, model="claude-primary"),
        http_error(
            503,
            {"error": {"message": "The server is overloaded", "type": "server_error"}},
            model="gpt-backup",
        ),
    )
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.APIStatusError) as exc:
        ask(
            dialect, _client(dialect, oai, ant), model=FALLBACK, stream=stream, messages=[user(dialect, "hi")]
        )
    assert exc.value.status_code >= 500
    _assert_dialect_error_shape(dialect, exc.value, "overloaded_error", "api_error")
    assert len(upstream.requests()) == 2


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("fault", ["answer-past-the-cap", "server-error"])
def test_an_upstream_error_answer_names_the_deployment_that_was_read(
    dialect: str, fault: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    deployment, model = MATRIX["openai_chat"]
    if fault == "answer-past-the-cap":  # 9 MiB against the 8 MiB server.max_response_bytes
        ex = recordings.common("openai_chat", "simple", False)[0]
        upstream.script(huge(ex, 9 * 1024 * 1024, api="openai_chat"))
    else:
        upstream.script(http_error(500, {"error": {"message": "boom", "type": "server_error"}}, model=model))
    body: dict[str, Any] = {"model": deployment, "messages": [{"role": "user", "content": "hi"}]}
    if dialect == "anthropic":
        body["max_tokens"] = 16
    path = "/v1/chat/completions" if dialect == "openai" else "/v1/messages"
    resp = httpx.post(
        f"{gateway_url}{path}",
        json=body,
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        timeout=30,
    )
    assert resp.status_code == (502 if fault == "answer-past-the-cap" else 500), resp.text[:300]
    assert resp.headers["x-turnstile-deployment"] == deployment
    assert resp.headers["x-turnstile-request-id"]


# ------------------------------------------------------------------------------ broken streams


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("api", APIS)
def test_connection_reset_mid_stream_ends_with_error_event(
    dialect: str, api: str, upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    ex = recordings.common(api, "simple", True)[0]
    gate = Gate(timeout_s=5.0)
    upstream.script(reset_mid_stream(ex, frames=max(1, stop_frame_index(ex) - 1), api=api, gate=gate))
    turn = ask(
        dialect,
        _client(dialect, oai, ant),
        model=MATRIX[api][0],
        stream=True,
        messages=[user(dialect, "Say hi in Portuguese")],
        on_chunk=lambda _: gate.release(),
    )

    sdk = openai if dialect == "openai" else anthropic
    assert isinstance(turn.error, sdk.APIError), (
        f"the stream must end with an error event, got {turn.error!r}"
    )
    assert recorded_text(ex, api).startswith(turn.text)
    assert turn.stop is None, "no stop reason may be invented for a reset stream"
    row = transcript_row(db_path, _rid(turn))
    assert row["status"] != 200
    assert row["error"], "the transcript row records the failure"
    assert _stop(row) in (None, "error")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("api", APIS)
def test_stream_cut_before_stop_event_ends_with_error_event(
    dialect: str, api: str, upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    ex = recordings.common(api, "simple", True)[0]
    upstream.script(cut_before_stop(ex, api=api))
    turn = ask(
        dialect,
        _client(dialect, oai, ant),
        model=MATRIX[api][0],
        stream=True,
        messages=[user(dialect, "Say hi in Portuguese")],
    )

    sdk = openai if dialect == "openai" else anthropic
    assert isinstance(turn.error, sdk.APIError), (
        f"a stream cut before its stop must end in error, got {turn.error!r}"
    )
    assert turn.stop is None
    row = transcript_row(db_path, _rid(turn))
    assert row["status"] != 200 and row["error"]


# ------------------------------------------------------------------------------ slow first byte


@pytest.mark.parametrize("dialect", DIALECTS)
@STREAMS
def test_slow_first_byte_falls_back(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    gate = Gate(timeout_s=5.0)
    backup = recordings.common("openai_chat", "simple", stream)[0]
    upstream.script(
        held(replay(recordings.common("gemini", "simple", stream)[0], model="gemini-slow"), gate),
        replay(backup, model="gpt-backup"),
    )
    t0 = time.monotonic()
    turn = ask(dialect, _client(dialect, oai, ant), model=SLOW, stream=stream, messages=[user(dialect, "hi")])
    elapsed = time.monotonic() - t0
    gate.release()

    assert gate.waited.is_set(), "the slow primary was asked first"
    assert turn.error is None, turn.error
    assert turn.text == recorded_text(backup, "openai_chat")
    assert {k.lower(): v for k, v in turn.headers.items()}["x-turnstile-deployment"] == "oa-backup"
    assert elapsed < 4.0, f"the first-byte timeout did not fire ({elapsed:.1f}s)"


@pytest.mark.parametrize("dialect", DIALECTS)
@STREAMS
def test_slow_first_byte_without_fallback_is_504(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    gate = Gate(timeout_s=5.0)
    upstream.script(held(replay(recordings.common("gemini", "simple", stream)[0], model="gemini-slow"), gate))
    sdk = openai if dialect == "openai" else anthropic
    t0 = time.monotonic()
    with pytest.raises(sdk.APIStatusError) as exc:
        ask(
            dialect,
            _client(dialect, oai, ant),
            model=SLOW_ONLY,
            stream=stream,
            messages=[user(dialect, "hi")],
        )
    elapsed = time.monotonic() - t0
    gate.release()
    assert exc.value.status_code == 504
    _assert_dialect_error_shape(dialect, exc.value, "timeout_error", "api_error")
    assert elapsed < 4.0


# ------------------------------------------------------------------------------ truncation


def _openai_stream_truncated_mid_call() -> recordings.Exchange:
    """Derived from the fantasy openai multi_tool stream: the second call's last argument
    fragment is dropped and the finish reason is ``length`` (as OpenAI reports a cut)."""
    ex = recordings.common("openai_chat", "multi_tool", True)[0]
    frames = ex.sse_frames()
    stop = stop_frame_index(ex)
    finish = frames[stop].replace(b'"finish_reason":"tool_calls"', b'"finish_reason":"length"')
    return ex.with_body(b"".join([*frames[: stop - 1], finish, *frames[stop + 1 :]]))


def _openai_body_truncated_mid_call() -> recordings.Exchange:
    ex = recordings.common("openai_chat", "multi_tool", False)[0]
    body = ex.json()
    body["choices"][0]["finish_reason"] = "length"
    body["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"] = '{"a": 2, '
    return ex.with_body(json.dumps(body).encode())


def _gemini_max_tokens(stream: bool) -> recordings.Exchange:
    """Derived from the fantasy gemini multi_tool recording: finishReason ``MAX_TOKENS``."""
    ex = recordings.common("gemini", "multi_tool", stream)[0]
    return ex.with_body(ex.body.replace(b'"finishReason": "STOP"', b'"finishReason": "MAX_TOKENS"'))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_anthropic_max_tokens_mid_tool_call_reaches_client_as_length_without_call(
    dialect: str, upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    ex = recordings.truncated_tool_call_sse()
    upstream.script(replay(ex, api="anthropic_messages"))
    tools = [
        {
            "name": "make_file",
            "description": "Write a file",
            "parameters": {
                "type": "object",
                "properties": {"filename": {"type": "string"}, "lines_of_text": {"type": "array"}},
            },
        }
    ]
    turn = ask(
        dialect,
        _client(dialect, oai, ant),
        model=MATRIX["anthropic_messages"][0],
        stream=True,
        messages=[user(dialect, "Write a tax guide to taxes.txt")],
        tools=tools,
        max_tokens=128,
    )

    assert turn.error is None, turn.error
    assert turn.text == recorded_text(ex, "anthropic_messages"), "text still streams"
    assert turn.calls == [], "a truncated tool call must never reach the client"
    assert turn.stop == "length"
    row = transcript_row(db_path, _rid(turn))
    assert _stop(row) == "length"
    assert [w["id"] for w in json.loads(row["withheld"])] == ["toolu_01EKqbqmZrGRXy18eN7m9kvY"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    ("api", "stream"),
    [("openai_chat", True), ("openai_chat", False), ("gemini", True), ("gemini", False)],
    ids=["openai_chat-stream", "openai_chat-nonstream", "gemini-stream", "gemini-nonstream"],
)
def test_length_stop_while_calling_tools_withholds_every_call(
    dialect: str, api: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    if api == "openai_chat":
        ex = _openai_stream_truncated_mid_call() if stream else _openai_body_truncated_mid_call()
    else:
        ex = _gemini_max_tokens(stream)
    upstream.script(replay(ex, api=api))
    turn = ask(
        dialect,
        _client(dialect, oai, ant),
        model=MATRIX[api][0],
        stream=stream,
        messages=[user(dialect, "Add and multiply the number 2 and 3")],
        tools=ADD_MULTIPLY,
    )

    assert turn.error is None, turn.error
    assert turn.calls == []
    assert turn.stop == "length"
    if not stream:
        h = {k.lower(): v for k, v in turn.headers.items()}
        assert h.get("x-turnstile-withheld-tool-calls"), "withheld calls are reported in a header"


def test_a_fallback_that_cannot_take_the_request_leaves_the_primarys_failure_as_the_answer(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    """The primary (Anthropic) fails; the backup (OpenAI Chat) cannot take the client's
    Anthropic-only ``container``: it is skipped, not tried, and the client gets the primary's
    5xx (retryable), not a 400 blaming its request."""
    upstream.script(http_error(500, ANTHROPIC_500, model="claude-primary"))
    with pytest.raises(anthropic.APIStatusError) as exc:
        ant.with_options(max_retries=0).messages.create(
            model=FALLBACK,
            max_tokens=64,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"container": "cntr_1"},
        )
    assert exc.value.status_code == 500
    assert len(upstream.requests()) == 1


def test_a_deployment_that_cannot_take_the_request_is_skipped_for_one_that_can(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    """The alias lists an OpenAI Chat deployment first; the client's Anthropic-only
    ``container`` goes to the Anthropic one after it, the first never tried."""
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    raw = ant.messages.with_raw_response.create(
        model=CHAT_FIRST,
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_body={"container": "cntr_1"},
    )
    assert raw.headers["x-turnstile-deployment"] == "an-primary"
    (got,) = upstream.requests()
    assert got.body["container"] == "cntr_1"
