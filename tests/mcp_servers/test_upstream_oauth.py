"""OAuth from the gateway to upstream MCP servers: an authorization server started in the test
(``oauth_issuer.py``) and the fixture server as an OAuth protected resource of it
(``fixture_server.py --oauth-issuer``), registered behind the gateway with the
client-credentials grant (configuration) and the authorization-code grant (admin API, an
"admin" following the authorization URL); tokens stored encrypted, renewed before expiry."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.fernet import Fernet
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import TextContent
from mcp_harness import ADMIN_KEY, HttpFixture, McpGateway, start_gateway
from oauth_issuer import TOKEN_EXCHANGE, Issuer, RegisteredClient
from standins.servers import GatewayServer, LoopThread

from mcp_servers.upstream_oauth import AuthorizationPrompt, renew_at

TOKEN_KEY = Fernet.generate_key().decode()
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    """The upstreams' authorization server; tokens live 4 s (renewed 2 s early)."""
    iss = Issuer(
        clients={
            "gateway-cc": RegisteredClient("cc-secret", scopes=("mcp",)),
            "gateway-delegate": RegisteredClient(
                "delegate-secret", grants=("client_credentials", TOKEN_EXCHANGE), scopes=("mcp",)
            ),
            "gateway-web": RegisteredClient(
                "web-secret", grants=("authorization_code", "refresh_token"), scopes=("mcp",)
            ),
        },
        token_ttl_s=4,
    )
    loop = LoopThread()
    server = GatewayServer(iss.app())
    loop.call(server.start())
    iss.url = server.url
    try:
        yield iss
    finally:
        loop.call(server.stop())
        loop.close()


@pytest.fixture(scope="module")
def upstreams(issuer: Issuer) -> Iterator[dict[str, HttpFixture]]:
    """Two OAuth-protected fixture servers over HTTP."""
    names = ("secure", "desk", "crm")
    ups = {name: HttpFixture(name, "--oauth-issuer", issuer.url) for name in names}
    try:
        yield ups
    finally:
        for up in ups.values():
            up.stop()


@pytest.fixture(scope="module")
def gw(
    issuer: Issuer, upstreams: dict[str, HttpFixture], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpGateway]:
    """The gateway with ``secure`` configured (client credentials); the admin API may add HTTP
    servers on loopback with the web client's secret."""
    spec = {
        "id": "secure",
        "transport": {
            "type": "streamable_http",
            "url": upstreams["secure"].url,
            "oauth": {
                "grant": "client_credentials",
                "client_id": "gateway-cc",
                "client_secret_env": "SECURE_CLIENT_SECRET",
                "issuer": issuer.url,
                "scope": "mcp",
            },
        },
    }
    env = {
        "SECURE_CLIENT_SECRET": "cc-secret",
        "WEB_CLIENT_SECRET": "web-secret",
        "TURNSTILE_MCP_TOKEN_KEY": TOKEN_KEY,
    }
    yield from start_gateway(
        tmp_path_factory.mktemp("upstream-oauth"),
        [spec],
        env=env,
        admin_servers={"url_hosts": ["127.0.0.1"], "env": ["WEB_CLIENT_SECRET"]},
    )


def _call(gw: McpGateway, tool: str, args: dict[str, Any] | None = None) -> str:
    async def run() -> str:
        async with Client(gw.mcp_url) as client:
            result = await client.call_tool(tool, args or {})
            assert not result.is_error, result
            block = result.content[0]
            assert isinstance(block, TextContent)
            return block.text

    return anyio.run(run)


def _upstream_token(gw: McpGateway, server: str) -> dict[str, Any]:
    seen = json.loads(_call(gw, f"{server}__headers"))
    token = seen["authorization"].removeprefix("Bearer ")
    return dict(jwt.decode(token, options={"verify_signature": False}))


def _stored(gw: McpGateway, server: str) -> dict[str, bytes]:
    with sqlite3.connect(gw.db_path) as db:
        rows = db.execute(
            "SELECT kind, ciphertext FROM mcp_oauth_secrets WHERE server = ?", (server,)
        ).fetchall()
    return {kind: bytes(blob) for kind, blob in rows}


def test_a_client_credentials_upstream_is_called_with_the_gateways_own_token(
    gw: McpGateway, issuer: Issuer, upstreams: dict[str, HttpFixture]
) -> None:
    claims = _upstream_token(gw, "secure")
    assert claims["client_id"] == "gateway-cc" and claims["aud"] == upstreams["secure"].url
    assert claims["iss"] == issuer.url and claims["scope"] == "mcp"
    assert any(
        g["grant"] == "client_credentials" and g["aud"] == upstreams["secure"].url for g in issuer.grants
    )


def test_upstream_tokens_are_stored_encrypted(gw: McpGateway) -> None:
    stored = _stored(gw, "secure")
    seen = json.loads(_call(gw, "secure__headers"))["authorization"].removeprefix("Bearer ")
    assert "tokens" in stored
    assert seen.encode() not in stored["tokens"] and b"access_token" not in stored["tokens"]
    clear = json.loads(Fernet(TOKEN_KEY.encode()).decrypt(stored["tokens"]))
    assert clear["token"]["access_token"] and clear["expires_at"] > time.time() - 60


def test_a_token_is_renewed_before_it_expires(gw: McpGateway, issuer: Issuer) -> None:
    first = _upstream_token(gw, "secure")
    deadline = time.monotonic() + 15
    while True:
        now = time.time()
        claims = _upstream_token(gw, "secure")
        if claims["jti"] != first["jti"]:
            break
        assert time.monotonic() < deadline, "the token was never renewed"
    assert now < first["exp"], "renewed only after the old token had expired"


