"""Per-client visibility: API keys map to tool allow-lists on /mcp and /v1/mcp/tools, the same
globs filter prompts, resources are seen only by clients that may see their server, anything
hidden is answered like something that does not exist, and a client's credential never reaches
an upstream (the upstream sees only the gateway's own)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent
from mcp_harness import TIME_SERVER, HttpFixture, McpGateway, start_gateway

from mcp_servers.clients import EVERYTHING, Visibility, authenticate
from mcp_servers.config import McpConfig

ALICE, BOB, CAROL = "alice-key-123", "bob-key-456", "carol-key-789"
UPSTREAM_SECRET = "gateway-own-upstream-token"


@pytest.fixture(scope="module")
def keyed_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """A gateway with three clients: alice sees the ``docs`` (HTTP) tools and prompts, bob the
    ``time`` ones and ``docs__headers``, carol only ``time``'s; ``docs`` gets the gateway's own
    token from ``DOCS_TOKEN`` and has ``routed``, whose ``region`` is an ``Mcp-Param-Region``
    header."""
    docs = HttpFixture("docs", "--routed")
    try:
        servers = [
            {
                "id": "time",
                "transport": {"type": "stdio", "command": TIME_SERVER, "args": ["--local-timezone", "UTC"]},
            },
            {
                "id": "docs",
                "transport": {
                    "type": "streamable_http",
                    "url": docs.url,
                    "headers_env": {"X-Upstream-Token": "DOCS_TOKEN"},
                },
            },
        ]
        clients = [
            {"name": "alice", "key_env": "MCP_KEY_ALICE", "tools": ["docs__*"]},
            {"name": "bob", "key_env": "MCP_KEY_BOB", "tools": ["time__*", "docs__headers"]},
            {"name": "carol", "key_env": "MCP_KEY_CAROL", "tools": ["time__*"]},
            {"name": "nobody", "key_env": "MCP_KEY_UNSET_FOR_TESTS"},
        ]
        env = {
            "MCP_KEY_ALICE": ALICE,
            "MCP_KEY_BOB": BOB,
            "MCP_KEY_CAROL": CAROL,
            "DOCS_TOKEN": UPSTREAM_SECRET,
        }
        yield from start_gateway(tmp_path_factory.mktemp("keyed"), servers, env=env, clients=clients)
    finally:
        docs.stop()


def _client(gw: McpGateway, key: str, **kw: Any) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    return Client(streamable_http_client(gw.mcp_url, http_client=http), **kw)


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def test_authenticate_matches_keys_and_fails_closed() -> None:
    cfg = McpConfig.model_validate({"clients": [{"name": "a", "key_env": "K", "tools": ["x__*"]}]})
    env = {"K": "secret"}.get
    assert authenticate(cfg, env, {"authorization": "Bearer secret"}) == Visibility("a", ("x__*",))
    assert authenticate(cfg, env, {"authorization": "Bearer wrong"}) is None
    assert authenticate(cfg, env, {}) is None
    assert authenticate(cfg, lambda _: None, {"authorization": "Bearer "}) is None
    assert authenticate(McpConfig(), env, {}) is EVERYTHING


def test_the_key_is_read_where_each_sdk_sends_it() -> None:
    cfg = McpConfig.model_validate({"clients": [{"name": "a", "key_env": "K", "tools": ["x__*"]}]})
    env = {"K": "secret"}.get
    for headers in ({"x-api-key": "secret"}, {"x-goog-api-key": "secret"}):
        assert authenticate(cfg, env, headers) == Visibility("a", ("x__*",)), headers
    # the Anthropic SDK with an auth token sends both: either matching is enough
    both = {"authorization": "Bearer other", "x-api-key": "secret"}
    assert authenticate(cfg, env, both) == Visibility("a", ("x__*",))
    assert authenticate(cfg, env, {"x-api-key": "wrong", "x-goog-api-key": ""}) is None


async def test_mcp_endpoint_accepts_the_key_in_x_api_key(keyed_gw: McpGateway) -> None:
    http = create_mcp_http_client(headers={"x-api-key": BOB})
    async with Client(streamable_http_client(keyed_gw.mcp_url, http_client=http)) as bob:
        names = {t.name for t in (await bob.list_tools()).tools}
    assert names == {"time__get_current_time", "time__convert_time", "docs__headers"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_client_lists_and_calls_only_its_tools(keyed_gw: McpGateway, mode: str) -> None:
    async with _client(keyed_gw, ALICE, mode=mode) as alice:
        names = {t.name for t in (await alice.list_tools()).tools}
        assert names and all(n.startswith("docs__") for n in names)
        assert _text(await alice.call_tool("docs__echo", {"text": "hi"})) == "hi"
        row = keyed_gw.registry.store.audit_rows(1)[0]
        assert (row["exposed"], row["client"]) == ("docs__echo", "alice")  # the audit names the caller
        with pytest.raises(MCPError, match="unknown tool"):
            await alice.call_tool("time__get_current_time", {"timezone": "UTC"})
    async with _client(keyed_gw, BOB, mode=mode) as bob:
        names = {t.name for t in (await bob.list_tools()).tools}
        assert names == {"time__get_current_time", "time__convert_time", "docs__headers"}
        with pytest.raises(MCPError, match="unknown tool"):
            await bob.call_tool("docs__echo", {"text": "hi"})


async def test_requests_without_a_known_key_are_refused(keyed_gw: McpGateway) -> None:
    async with httpx.AsyncClient(base_url=keyed_gw.url) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
            r = await http.post("/mcp", json=body, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            assert (await http.get("/v1/mcp/tools", headers=headers)).status_code == 401


async def test_model_tools_endpoint_shows_each_client_its_tools(keyed_gw: McpGateway) -> None:
    async with httpx.AsyncClient(base_url=keyed_gw.url) as http:
        r = await http.get("/v1/mcp/tools?format=anthropic", headers={"Authorization": f"Bearer {BOB}"})
    assert r.status_code == 200
    assert {t["name"] for t in r.json()["tools"]} == {
        "time__get_current_time",
        "time__convert_time",
        "docs__headers",
    }


async def test_client_credentials_are_never_forwarded_upstream(keyed_gw: McpGateway) -> None:
    async with _client(keyed_gw, BOB) as bob:
        seen = json.loads(_text(await bob.call_tool("docs__headers", {})))
    assert seen["x-upstream-token"] == UPSTREAM_SECRET  # the gateway's own credential, from config
    assert BOB not in json.dumps(seen) and "authorization" not in seen


README = "turnstile://docs/note://docs/readme"
NO_SERVER = "turnstile://nosuch/note://docs/readme"


async def _error(call: Any) -> str:
    with pytest.raises(MCPError) as raised:
        await call
    return f"{raised.value.error.code} {raised.value.error.message}"


def test_a_server_is_seen_through_a_glob_covering_it_or_one_of_its_tools() -> None:
    assert Visibility("a", ("docs__*",)).sees_server("docs", [])
    assert Visibility("a", ("*",)).sees_server("docs", [])
    assert Visibility("a", ("t__echo",)).sees_server("t", ["t__echo", "t__write"])
    assert not Visibility("a", ("t__echo",)).sees_server("secret", ["secret__echo"])
    assert not Visibility("a", ("docs__read_*",)).sees_server("docs", ["docs__write"])
    assert EVERYTHING.sees_server("anything", [])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_resources_are_listed_and_read_only_by_clients_that_may_see_their_server(
    keyed_gw: McpGateway, mode: str
) -> None:
    for key in (ALICE, BOB):  # alice: docs__*; bob: one docs tool (docs__headers)
        async with _client(keyed_gw, key, mode=mode) as client:
            uris = {r.uri for r in (await client.list_resources()).resources}
            assert README in uris
            templates = (await client.list_resource_templates()).resource_templates
            assert any(t.uri_template.startswith("turnstile://docs/") for t in templates)
            assert "readme of docs" in str((await client.read_resource(README)).contents[0])
    async with _client(keyed_gw, CAROL, mode=mode) as carol:
        assert (await carol.list_resources()).resources == []
        assert (await carol.list_resource_templates()).resource_templates == []
        hidden = await _error(carol.read_resource(README))
        missing = await _error(carol.read_resource(NO_SERVER))
    assert hidden == missing.replace(NO_SERVER, README)  # hidden is answered as missing


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_prompts_are_listed_and_got_only_under_the_client_globs(
    keyed_gw: McpGateway, mode: str
) -> None:
    async with _client(keyed_gw, ALICE, mode=mode) as alice:
        assert "docs__summarize" in {p.name for p in (await alice.list_prompts()).prompts}
        got = await alice.get_prompt("docs__summarize", {"topic": "gateways"})
        assert "gateways" in str(got.messages[0].content)
    for key in (BOB, CAROL):  # bob sees the docs server (its resources) but not this prompt
        async with _client(keyed_gw, key, mode=mode) as client:
            assert (await client.list_prompts()).prompts == []
            hidden = await _error(client.get_prompt("docs__summarize", {"topic": "x"}))
            missing = await _error(client.get_prompt("nosuch__summarize", {"topic": "x"}))
            assert hidden == missing.replace("nosuch__", "docs__")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_param_headers_reveal_nothing_of_a_tool_hidden_from_the_caller(
    keyed_gw: McpGateway, mode: str
) -> None:
    """Before the call reaches the gateway's handler, the SDK checks ``Mcp-Param-*`` headers
    against the tool's input schema: for a tool the caller may not see, that check must not
    run (its errors would name the schema's header properties, and that the tool exists)."""
    async with _client(keyed_gw, BOB, mode=mode) as bob:  # bob may not see docs__routed
        hidden = await _error(bob.call_tool("docs__routed", {"region": "eu"}))
        missing = await _error(bob.call_tool("docs__nosuch", {"region": "eu"}))
    assert hidden == missing.replace("docs__nosuch", "docs__routed"), (hidden, missing)
    assert "unknown tool" in hidden and "Mcp-Param" not in hidden and "region" not in hidden
    async with _client(keyed_gw, ALICE, mode=mode) as alice:  # who may see it: checked and called
        assert "docs__routed" in {t.name for t in (await alice.list_tools()).tools}
        assert _text(await alice.call_tool("docs__routed", {"region": "eu"})) == "routed to eu"


async def _modern_call(
    gw: McpGateway, key: str, name: str, arguments: dict[str, Any], **headers: str
) -> tuple[int, str]:
    """A 2026-07-28 ``tools/call`` sent by hand (the SDK client adds the ``Mcp-Param-*``
    headers itself, and re-lists and retries on a mismatch): status and body text."""
    from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    version = MODERN_PROTOCOL_VERSIONS[-1]
    meta = {PROTOCOL_VERSION_META_KEY: version, CLIENT_CAPABILITIES_META_KEY: {}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    sent = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        **{k.replace("_", "-"): v for k, v in headers.items()},
    }
    async with httpx.AsyncClient(base_url=gw.url, timeout=30) as http:
        r = await http.post("/mcp", json=body, headers=sent)
    return r.status_code, r.text


async def test_mcp_param_headers_of_a_hidden_tool_are_answered_as_for_a_missing_one(
    keyed_gw: McpGateway,
) -> None:
    for headers in ({}, {"Mcp_Param_Region": "us"}, {"Mcp_Param_Region": "eu"}):
        hidden = await _modern_call(keyed_gw, BOB, "docs__routed", {"region": "eu"}, **headers)
        missing = await _modern_call(keyed_gw, BOB, "docs__nosuch", {"region": "eu"}, **headers)
        assert hidden == (missing[0], missing[1].replace("docs__nosuch", "docs__routed")), (headers, hidden)
        assert "Mcp-Param" not in hidden[1] and "region" not in hidden[1]


async def test_mcp_param_headers_are_still_checked_for_a_tool_the_caller_sees(keyed_gw: McpGateway) -> None:
    args = {"region": "eu"}
    status, text = await _modern_call(keyed_gw, ALICE, "docs__routed", args)
    assert status == 400 and "Mcp-Param-Region header is missing" in text, text
    status, text = await _modern_call(keyed_gw, ALICE, "docs__routed", args, Mcp_Param_Region="us")
    assert status == 400 and "Mcp-Param-Region header does not match" in text, text
    status, text = await _modern_call(keyed_gw, ALICE, "docs__routed", args, Mcp_Param_Region="eu")
    assert status == 200 and "routed to eu" in text, text
