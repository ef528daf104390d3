"""``/mcp`` as an OAuth 2.1 protected resource: an authorization server started in the test
(``oauth_issuer.py``) issues JWTs; the ``mcp`` SDK's own OAuth client finds it from the 401's
metadata; wrong audience, expiry, issuer, key and scope are refused; virtual keys still work;
the gateway's token never reaches an upstream."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.types import TextContent
from mcp_harness import HttpFixture, fixture_spec
from oauth_issuer import Issuer, RegisteredClient
from standins.keyed import demo_config, keyed_gateway, make_key
from standins.servers import GatewayServer, LoopThread

from gateway.errors import ConfigError
from mcp_servers.config import McpAuthorization, McpConfig
from mcp_servers.http_api import open_mcp
from mcp_servers.oauth_resource import BearerRefused, OAuthResource, metadata_url, token_scopes

SCOPES = {"mcp:alpha": ["alpha__*"], "mcp:all": ["*"]}


class MemoryStorage(TokenStorage):
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    """The authorization server, served on loopback."""
    iss = Issuer(
        clients={
            "alpha-agent": RegisteredClient("alpha-secret", scopes=("mcp:alpha",)),
            "ops-agent": RegisteredClient("ops-secret", scopes=("mcp:all", "other")),
        }
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
def gw(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A gateway requiring virtual keys, with ``mcp.authorization`` for the issuer, in front of
    two stdio fixture servers (``alpha``, ``beta``) and one over HTTP (``web``)."""
    web = HttpFixture("web")
    tmp = tmp_path_factory.mktemp("oauth-resource")
    mcp = {
        "servers": [
            fixture_spec("alpha"),
            fixture_spec("beta"),
            {"id": "web", "transport": {"type": "streamable_http", "url": web.url}},
        ],
        "authorization": {"issuer": issuer.url, "scopes": SCOPES},
    }
    try:
        with keyed_gateway(demo_config(tmp / "gw.db", mcp=mcp), mcp_ready_s=30) as running:
            running["mcp_url"] = running["url"] + "/mcp"
            yield running
    finally:
        web.stop()


def _post_mcp(gw: dict[str, Any], token: str | None) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    return httpx.post(gw["mcp_url"], json=body, headers=headers, timeout=10)


def _with_token(gw: dict[str, Any], token: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(gw["mcp_url"], http_client=http))


def test_a_client_without_a_token_gets_401_whose_metadata_leads_to_the_issuer(
    gw: dict[str, Any], issuer: Issuer
) -> None:
    refused = _post_mcp(gw, None)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    found = re.search(r'resource_metadata="([^"]+)"', challenge)
    assert challenge.startswith("Bearer ") and found is not None
    assert found.group(1) == f"{gw['url']}/.well-known/oauth-protected-resource/mcp"
    for url in (found.group(1), f"{gw['url']}/.well-known/oauth-protected-resource"):
        doc = httpx.get(url, timeout=10).json()
        assert doc["resource"] == gw["mcp_url"]
        assert doc["authorization_servers"] == [issuer.url]
        assert doc["scopes_supported"] == sorted(SCOPES)
        assert doc["bearer_methods_supported"] == ["header"]
    meta = httpx.get(f"{issuer.url}/.well-known/oauth-authorization-server", timeout=10).json()
    assert meta["issuer"] == issuer.url and meta["token_endpoint"] == f"{issuer.url}/token"


