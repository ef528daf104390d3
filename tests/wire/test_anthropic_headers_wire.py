"""The client's ``anthropic-beta`` and ``anthropic-version`` through the gateway (issue 14 item 3):
merged into what reaches an Anthropic upstream, filtered by ``anthropic.betas``, not forwarded
to another wire API (``x-turnstile-dropped: anthropic-beta`` and a transcript note instead), and
the client's own credentials never forwarded anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from standins.tool_answers import text_answer
from standins.topology import FALLBACK, KEYS
from standins.upstream import UpstreamStandin, http_error, replay
from standins.wirekit import transcript_row

from gateway.config import AnthropicHeaders

PROMPT = [{"role": "user", "content": "hello"}]
BETAS = "context-1m-2025-08-07, interleaved-thinking-2025-05-14"


def _create(ant: anthropic.Anthropic, model: str, **headers: str) -> Any:
    return ant.messages.with_raw_response.create(
        model=model, max_tokens=50, messages=PROMPT, extra_headers=headers
    )


def test_client_betas_and_version_reach_an_anthropic_upstream_and_its_credentials_do_not(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, policy: AnthropicHeaders
) -> None:
    policy.versions = ["2023-06-01", anthropic._constants.ANTHROPIC_API_VERSION]
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=False)))
    raw = _create(ant, "an", **{"anthropic-beta": BETAS + ",structured-outputs-2025-11-13"})
    assert raw.http_response.status_code == 200
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.headers["anthropic-beta"] == "context-1m-2025-08-07,interleaved-thinking-2025-05-14"
    assert (
        got.headers["anthropic-version"] == anthropic._constants.ANTHROPIC_API_VERSION
    )  # allowed: the client's
    assert got.headers["x-api-key"] == KEYS["anthropic_messages"]  # the deployment's key
    assert "authorization" not in got.headers


@pytest.mark.parametrize("target", ["oa", "ge"])
def test_a_beta_toward_another_wire_api_is_not_forwarded_and_is_reported(
    target: str, upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    api = {"oa": "openai_chat", "ge": "gemini"}[target]
    upstream.script(replay(text_answer(api, "hi", stream=False)))
    raw = _create(ant, target, **{"anthropic-beta": BETAS})
    assert raw.http_response.status_code == 200
    assert raw.headers["x-turnstile-dropped"] == "anthropic-beta"
    (got,) = upstream.requests()
    assert not {"anthropic-beta", "anthropic-version", "x-api-key"} & set(got.headers) - (
        {"x-api-key"} if api == "anthropic_messages" else set()
    )
    assert "sk-ant-client-key" not in json.dumps(got.headers)
    row = transcript_row(db_path, raw.headers["x-turnstile-request-id"])
    notes = [n for n in json.loads(row["repairs"]) if n.get("kind") == "dropped"]
    assert notes == [
        {
            "kind": "dropped",
            "field": "anthropic-beta",
            "values": ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14"],
            "deployment": target,
            "reason": f"anthropic-beta has no meaning for the {api} wire API",
        }
    ]


@pytest.fixture
def policy(wire_servers: dict[str, Any]) -> Iterator[AnthropicHeaders]:
    """The running gateway's ``anthropic`` settings, restored after the test."""
    cfg: AnthropicHeaders = wire_servers["gateway"].app.state.gateway.config.anthropic
    saved = cfg.betas.model_copy(), list(cfg.versions)
    yield cfg
    cfg.betas.allow, cfg.betas.deny = saved[0].allow, saved[0].deny
    cfg.versions = saved[1]


def test_the_deny_list_and_the_version_list_decide_what_reaches_anthropic(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, policy: AnthropicHeaders
) -> None:
    policy.betas.deny = ["interleaved-thinking-2025-05-14"]
    policy.versions = []
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=True)))
    with ant.messages.with_streaming_response.create(
        model="an",
        max_tokens=50,
        messages=PROMPT,
        stream=True,
        extra_headers={"anthropic-beta": BETAS},
    ) as resp:
        resp.read()
        dropped = resp.headers.get("x-turnstile-dropped")
    assert dropped == "anthropic-beta"
    (got,) = upstream.requests()
    assert got.headers["anthropic-beta"] == "context-1m-2025-08-07"
    assert (
        got.headers["anthropic-version"] == "2023-06-01"
    )  # the SDK's version is not listed: the deployment's own


def test_an_openai_client_credential_never_reaches_an_anthropic_upstream(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "hi", stream=False)))
    oai.chat.completions.create(model="an", messages=PROMPT, max_tokens=50)
    (got,) = upstream.requests()
    assert "authorization" not in got.headers
    assert got.headers["x-api-key"] == KEYS["anthropic_messages"]
    assert "anthropic-beta" not in got.headers


def test_after_a_fallback_the_dropped_header_names_what_the_answering_deployment_lost(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    """``wire-fallback``: the Anthropic primary (which got the betas) fails, the OpenAI backup
    answers without them: the answer says so, and the row notes it for the backup only."""
    upstream.script(
        http_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
        replay(text_answer("openai_chat", "hi", stream=False), api="openai_chat"),
    )
    raw = _create(ant, FALLBACK, **{"anthropic-beta": BETAS})
    assert raw.headers["x-turnstile-deployment"] == "oa-backup"
    assert raw.headers["x-turnstile-dropped"] == "anthropic-beta"
    primary, backup = upstream.requests()
    assert primary.headers["anthropic-beta"] == "context-1m-2025-08-07,interleaved-thinking-2025-05-14"
    assert "anthropic-beta" not in backup.headers
    row = transcript_row(db_path, raw.headers["x-turnstile-request-id"])
    notes = [n for n in json.loads(row["repairs"]) if n.get("kind") == "dropped"]
    assert [n["deployment"] for n in notes] == ["oa-backup"]


CLAUDE_CODE_HEADERS = {"x-claude-code-session-id": "0b5c-session", "x-app": "cli"}


def test_claude_codes_session_and_app_headers_reach_an_anthropic_upstream_only(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(
        replay(text_answer("anthropic_messages", "hi", stream=False)),
        replay(text_answer("openai_chat", "hi", stream=False)),
    )
    for model in ("an", "oa"):
        raw = _create(ant, model, **CLAUDE_CODE_HEADERS)
        assert raw.http_response.status_code == 200 and "x-turnstile-dropped" not in raw.headers
    to_claude, to_openai = upstream.requests()
    assert {k: to_claude.headers.get(k) for k in CLAUDE_CODE_HEADERS} == CLAUDE_CODE_HEADERS
    assert not set(CLAUDE_CODE_HEADERS) & set(to_openai.headers)


@pytest.mark.parametrize("target", ["an", "oa"])
def test_a_version_the_gateway_does_not_speak_is_replaced_and_named(
    target: str, upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    api = {"an": "anthropic_messages", "oa": "openai_chat"}[target]
    upstream.script(replay(text_answer(api, "hi", stream=False)))
    raw = _create(ant, target, **{"anthropic-version": "2099-01-01"})
    assert raw.http_response.status_code == 200
    assert raw.headers["x-turnstile-dropped"] == "anthropic-version"
    (got,) = upstream.requests()
    assert "2099-01-01" not in json.dumps(got.headers)
    if target == "an":
        assert got.headers["anthropic-version"] == "2023-06-01"  # the deployment's own
    row = transcript_row(db_path, raw.headers["x-turnstile-request-id"])
    (note,) = [n for n in json.loads(row["repairs"]) if n.get("kind") == "dropped"]
    assert (note["field"], note["values"], note["deployment"]) == (
        "anthropic-version",
        ["2099-01-01"],
        target,
    )
