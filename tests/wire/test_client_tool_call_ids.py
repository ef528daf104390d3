"""Tool-call ids from a client that no upstream could take as ids (empty, whitespace only,
control characters, longer than any upstream allows) are refused: HTTP 400 in the client's
dialect naming every location, zero upstream requests, one transcript row, under both pairing
policies. Ids that only break one upstream's character rule still go through, rewritten."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins import recordings
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import transcript_count, transcript_row

from gateway.config import GuardPolicy

BAD_IDS = {
    "empty": "",
    "whitespace": " \t ",
    "newline": "call_1\nx",
    "nul": "call\x00",
    "too-long": "c" * 257,
    "invisible": "\u200b\u2060",
    "too-many-bytes": "\U0001f600" * 200,
}


@pytest.fixture(params=["reject", "repair"])
def pairing(request: pytest.FixtureRequest, wire_servers: dict[str, Any]) -> Iterator[str]:
    """The wire gateway's pairing policy for one test (restored afterwards)."""
    pipeline = wire_servers["gateway"].app.state.pipeline
    before = pipeline.policy
    pipeline.policy = before.model_copy(update={"pairing": request.param})
    assert isinstance(pipeline.policy, GuardPolicy)
    yield str(request.param)
    pipeline.policy = before


def _history(dialect: str, call_id: str, result_id: str) -> tuple[str, dict[str, Any]]:
    if dialect == "openai":
        return "/v1/chat/completions", {
            "model": MATRIX["openai_chat"][0],
            "messages": [
                {"role": "user", "content": "add 2 and 3"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": call_id, "type": "function", "function": {"name": "add", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": result_id, "content": "5"},
            ],
        }
    return "/v1/messages", {
        "model": MATRIX["anthropic_messages"][0],
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "add 2 and 3"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call_id, "name": "add", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": result_id, "content": "5"}]},
        ],
    }


LOCATIONS = {
    "openai": ("messages[1].tool_calls[0].id", "messages[2].tool_call_id"),
    "anthropic": ("messages[1].content[0].id", "messages[2].content[0].tool_use_id"),
}


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", sorted(BAD_IDS))
def test_a_tool_call_id_no_upstream_accepts_is_refused_naming_each_location(
    dialect: str, kind: str, pairing: str, upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    path, body = _history(dialect, BAD_IDS[kind], BAD_IDS[kind])
    resp = httpx.post(gateway_url + path, json=body, timeout=15)

    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["type"] == "invalid_request_error"
    call_loc, result_loc = LOCATIONS[dialect]
    assert call_loc in err["message"] and result_loc in err["message"], err["message"]
    assert upstream.received == [], "nothing goes upstream"
    rid = resp.headers["x-turnstile-request-id"]
    assert transcript_row(db_path, rid)["status"] == 400
    assert transcript_count(db_path, rid) == 1, "one transcript row"


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_only_the_bad_id_is_named_when_the_other_is_fine(
    dialect: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    path, body = _history(dialect, "call_ok", "")
    resp = httpx.post(gateway_url + path, json=body, timeout=15)

    assert resp.status_code == 400
    message = resp.json()["error"]["message"]
    call_loc, result_loc = LOCATIONS[dialect]
    assert result_loc in message and call_loc not in message
    assert upstream.received == []


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_an_id_outside_one_upstreams_charset_is_still_rewritten_and_sent(
    dialect: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(
        replay(recordings.common("anthropic_messages", "simple", False)[0], api="anthropic_messages")
    )
    path, body = _history(dialect, "call.with:dots/and-调用", "call.with:dots/and-调用")
    body["model"] = MATRIX["anthropic_messages"][0]
    body.setdefault("max_tokens", 100)
    resp = httpx.post(gateway_url + path, json=body, timeout=15)

    assert resp.status_code == 200, resp.text
    sent = upstream.requests("anthropic_messages")[0].body["messages"]
    use_id = sent[1]["content"][0]["id"]
    assert use_id == sent[2]["content"][0]["tool_use_id"]
    assert use_id != "call.with:dots/and-调用" and all(c.isalnum() or c in "_-" for c in use_id)