def test_the_sdk_oauth_client_discovers_the_issuer_and_sees_its_scopes_tools(
    gw: dict[str, Any], issuer: Issuer
) -> None:
    async def run() -> tuple[set[str], str]:
        provider = ClientCredentialsOAuthProvider(
            server_url=gw["mcp_url"],
            storage=MemoryStorage(),
            client_id="alpha-agent",
            client_secret="alpha-secret",
            scope="mcp:alpha",
            issuer=issuer.url,
        )
        http = create_mcp_http_client(auth=provider)
        async with Client(streamable_http_client(gw["mcp_url"], http_client=http)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("alpha__echo", {"text": "hi"})
            before = len(issuer.grants)
            # outside its scopes: a 403 scope challenge, the SDK steps up once, the issuer grants
            # this client no more, and the call fails
            with pytest.raises(Exception):  # noqa: B017 - the SDK's step-up error type is its own
                await client.call_tool("beta__echo", {"text": "hi"})
            assert len(issuer.grants) > before
            block = result.content[0]
            assert isinstance(block, TextContent)
            return tools, block.text

    tools, text = anyio.run(run)
    assert tools and all(t.startswith("alpha__") for t in tools)
    assert "hi" in text
    grant = issuer.grants[-1]
    assert grant["client"] == "alpha-agent" and grant["aud"] == gw["mcp_url"]  # RFC 8707 resource


def test_a_token_with_every_scope_sees_every_server(gw: dict[str, Any], issuer: Issuer) -> None:
    token = issuer.mint(aud=gw["mcp_url"], scope="mcp:all", client_id="ops-agent")

    async def run() -> set[str]:
        async with _with_token(gw, token) as client:
            return {t.name.split("__")[0] for t in (await client.list_tools()).tools}

    assert anyio.run(run) == {"alpha", "beta", "web"}


@pytest.mark.parametrize(
    "case",
    [
        "wrong audience",
        "expired",
        "other issuer",
        "unknown key",
        "unknown key named outside ASCII",
        "forged signature",
        "not a token",
    ],
)
def test_bad_tokens_are_refused_with_invalid_token(gw: dict[str, Any], issuer: Issuer, case: str) -> None:
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    aud = gw["mcp_url"]
    token = {
        "wrong audience": lambda: issuer.mint(aud="http://other.example/mcp", scope="mcp:all"),
        "expired": lambda: issuer.mint(aud=aud, scope="mcp:all", ttl_s=-120),
        "other issuer": lambda: issuer.mint(aud=aud, scope="mcp:all", issuer="http://evil.example"),
        "unknown key": lambda: issuer.mint(aud=aud, scope="mcp:all", kid="nope", key=other_key),
        # echoed in error_description: a header carries printable ASCII only (was a 500)
        "unknown key named outside ASCII": lambda: issuer.mint(
            aud=aud, scope="mcp:all", kid="\u2603" + "k" * 5000, key=other_key
        ),
        "forged signature": lambda: issuer.mint(aud=aud, scope="mcp:all", key=other_key),
        "not a token": lambda: "a.b.c",
    }[case]()
    refused = _post_mcp(gw, token)
    assert refused.status_code == 401, refused.text
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    assert len(refused.headers["www-authenticate"]) < 1000


def test_a_token_without_a_configured_scope_is_refused_403_insufficient_scope(
    gw: dict[str, Any], issuer: Issuer
) -> None:
    refused = _post_mcp(gw, issuer.mint(aud=gw["mcp_url"], scope="other"))
    assert refused.status_code == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="mcp:all mcp:alpha"' in challenge
    assert refused.json()["error"] == "insufficient_scope"


def test_virtual_keys_are_accepted_as_bearer_tokens_and_unknown_ones_refused(gw: dict[str, Any]) -> None:
    _, secret = make_key(gw["url"])

    async def run() -> int:
        async with _with_token(gw, secret) as client:
            return len((await client.list_tools()).tools)

    assert anyio.run(run) > 0
    refused = _post_mcp(gw, "tsk-" + "0" * 43)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert _post_mcp(gw, "just-some-string").status_code == 401


def test_the_gateways_token_never_reaches_an_upstream(gw: dict[str, Any], issuer: Issuer) -> None:
    token = issuer.mint(aud=gw["mcp_url"], scope="mcp:all", client_id="ops-agent")

    async def run() -> str:
        async with _with_token(gw, token) as client:
            result = await client.call_tool("web__headers", {})
            block = result.content[0]
            assert isinstance(block, TextContent)
            return block.text

    seen = anyio.run(run)
    assert token not in seen and "authorization" not in seen


def test_the_key_set_is_fetched_once_and_again_for_an_unknown_key_id() -> None:
    fetched: list[str] = []
    now = [0.0]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    iss = Issuer(url="http://issuer.test")
    iss._key = key  # the issuer signs with ``key``
    docs = {
        "http://issuer.test/.well-known/oauth-authorization-server": {"jwks_uri": "http://issuer.test/jwks"},
        "http://issuer.test/jwks": iss.jwks(),
    }

    async def fetch(url: str) -> Any:
        fetched.append(url)
        return docs[url]

    config = McpAuthorization(issuer="http://issuer.test", scopes={"s": ["*"]}, jwks_min_refresh_s=10)
    guard = OAuthResource(config, fetch=fetch, clock=lambda: now[0])

    async def run() -> None:
        ok = iss.mint(aud="http://gw/mcp", scope="s")
        assert (await guard.visibility(ok, "http://gw/mcp")).globs == ("*",)
        assert (await guard.visibility(ok, "http://gw/mcp")).client == "oauth:test-client"
        assert len(fetched) == 2  # metadata, key set: once
        with pytest.raises(BearerRefused):
            await guard.visibility(iss.mint(aud="http://gw/mcp", scope="s", kid="k2"), "http://gw/mcp")
        assert len(fetched) == 2  # inside jwks_min_refresh_s: not fetched again
        now[0] = 11
        with pytest.raises(BearerRefused):
            await guard.visibility(iss.mint(aud="http://gw/mcp", scope="s", kid="k2"), "http://gw/mcp")
        assert len(fetched) == 3  # the key set again; the metadata's jwks_uri is read once

    anyio.run(run)


def test_scopes_are_read_from_scope_or_scp_and_the_metadata_url_follows_rfc_9728() -> None:
    assert token_scopes({"scope": "a b"}) == {"a", "b"}
    assert token_scopes({"scp": ["a", 1]}) == {"a"}
    assert token_scopes({}) == set()
    assert (
        metadata_url("https://gw.example/mcp")
        == "https://gw.example/.well-known/oauth-protected-resource/mcp"
    )
    assert metadata_url("https://gw.example/") == "https://gw.example/.well-known/oauth-protected-resource"


def test_the_legacy_sse_transport_asks_for_the_same_bearer_tokens(gw: dict[str, Any], issuer: Issuer) -> None:
    with httpx.stream("GET", f"{gw['url']}/sse", timeout=10) as refused:
        assert refused.status_code == 401
        assert "resource_metadata=" in refused.headers["www-authenticate"]
    token = issuer.mint(aud=gw["mcp_url"], scope="mcp:alpha", client_id="alpha-agent")

    async def run() -> set[str]:
        stream = sse_client(f"{gw['url']}/sse", headers={"Authorization": f"Bearer {token}"})
        async with Client(stream, mode="legacy") as client:
            return {t.name.split("__")[0] for t in (await client.list_tools()).tools}

    assert anyio.run(run) == {"alpha"}


def test_an_audience_taken_from_an_unchecked_host_header_is_refused_at_start(tmp_path: Path) -> None:
    config = McpConfig(authorization=McpAuthorization(issuer="http://issuer.test"))

    async def start() -> None:
        async with open_mcp(config, db_path=str(tmp_path / "db"), read_env=lambda _: None):
            pass

    with pytest.raises(ConfigError, match=r"mcp\.authorization\.resource is unset"):
        anyio.run(start)


def test_a_tool_outside_the_tokens_scopes_gets_a_scope_challenge(gw: dict[str, Any], issuer: Issuer) -> None:
    token = issuer.mint(aud=gw["mcp_url"], scope="mcp:alpha", client_id="alpha-agent")

    def call(tool: str) -> httpx.Response:
        headers = {
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {token}",
            "mcp-method": "tools/call",
            "mcp-name": tool,
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}}}
        return httpx.post(gw["mcp_url"], json=body, headers=headers, timeout=10)

    challenged = call("beta__echo")
    assert challenged.status_code == 403
    header = challenged.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in header and 'scope="mcp:all mcp:alpha"' in header
    assert call("alpha__echo").status_code != 403
    assert call("no_such__tool").status_code != 403  # unknown stays unknown


def test_an_issuer_that_is_down_is_asked_at_most_once_per_min_refresh_and_its_cached_keys_serve() -> None:
    fetched: list[str] = []
    now = [0.0]
    iss = Issuer(url="http://issuer.test")
    up = [True]

    async def fetch(url: str) -> Any:
        fetched.append(url)
        if not up[0]:
            raise OSError("issuer unreachable")
        return iss.jwks()

    config = McpAuthorization(
        issuer="http://issuer.test",
        jwks_url="http://issuer.test/jwks",
        scopes={"s": ["*"]},
        jwks_ttl_s=60,
        jwks_min_refresh_s=10,
    )
    guard = OAuthResource(config, fetch=fetch, clock=lambda: now[0])

    async def run() -> None:
        ok = iss.mint(aud="http://gw/mcp", scope="s")
        await guard.visibility(ok, "http://gw/mcp")
        up[0], now[0] = False, 61  # stale, and the issuer is down
        for _ in range(5):  # served from the cached keys; one attempt to refresh
            assert (await guard.visibility(ok, "http://gw/mcp")).globs == ("*",)
        assert len(fetched) == 2

    anyio.run(run)
