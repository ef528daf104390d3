"""The official MCP Registry API over the registered servers: a contract test of the shapes
the official OpenAPI (modelcontextprotocol/registry ``docs/reference/api/openapi.yaml``,
``ServerList``, ``ServerResponse``, ``ServerDetail``) gives, written out below as our own JSON
Schema, plus paging, filters, versions and visibility."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from mcp.types import Tool
from starlette.applications import Starlette

from mcp_servers.clients import Visibility
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.official import spec_from_server_json
from mcp_servers.registry import McpRegistry
from mcp_servers.registry_api import routes
from mcp_servers.store import McpStore

RFC3339 = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
SERVER_RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["server"],
    "properties": {
        "server": {
            "type": "object",
            "required": ["name", "description", "version"],
            "properties": {
                "name": {
                    "type": "string",
                    "minLength": 3,
                    "maxLength": 200,
                    "pattern": r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$",
                },
                "description": {"type": "string", "minLength": 1, "maxLength": 100},
                "version": {"type": "string", "maxLength": 255},
                "remotes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type", "url"],
                        "properties": {
                            "type": {"enum": ["streamable-http", "sse"]},
                            "url": {"type": "string"},
                        },
                    },
                },
                "packages": {
                    "type": "array",
                    "items": {"type": "object", "required": ["registryType", "identifier", "transport"]},
                },
            },
        },
        "_meta": {
            "type": "object",
            "properties": {
                "io.modelcontextprotocol.registry/official": {
                    "type": "object",
                    "required": ["status", "publishedAt", "updatedAt", "isLatest"],
                    "additionalProperties": False,
                    "properties": {
                        "status": {"enum": ["active", "deprecated", "deleted"]},
                        "publishedAt": {"type": "string", "pattern": RFC3339},
                        "updatedAt": {"type": "string", "pattern": RFC3339},
                        "isLatest": {"type": "boolean"},
                    },
                }
            },
        },
    },
}
SERVER_LIST: dict[str, Any] = {
    "type": "object",
    "required": ["servers"],
    "properties": {
        "servers": {"type": "array", "items": SERVER_RESPONSE},
        "metadata": {
            "type": "object",
            "properties": {"nextCursor": {"type": "string"}, "count": {"type": "integer"}},
        },
    },
}
WEATHER = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
    "name": "io.github.acme/weather",
    "description": "Weather forecasts",
    "version": "1.4.2",
    "packages": [
        {
            "registryType": "npm",
            "identifier": "@acme/weather-mcp",
            "version": "1.4.2",
            "transport": {"type": "stdio"},
        }
    ],
}


class Quiet:
    """An upstream that announces one tool per server."""

    def __init__(self, spec: McpServerSpec, *, on_tools: Any, **_: Any) -> None:
        self.spec, self.id, self.on_tools = spec, spec.id, on_tools
        self.state, self.last_error, self.server_info = "ready", None, None

    def start(self) -> None:
        self.on_tools(self.id, [Tool(name="ping", input_schema={"type": "object"})])

    async def stop(self) -> None:
        self.state = "stopped"

    async def wait_ready(self, timeout_s: float) -> bool:
        return True

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state}


def _spec(sid: str) -> McpServerSpec:
    return McpServerSpec.model_validate({"id": sid, "transport": {"type": "stdio", "command": "x"}})


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[McpRegistry]:
    specs = [_spec(f"s{i:02d}") for i in range(45)] + [spec_from_server_json(WEATHER)]
    reg = McpRegistry(
        McpConfig(servers=specs),
        store=McpStore(tmp_path / "db.sqlite"),
        read_env=lambda _: None,
        upstream_factory=Quiet,
    )
    await reg.start()
    try:
        yield reg
    finally:
        await reg.close()


def _client(registry: McpRegistry, keys: Any = None) -> httpx.AsyncClient:
    app = Starlette(routes=routes())
    app.state.mcp = SimpleNamespace(
        config=registry.config, registry=registry, read_env=lambda _: None, keys=keys, oauth=None
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw.test")


async def test_the_list_has_the_official_shape_and_pages_by_cursor(registry: McpRegistry) -> None:
    names: list[str] = []
    cursor: str | None = None
    async with _client(registry) as client:
        for _ in range(5):
            params = {"limit": "20", **({"cursor": cursor} if cursor else {})}
            body = (await client.get("/v0.1/servers", params=params)).json()
            Draft202012Validator(SERVER_LIST).validate(body)
            names += [e["server"]["name"] for e in body["servers"]]
            assert body["metadata"]["count"] == len(body["servers"])
            cursor = body["metadata"].get("nextCursor")
            if cursor is None:
                break
    assert len(names) == 46 and names == sorted(names) and len(set(names)) == 46
    assert "io.github.acme/weather" in names and "local.turnstile/s00" in names


async def test_an_entry_carries_the_registry_metadata_and_the_gateways_remote(registry: McpRegistry) -> None:
    async with _client(registry) as client:
        body = (await client.get("/v0.1/servers", params={"search": "WEATHER"})).json()
    (entry,) = body["servers"]
    official = entry["_meta"]["io.modelcontextprotocol.registry/official"]
    assert official["status"] == "active" and official["isLatest"] is True
    assert entry["server"]["version"] == "1.4.2"
    # the gateway's /mcp alone: the upstream's packages and remotes would lead around the gateway
    assert "packages" not in entry["server"]
    assert entry["server"]["remotes"] == [{"type": "streamable-http", "url": "http://gw.test/mcp"}]
    assert entry["_meta"]["io.turnstile/gateway"] == {
        "id": "weather",
        "state": "ready",
        "tools": ["weather__ping"],
    }


async def test_versions_and_one_version_by_name_latest_or_number(registry: McpRegistry) -> None:
    async with _client(registry) as client:
        versions = await client.get("/v0.1/servers/io.github.acme%2Fweather/versions")
        latest = await client.get("/v0.1/servers/io.github.acme%2Fweather/versions/latest")
        exact = await client.get("/v0.1/servers/io.github.acme%2Fweather/versions/1.4.2")
        wrong = await client.get("/v0.1/servers/io.github.acme%2Fweather/versions/9.9.9")
        unknown = await client.get("/v0.1/servers/io.github.acme%2Fnope/versions")
    Draft202012Validator(SERVER_LIST).validate(versions.json())
    assert [e["server"]["version"] for e in versions.json()["servers"]] == ["1.4.2"]
    Draft202012Validator(SERVER_RESPONSE).validate(latest.json())
    assert latest.json() == exact.json() and latest.json()["server"]["name"] == "io.github.acme/weather"
    assert (
        wrong.status_code == 404
        and unknown.status_code == 404
        and unknown.json() == {"error": "Server not found"}
    )


async def test_updated_since_and_version_filter_the_list(registry: McpRegistry) -> None:
    async with _client(registry) as client:
        future = await client.get("/v0.1/servers", params={"updated_since": "2999-01-01T00:00:00Z"})
        past = await client.get(
            "/v0.1/servers", params={"updated_since": "2000-01-01T00:00:00.000Z", "limit": "100"}
        )
        pinned = await client.get("/v0.1/servers", params={"version": "1.4.2"})
    assert future.json()["servers"] == [] and len(past.json()["servers"]) == 46
    assert [e["server"]["name"] for e in pinned.json()["servers"]] == ["io.github.acme/weather"]


async def test_bad_parameters_are_400_naming_the_parameter(registry: McpRegistry) -> None:
    async with _client(registry) as client:
        for params, name in (
            ({"limit": "0"}, "limit"),
            ({"limit": "x"}, "limit"),
            ({"updated_since": "yesterday"}, "updated_since"),
            ({"cursor": "%%%"}, "cursor"),
        ):
            r = await client.get("/v0.1/servers", params=params)
            assert r.status_code == 400 and r.json()["error"].startswith(name), params


async def test_a_caller_sees_only_the_servers_its_key_may_see(
    registry: McpRegistry,
) -> None:
    async def only_weather(headers: Any) -> Visibility | None:
        return Visibility("k1", ("weather__*",)) if headers.get("authorization") == "Bearer good" else None

    async with _client(registry, keys=only_weather) as client:
        seen = (await client.get("/v0.1/servers", headers={"authorization": "Bearer good"})).json()
        hidden = await client.get(
            "/v0.1/servers/local.turnstile%2Fs01/versions/latest", headers={"authorization": "Bearer good"}
        )
    assert [e["server"]["name"] for e in seen["servers"]] == ["io.github.acme/weather"]
    assert hidden.status_code == 404


async def test_an_entry_lists_only_the_tools_the_caller_may_see(registry: McpRegistry) -> None:
    async def no_ping(headers: Any) -> Visibility | None:
        return Visibility("k1", ("weather__other",))

    async with _client(registry, keys=no_ping) as client:
        seen = (await client.get("/v0.1/servers", params={"search": "WEATHER"})).json()
    assert [e["_meta"]["io.turnstile/gateway"]["tools"] for e in seen["servers"]] in ([], [[]])


def test_the_running_gateway_serves_its_registered_servers_on_v0_1(gw: Any) -> None:
    body = httpx.get(f"{gw.url}/v0.1/servers", params={"limit": "100"}, timeout=30).json()
    Draft202012Validator(SERVER_LIST).validate(body)
    names = [e["server"]["name"] for e in body["servers"]]
    assert {"local.turnstile/time", "local.turnstile/github", "local.turnstile/jira"} <= set(names)
    time_entry = next(e for e in body["servers"] if e["server"]["name"] == "local.turnstile/time")
    assert time_entry["server"]["remotes"] == [{"type": "streamable-http", "url": f"{gw.url}/mcp"}]
    assert time_entry["server"]["version"] != "0.0.0"  # the upstream's own serverInfo version
