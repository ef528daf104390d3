"""The admin API (``/admin/mcp/servers``) against the running gateway: auth, validation,
persistence and hot reload that leaves other servers' sessions alone."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.types import TextContent
from mcp_harness import ADMIN_KEY, McpGateway, fixture_spec

from mcp_servers.http_api import trimmed_mcp_headers

AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_admin_api_needs_the_admin_key(gw: McpGateway) -> None:
    async with httpx.AsyncClient(base_url=gw.url) as http:
        assert (await http.get("/admin/mcp/servers")).status_code == 401
        wrong = await http.get("/admin/mcp/servers", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await http.get("/admin/mcp/servers", headers=AUTH)
    assert ok.status_code == 200
    ids = {s["spec"]["id"]: s["source"] for s in ok.json()["servers"]}
    assert ids["time"] == "config" and ids["jira"] == "config"


async def test_admin_api_is_closed_when_the_key_variable_is_unset(gw: McpGateway, monkeypatch: Any) -> None:
    monkeypatch.delenv("TURNSTILE_ADMIN_KEY")
    async with httpx.AsyncClient(base_url=gw.url) as http:
        r = await http.get("/admin/mcp/servers", headers=AUTH)
    assert r.status_code == 403 and "TURNSTILE_ADMIN_KEY" in r.json()["error"]["message"]


async def test_invalid_spec_is_400_naming_the_field(gw: McpGateway) -> None:
    bad = {"id": "has space", "transport": {"type": "stdio", "command": "x"}, "call_timeout_s": -1}
    async with httpx.AsyncClient(base_url=gw.url) as http:
        r = await http.post("/admin/mcp/servers", json=bad, headers=AUTH)
    assert r.status_code == 400
    locs = {d["loc"] for d in r.json()["error"]["details"]}
    assert {"id", "call_timeout_s"} <= locs


@pytest.mark.parametrize(
    ("transport", "field", "value"),
    [
        (
            {"type": "stdio", "command": sys.executable, "env_passthrough": ["TURNSTILE_ADMIN_KEY"]},
            "transport.env_passthrough[0]",
            "TURNSTILE_ADMIN_KEY",
        ),
        (
            {"type": "streamable_http", "url": "http://169.254.169.254/mcp"},
            "transport.url",
            "http://169.254.169.254/mcp",
        ),
        ({"type": "stdio", "command": "/bin/sh", "args": ["-c", "env"]}, "transport.command", "/bin/sh"),
    ],
)
async def test_admin_servers_may_not_take_secrets_internal_hosts_or_any_command(
    gw: McpGateway, transport: dict[str, Any], field: str, value: str
) -> None:
    spec = {"id": "grabby", "transport": transport}
    async with httpx.AsyncClient(base_url=gw.url) as http:
        r = await http.post("/admin/mcp/servers", json=spec, headers=AUTH)
    assert r.status_code == 400, r.text
    details = r.json()["error"]["details"]
    assert {"loc": field, "value": value} == {k: details[0][k] for k in ("loc", "value")}
    assert field in r.json()["error"]["message"] and value in r.json()["error"]["message"]
    assert gw.registry.spec("grabby") is None
    rows = sqlite3.connect(gw.db_path).execute("SELECT id FROM mcp_servers").fetchall()
    assert ("grabby",) not in rows


async def test_config_servers_cannot_be_replaced_or_deleted_at_run_time(gw: McpGateway) -> None:
    async with httpx.AsyncClient(base_url=gw.url) as http:
        put = await http.post("/admin/mcp/servers", json=fixture_spec("time"), headers=AUTH)
        delete = await http.delete("/admin/mcp/servers/time", headers=AUTH)
        missing = await http.delete("/admin/mcp/servers/nobody", headers=AUTH)
    assert put.status_code == 409 and delete.status_code == 409 and missing.status_code == 404


async def test_added_server_is_persisted_and_hot_loaded_without_dropping_sessions(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        assert "notes__echo" not in before
        async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
            r = await http.post("/admin/mcp/servers?wait_s=30", json=fixture_spec("notes"), headers=AUTH)
            assert r.status_code == 201, r.text
            assert r.json()["status"]["state"] == "ready" and r.json()["source"] == "admin"
            rows = sqlite3.connect(gw.db_path).execute("SELECT id FROM mcp_servers").fetchall()
            assert ("notes",) in rows
            # the same client session sees the new tools and still reaches the old ones
            after = {t.name for t in (await client.list_tools()).tools}
            assert before | {"notes__echo"} <= after
            assert _text(await client.call_tool("notes__echo", {"text": "new"})) == "new"
            assert _text(await client.call_tool("github__echo", {"text": "old"})) == "old"
            # replacing it answers 200
            again = await http.post("/admin/mcp/servers?wait_s=30", json=fixture_spec("notes"), headers=AUTH)
            assert again.status_code == 200
            gone = await http.delete("/admin/mcp/servers/notes", headers=AUTH)
            assert gone.status_code == 204
        assert "notes__echo" not in {t.name for t in (await client.list_tools()).tools}
        assert _text(await client.call_tool("github__echo", {"text": "still"})) == "still"
    rows = sqlite3.connect(gw.db_path).execute("SELECT id FROM mcp_servers").fetchall()
    assert ("notes",) not in rows


async def test_a_tool_that_appears_later_is_asked_for_until_the_admin_accepts_it(gw: McpGateway) -> None:
    grown = threading.Event()  # set in the gateway's loop once the new tool is registered
    gw.registry.on_change(lambda: grown.set() if gw.registry.lookup("reviewed__grown_1") else None)
    async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
        r = await http.post("/admin/mcp/servers?wait_s=30", json=fixture_spec("reviewed"), headers=AUTH)
        assert r.status_code == 201, r.text
        assert r.json()["status"].get("pending_tools", []) == []  # its first list is accepted at registration
        try:
            async with Client(gw.mcp_url) as client:
                assert (
                    _text(await client.call_tool("reviewed__grow", {})) == "grew 1"
                )  # adds a read-only tool
                assert await asyncio.to_thread(grown.wait, 20)
                listed = {t.name: t for t in (await client.list_tools()).tools}["reviewed__grown_1"]
                assert listed.annotations is not None and listed.annotations.read_only_hint is True
                assert listed.meta["io.turnstile/origin"]["trust"] == "confirm"  # not what it declares
                unreviewed = await client.call_tool("reviewed__grown_1", {})
                assert unreviewed.is_error and "an administrator has not reviewed it yet" in _text(unreviewed)
                status = (await http.get("/admin/mcp/servers/reviewed", headers=AUTH)).json()["status"]
                assert [(p["tool"], p["change"]) for p in status["pending_tools"]] == [("grown_1", "added")]
                health = (await http.get("/health")).json()["mcp"]["servers"]
                assert (
                    next(s for s in health if s["id"] == "reviewed")["pending_tools"]
                    == status["pending_tools"]
                )
                url = "/admin/mcp/servers/reviewed/tools/accept"
                wrong = await http.post(url, json={"tools": ["grow"]}, headers=AUTH)
                assert wrong.status_code == 400 and "'grow'" in wrong.json()["error"]["message"]
                assert (await http.post(url, json={"tools": ["x"]})).status_code == 401
                ok = await http.post(url, json={"tools": ["grown_1"]}, headers=AUTH)
                assert ok.status_code == 200, ok.text
                assert [a["tool"] for a in ok.json()["accepted"]] == ["grown_1"]
                assert ok.json()["status"]["pending_tools"] == []
                assert _text(await client.call_tool("reviewed__grown_1", {})) == "grown"
            outcomes = [
                (r["tool"], r["outcome"])
                for r in gw.registry.store.audit_rows(100)
                if r["server"] == "reviewed"
            ]
            assert ("grown_1", "added_pending_review") in outcomes and ("grown_1", "accepted") in outcomes
            assert ("grow", "registered") in outcomes
        finally:
            await http.delete("/admin/mcp/servers/reviewed", headers=AUTH)


@pytest.mark.parametrize("path", ["/admin/mcp/servers/time"])
async def test_get_one_server_shows_status(gw: McpGateway, path: str) -> None:
    async with httpx.AsyncClient(base_url=gw.url) as http:
        r = await http.get(path, headers=AUTH)
    assert r.status_code == 200
    status = r.json()["status"]
    assert status["state"] == "ready" and status["exposed_tools"] == 2 and status["server_name"] == "mcp-time"


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
async def test_model_tools_in_provider_format(gw: McpGateway, fmt: str) -> None:
    async with httpx.AsyncClient(base_url=gw.url) as http:
        r = await http.get("/v1/mcp/tools", params={"format": fmt})
    assert r.status_code == 200
    tools = r.json()["tools"]
    if fmt == "openai":
        names = {t["function"]["name"] for t in tools}
    elif fmt == "anthropic":
        names = {t["name"] for t in tools}
    else:
        names = {d["name"] for d in tools[0]["functionDeclarations"]}
    assert {"github__search", "jira__search", "time__get_current_time"} <= names


async def test_gemini_tool_listing_holds_only_what_gemini_accepts(gw: McpGateway) -> None:
    from standins.gemini_schema_rule import schema_violations

    async with httpx.AsyncClient(base_url=gw.url) as http:
        r = await http.get("/v1/mcp/tools", params={"format": "gemini"})
    decls = r.json()["tools"][0]["functionDeclarations"]
    assert decls
    for i, decl in enumerate(decls):
        if "parameters" in decl:
            assert schema_violations(decl["parameters"], f"function_declarations[{i}].parameters") == []


async def test_model_tools_unknown_format_is_400(gw: McpGateway) -> None:
    async with httpx.AsyncClient(base_url=gw.url) as http:
        r = await http.get("/v1/mcp/tools", params={"format": "cohere"})
    assert r.status_code == 400 and "unknown tool format" in r.json()["error"]["message"]


def test_whitespace_around_mcp_header_values_is_not_part_of_them() -> None:
    raw = [(b"mcp-name", b"  tool \t"), (b"Mcp-Method", b" tools/call"), (b"x-other", b" kept ")]
    assert trimmed_mcp_headers(raw) == [
        (b"mcp-name", b"tool"),
        (b"Mcp-Method", b"tools/call"),
        (b"x-other", b" kept "),
    ]
