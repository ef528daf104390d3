"""The upstream stand-in's OpenAI Responses endpoint (``POST /v1/responses``): it replays the
recordings byte for byte and refuses what the real API refuses, in OpenAI's error shape
(:mod:`standins.responses_rules`)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standins import recordings
from standins.upstream import UpstreamStandin, cut_before_stop, replay
from standins.wirekit import responses_output

AUTH = {"authorization": "Bearer k"}
USER = {"role": "user", "content": "hi"}


def _post(
    upstream: UpstreamStandin, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    return httpx.post(f"{upstream.url}/v1/responses", json=body, headers=AUTH if headers is None else headers)


def test_replays_a_recorded_stream_byte_for_byte(upstream: UpstreamStandin) -> None:
    ex = recordings.common("openai_responses", "simple", True)[0]
    upstream.script(replay(ex, api="openai_responses"))
    resp = _post(upstream, {"model": "gpt-4o-mini", "input": [USER], "stream": True, "store": False})
    assert resp.status_code == 200 and resp.content == ex.body
    (rec,) = upstream.requests()
    assert (rec.api, rec.model, rec.stream) == ("openai_responses", "gpt-4o-mini", True)


def test_cut_before_stop_drops_response_completed(upstream: UpstreamStandin) -> None:
    ex = recordings.common("openai_responses", "simple", True)[0]
    upstream.script(cut_before_stop(ex))
    resp = _post(upstream, {"model": "gpt-4o-mini", "input": [USER], "stream": True})
    assert b"response.completed" not in resp.content and ex.body.startswith(resp.content)


def _refused(resp: httpx.Response, status: int = 400) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    return dict(err)


def test_unknown_parameter_is_refused_like_openai(upstream: UpstreamStandin) -> None:
    err = _refused(_post(upstream, {"model": "m", "input": [USER], "messages": []}))
    assert err["message"] == "Unknown parameter: 'messages'." and err["code"] == "unknown_parameter"


def test_missing_key_is_401(upstream: UpstreamStandin) -> None:
    assert _post(upstream, {"model": "m", "input": "hi"}, headers={}).status_code == 401


def test_function_call_output_must_follow_its_function_call(upstream: UpstreamStandin) -> None:
    orphan = {"type": "function_call_output", "call_id": "call_x", "output": "1"}
    err = _refused(_post(upstream, {"model": "m", "input": [USER, orphan]}))
    assert err["message"] == "No tool call found for function call output with call_id call_x."
    call = {"type": "function_call", "call_id": "call_x", "name": "add", "arguments": "{}"}
    upstream.script(replay(recordings.common("openai_responses", "simple", False)[0], api="openai_responses"))
    assert _post(upstream, {"model": "m", "input": [USER, call, orphan]}).status_code == 200


def test_encrypted_reasoning_is_accepted_only_as_issued_for_that_model(upstream: UpstreamStandin) -> None:
    first = recordings.responses_thinking(False)[0]
    upstream.script(replay(first, api="openai_responses"))
    assert _post(upstream, {"model": "gpt-5", "input": [USER], "store": False}).status_code == 200
    issued = next(i for i in responses_output(first) if i["type"] == "reasoning")["encrypted_content"]
    item = {"type": "reasoning", "summary": [], "encrypted_content": issued}
    upstream.script(replay(recordings.responses_thinking(False)[1], api="openai_responses"))
    assert _post(upstream, {"model": "gpt-5", "input": [USER, item], "store": False}).status_code == 200
    other_model = _refused(_post(upstream, {"model": "gpt-5-mini", "input": [USER, item], "store": False}))
    assert other_model["code"] == "invalid_encrypted_content"
    forged = _refused(
        _post(upstream, {"model": "gpt-5", "input": [USER, item | {"encrypted_content": "gAAAAx"}]})
    )
    assert "could not be verified" in forged["message"]
    bare = _refused(
        _post(
            upstream,
            {
                "model": "gpt-5",
                "input": [USER, {"type": "reasoning", "id": "rs_1", "summary": []}],
                "store": False,
            },
        )
    )
    assert "not persisted" in bare["message"]


@pytest.mark.parametrize("strict", [None, True])
def test_strict_function_schemas_must_be_closed(strict: bool | None, upstream: UpstreamStandin) -> None:
    tool: dict[str, Any] = {
        "type": "function",
        "name": "add",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    }
    if strict is not None:
        tool["strict"] = strict
    err = _refused(_post(upstream, {"model": "m", "input": "hi", "tools": [tool]}))
    assert err["message"].startswith("Invalid schema for function 'add'")


def test_content_part_types_and_budget_minimum(upstream: UpstreamStandin) -> None:
    bad_part = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert "Supported values are" in _refused(_post(upstream, {"model": "m", "input": [bad_part]}))["message"]
    low = _refused(_post(upstream, {"model": "m", "input": "hi", "max_output_tokens": 5}))
    assert low["param"] == "max_output_tokens"


def test_a_model_without_reasoning_refuses_encrypted_content_and_effort(upstream: UpstreamStandin) -> None:
    enc = _refused(
        _post(upstream, {"model": "gpt-4o-mini", "input": "hi", "include": ["reasoning.encrypted_content"]})
    )
    assert (
        enc["message"] == "Encrypted content is not supported with this model." and enc["param"] == "include"
    )
    effort = _refused(
        _post(upstream, {"model": "gpt-4.1-mini", "input": "hi", "reasoning": {"effort": "low"}})
    )
    assert effort["param"] == "reasoning.effort"
