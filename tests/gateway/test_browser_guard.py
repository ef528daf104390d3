"""Web pages kept out of a gateway that needs no key (gateway/browser_guard.py): a rebound
``Host``, a browser's ``Origin`` and a ``POST`` that is not JSON are refused; SDK-shaped
requests pass; the MCP transports get the same lists."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from starlette.types import Receive, Scope, Send

from gateway.browser_guard import BrowserGuard, mcp_security
from gateway.config import GatewayConfig, ServerConfig
from gateway.errors import TurnstileError

SDK = {"content-type": "application/json", "authorization": "Bearer sk-anything"}


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _refuse(path: str, err: TurnstileError) -> tuple[int, bytes]:
    return err.status, orjson.dumps({"error": {"type": err.kind, "message": err.message, "param": err.param}})


def _client(base: str = "http://127.0.0.1:4000", **server: Any) -> httpx.AsyncClient:
    config = GatewayConfig(server=ServerConfig(**server))
    guard = BrowserGuard(_inner, config=config, refuse=_refuse)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=guard), base_url=base)


async def test_an_sdk_request_on_loopback_passes() -> None:
    async with _client() as http:
        for host in ("127.0.0.1:4000", "localhost:4000", "localhost"):
            got = await http.post("/v1/chat/completions", content=b"{}", headers={**SDK, "host": host})
            assert got.status_code == 200, host
        assert (await http.get("/v1/models")).status_code == 200


async def test_a_rebound_host_is_refused_421_naming_the_header_on_every_path_but_mcp() -> None:
    async with _client() as http:
        for path in ("/v1/chat/completions", "/v1/models", "/ui", "/metrics"):
            got = await http.post(path, content=b"{}", headers={**SDK, "host": "attacker.example:4000"})
            assert got.status_code == 421, path
            assert got.json()["error"]["param"] == "Host"
        assert (
            await http.post("/mcp", content=b"{}", headers={**SDK, "host": "evil.example"})
        ).status_code == 200


async def test_a_browser_origin_is_refused_unless_allowed_in_config() -> None:
    async with _client() as http:
        got = await http.post(
            "/v1/chat/completions", content=b"{}", headers={**SDK, "origin": "https://evil.example"}
        )
        assert got.status_code == 403 and got.json()["error"]["param"] == "Origin"
        local_page = await http.get("/v1/models", headers={"origin": "http://localhost:3000"})
        assert local_page.status_code == 403  # a page of another local app is a web page too
        assert (
            await http.get("/ui", headers={"origin": "https://evil.example"})
        ).status_code == 200  # its own rules
    async with _client(allowed_origins=["https://playground.example/"]) as http:
        ok = await http.post(
            "/v1/chat/completions", content=b"{}", headers={**SDK, "origin": "https://playground.example"}
        )
        assert ok.status_code == 200


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
async def test_a_post_that_is_not_json_is_refused_415(content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    async with _client() as http:
        got = await http.post("/v1/messages", content=b"{}", headers=headers)
        assert got.status_code == 415 and got.json()["error"]["param"] == "Content-Type"
        ok = await http.post(
            "/v1/messages", content=b"{}", headers={"content-type": "application/vnd.x+json; charset=utf-8"}
        )
        assert ok.status_code == 200


async def test_allowed_hosts_admit_a_name_and_in_process_clients_are_not_checked() -> None:
    async with _client(allowed_hosts=["gateway.internal", "box:8080"]) as http:
        for host, status in (("gateway.internal:4000", 200), ("box:8080", 200), ("box:9090", 421)):
            assert (
                await http.post("/v1/models", content=b"{}", headers={**SDK, "host": host})
            ).status_code == status
    async with _client(base="http://testserver") as http:  # an in-process client: not an IP
        assert (
            await http.post("/v1/models", content=b"x", headers={"origin": "https://e.example"})
        ).status_code == 200


def test_mcp_gets_the_same_hosts_and_origins_plus_loopback_origins() -> None:
    config = GatewayConfig(
        server=ServerConfig(
            allowed_hosts=["gateway.internal", "box:8080"], allowed_origins=["https://p.example"]
        )
    )
    security = mcp_security(config)
    assert security is not None and security.enable_dns_rebinding_protection
    assert security.allowed_hosts == [
        "127.0.0.1:*",
        "localhost:*",
        "[::1]:*",
        "gateway.internal",
        "gateway.internal:*",
        "box:8080",
    ]
    assert (
        "https://p.example" in security.allowed_origins and "http://localhost:*" in security.allowed_origins
    )
    assert mcp_security(GatewayConfig(server=ServerConfig(host="0.0.0.0"))) is None
