"""A web page cannot spend a keyless loopback gateway: the real gateway (on 127.0.0.1, no keys)
refuses a cross-site ``POST`` a page can send without asking (``text/plain``, its ``Origin``) and
a request through a rebound name, in the client's dialect and before anything goes upstream —
while the official SDKs, which send neither, are served; ``/mcp`` refuses the same name."""

from __future__ import annotations

import httpx
import openai
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import OPENAI, UpstreamStandin, replay

BODY = b'{"model": "%s", "messages": [{"role": "user", "content": "spend it"}]}' % MATRIX[OPENAI][0].encode()


def test_a_web_pages_simple_cross_site_post_is_refused_and_nothing_goes_upstream(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    page = {"origin": "https://evil.example", "content-type": "text/plain;charset=UTF-8"}
    got = httpx.post(f"{gateway_url}/v1/chat/completions", content=BODY, headers=page, timeout=10)
    assert got.status_code == 403 and got.json()["error"]["param"] == "Origin"
    blob = httpx.post(f"{gateway_url}/v1/chat/completions", content=BODY, timeout=10)  # fetch(Blob): no type
    assert blob.status_code == 415
    assert upstream.received == []


def test_a_rebound_name_is_refused_on_the_model_api_and_on_mcp_alike(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    rebound = {"host": "attacker.example", "content-type": "application/json"}
    chat = httpx.post(f"{gateway_url}/v1/chat/completions", content=BODY, headers=rebound, timeout=10)
    anthropic = httpx.post(f"{gateway_url}/v1/messages", content=b"{}", headers=rebound, timeout=10)
    mcp = httpx.post(f"{gateway_url}/mcp", content=b"{}", headers=rebound, timeout=10)
    assert chat.status_code == anthropic.status_code == mcp.status_code == 421
    assert anthropic.json()["type"] == "error"  # Anthropic's envelope
    assert upstream.received == []


def test_the_sdks_are_served_as_before(upstream: UpstreamStandin, oai: openai.OpenAI) -> None:
    upstream.script(replay(text_answer(OPENAI, "served", stream=False), api=OPENAI))
    got = oai.chat.completions.create(model=MATRIX[OPENAI][0], messages=[{"role": "user", "content": "hi"}])
    assert got.choices[0].message.content == "served"