def test_an_authorization_code_upstream_waits_for_an_admin_then_refreshes(
    gw: McpGateway, issuer: Issuer, upstreams: dict[str, HttpFixture]
) -> None:
    callback = f"{gw.url}/mcp/oauth/callback"
    issuer.clients["gateway-web"].redirect_uris = (callback,)
    spec = {
        "id": "desk",
        "transport": {
            "type": "streamable_http",
            "url": upstreams["desk"].url,
            "oauth": {
                "grant": "authorization_code",
                "client_id": "gateway-web",
                "client_secret_env": "WEB_CLIENT_SECRET",
                "redirect_uri": callback,
                "scope": "mcp",
            },
        },
    }
    added = httpx.post(f"{gw.url}/admin/mcp/servers", json=spec, headers=ADMIN, timeout=10)
    assert added.status_code == 201, added.text
    deadline = time.monotonic() + 20
    url = None
    while url is None:
        status = httpx.get(f"{gw.url}/admin/mcp/servers/desk", headers=ADMIN, timeout=10).json()["status"]
        url = (status.get("oauth") or {}).get("authorization_url")
        assert time.monotonic() < deadline, status
    assert url.startswith(f"{issuer.url}/authorize?") and "code_challenge_method=S256" in url
    assert "waiting for OAuth authorization" in (status.get("reason") or "")
    health = httpx.get(f"{gw.url}/health", timeout=10).text
    assert url not in health and "waiting_for_authorization" in health  # the URL is for admins only
    assert httpx.get(f"{gw.url}/mcp/oauth/callback?code=x&state=forged", timeout=10).status_code == 400
    answered = httpx.get(url, follow_redirects=True, timeout=10)  # the admin clicks "allow"
    assert answered.status_code == 200 and answered.json() == {"server": "desk", "authorized": True}
    assert gw.loop.call(gw.registry.upstream("desk").wait_ready(20), timeout=30)
    claims = _upstream_token(gw, "desk")
    assert claims["client_id"] == "gateway-web" and claims["aud"] == upstreams["desk"].url
    deadline = time.monotonic() + 15
    while not any(g["grant"] == "refresh_token" and g["client"] == "gateway-web" for g in issuer.grants):
        _call(gw, "desk__echo", {"text": "again"})
        assert time.monotonic() < deadline, "the refresh token was never used"
    assert "desk" not in {s["id"] for s in gw.registry.status()["servers"] if s["state"] != "ready"}


def test_renewal_comes_a_margin_early_but_at_most_half_a_lifetime() -> None:
    assert renew_at(None, None, 60) is None
    assert renew_at(1000.0, 3600.0, 60) == 940.0
    assert renew_at(1000.0, 4.0, 60) == 998.0


def test_the_authorization_prompt_takes_only_its_own_state() -> None:
    async def run() -> None:
        prompt = AuthorizationPrompt("s")
        await prompt.redirect("https://as.example/authorize?state=abc&client_id=x")
        assert prompt.state == "abc" and not prompt.complete("code", "other")
        assert prompt.complete("code", "abc")
        assert (await prompt.callback()).code == "code"
        assert prompt.url is None

    anyio.run(run)


@pytest.fixture(scope="module")
def delegating_gw(
    issuer: Issuer, upstreams: dict[str, HttpFixture], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpGateway]:
    """A gateway whose ``/mcp`` takes the issuer's JWTs, with ``crm`` acting for each caller
    (RFC 8693 token exchange, required)."""
    spec = {
        "id": "crm",
        "transport": {
            "type": "streamable_http",
            "url": upstreams["crm"].url,
            "oauth": {
                "grant": "client_credentials",
                "client_id": "gateway-delegate",
                "client_secret_env": "DELEGATE_SECRET",
                "issuer": issuer.url,
                "token_exchange": {"scope": "mcp", "required": True},
            },
        },
    }
    env = {"DELEGATE_SECRET": "delegate-secret", "TURNSTILE_MCP_TOKEN_KEY": TOKEN_KEY}
    yield from start_gateway(
        tmp_path_factory.mktemp("delegating"),
        [spec],
        env=env,
        authorization={"issuer": issuer.url, "scopes": {"mcp": ["*"]}},
    )


def test_a_delegating_upstream_is_called_for_the_user_with_an_exchanged_token(
    delegating_gw: McpGateway, issuer: Issuer, upstreams: dict[str, HttpFixture]
) -> None:
    user_token = issuer.mint(aud=delegating_gw.mcp_url, scope="mcp", client_id="chat-app", sub="alice")

    async def run() -> str:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {user_token}"})
        async with Client(streamable_http_client(delegating_gw.mcp_url, http_client=http)) as client:
            result = await client.call_tool("crm__headers", {})
            block = result.content[0]
            assert isinstance(block, TextContent) and not result.is_error, result
            return block.text

    seen = json.loads(anyio.run(run))["authorization"].removeprefix("Bearer ")
    assert seen != user_token  # the user's token for the gateway never goes upstream
    claims = jwt.decode(seen, options={"verify_signature": False})
    assert claims["sub"] == "alice" and claims["act"] == {"sub": "gateway-delegate"}
    assert claims["aud"] == upstreams["crm"].url
    exchanged = [g for g in issuer.grants if g["grant"] == TOKEN_EXCHANGE]
    assert exchanged and exchanged[-1]["aud"] == upstreams["crm"].url
