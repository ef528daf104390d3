"""Hostile input to the stored-response surface: a client naming a stored response (or a
message thread) as its own session must not rewrite it.

A stored response is the session of its id (``gateway/sessions/responses.py``); its answer is
read back from that session's leaf. A Chat client sending ``x-turnstile-session: resp_…`` (or
``metadata.turnstile_session``, or ``user: "session:resp_…"``) would append its own turn there
and change what ``GET /v1/responses/{id}`` returns, so ids of the gateway's own prefixes are
refused as client-bound sessions.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

API = "openai_chat"


def _bind(how: str, sid: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(headers, body fields) binding a Chat turn to session ``sid`` the way ``how`` names."""
    if how == "header":
        return {"x-turnstile-session": sid}, {}
    if how == "metadata":
        return {}, {"metadata": {"turnstile_session": sid}}
    return {}, {"user": f"session:{sid}"}


@pytest.mark.parametrize("how", ["header", "metadata", "user"])
def test_a_client_bound_session_cannot_be_a_stored_response(
    how: str, upstream: UpstreamStandin, oai: Any, gateway_url: str
) -> None:
    name = MATRIX[API][0]
    upstream.script(replay(text_answer(API, "A1", stream=False), api=API))
    stored = oai.responses.create(model=name, input="Q1")
    headers, extra = _bind(how, stored.id)
    body = {"model": name, "messages": [{"role": "user", "content": "hijack"}], **extra}
    got = httpx.post(f"{gateway_url}/v1/chat/completions", json=body, headers=headers, timeout=15)
    assert got.status_code == 400, got.text
    error = got.json()["error"]
    assert "resp_" in error["message"] and error["param"] in (
        "x-turnstile-session",
        "metadata.turnstile_session",
        "user",
    )
    assert len(upstream.requests()) == 1, "the refused turn never went upstream"
    assert oai.responses.retrieve(stored.id).output_text == "A1"


def test_a_client_bound_session_cannot_be_a_message_thread(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    name = MATRIX[API][0]
    got = httpx.post(
        f"{gateway_url}/v1/chat/completions",
        json={"model": name, "messages": [{"role": "user", "content": "x"}]},
        headers={"x-turnstile-session": "msg_" + "a" * 32},
        timeout=15,
    )
    assert got.status_code == 400 and got.json()["error"]["param"] == "x-turnstile-session"
    assert upstream.requests() == []


def test_a_session_fork_cannot_be_named_as_a_stored_response(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    name = MATRIX[API][0]
    upstream.script(replay(text_answer(API, "A1", stream=False), api=API))
    made = httpx.post(
        f"{gateway_url}/v1/chat/completions",
        json={"model": name, "messages": [{"role": "user", "content": "x"}]},
        headers={"x-turnstile-session": "plain-hostile-1"},
        timeout=15,
    )
    assert made.status_code == 200, made.text
    fake = "resp_" + "f" * 32
    got = httpx.post(f"{gateway_url}/v1/sessions/plain-hostile-1/fork", json={"session_id": fake}, timeout=15)
    assert got.status_code == 400 and got.json()["error"]["param"] == "session_id"
    assert httpx.get(f"{gateway_url}/v1/responses/{fake}", timeout=15).status_code == 404


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"stream": "true"}, "stream"),
        ({"starting_after": "3"}, "starting_after"),
        ({"include[]": "reasoning.encrypted_content"}, "include[]"),
        ({"bogus": "1"}, "bogus"),
    ],
    ids=["stream", "starting_after", "include", "unknown"],
)
def test_retrieve_query_parameters_it_cannot_honour_are_refused_by_name(
    query: dict[str, str], param: str, upstream: UpstreamStandin, oai: Any, gateway_url: str
) -> None:
    """``client.responses.retrieve(id, stream=True)`` expects the stored response's events:
    a JSON body the SDK cannot read as them is a 400 naming the parameter, not a silent 200."""
    name = MATRIX[API][0]
    upstream.script(replay(text_answer(API, "A1", stream=False), api=API))
    stored = oai.responses.create(model=name, input="Q1")
    got = httpx.get(f"{gateway_url}/v1/responses/{stored.id}", params=query, timeout=15)
    assert got.status_code == 400, got.text[:200]
    assert got.json()["error"]["param"] == param
    plain = httpx.get(f"{gateway_url}/v1/responses/{stored.id}", params={"stream": "false"}, timeout=15)
    assert plain.status_code == 200
