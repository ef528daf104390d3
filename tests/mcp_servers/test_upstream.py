"""Upstream supervision against real child processes: a server killed mid-call, restart with
backoff, a server that cannot start, and no child outliving its upstream."""

from __future__ import annotations

import os
from typing import Any

import httpx
from mcp import Client
from mcp.types import TextContent
from mcp_harness import ADMIN_KEY, McpGateway, fixture_spec

AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def _add(gw: McpGateway, spec: dict[str, Any], wait_s: float = 30) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
        r = await http.post(f"/admin/mcp/servers?wait_s={wait_s}", json=spec, headers=AUTH)
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


async def _delete(gw: McpGateway, server_id: str) -> None:
    async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
        assert (await http.delete(f"/admin/mcp/servers/{server_id}", headers=AUTH)).status_code == 204


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead but not yet reaped
        return f.read().split()[2] != "Z"


async def test_server_killed_mid_call_gives_bounded_error_and_is_restarted(gw: McpGateway) -> None:
    await _add(gw, fixture_spec("crashy"))
    try:
        async with Client(gw.mcp_url) as client:
            pid = int(_text(await client.call_tool("crashy__pid", {})))
            result = await client.call_tool("crashy__die", {})
            assert result.is_error and "'crashy'" in _text(result) and "closed" in _text(result)
            # the gateway and the other servers are untouched
            assert _text(await client.call_tool("github__echo", {"text": "fine"})) == "fine"
            up = gw.registry.upstream("crashy")
            assert gw.loop.call(up.wait_ready(30), timeout=40)
            assert up.restarts >= 1
            new_pid = int(_text(await client.call_tool("crashy__pid", {})))
            assert new_pid != pid and not _alive(pid)
    finally:
        await _delete(gw, "crashy")


async def test_removed_server_leaves_no_child_process(gw: McpGateway) -> None:
    await _add(gw, fixture_spec("reaped"))
    async with Client(gw.mcp_url) as client:
        pid = int(_text(await client.call_tool("reaped__pid", {})))
    assert _alive(pid)
    await _delete(gw, "reaped")
    assert not _alive(pid)


async def test_server_that_cannot_start_is_reported_and_others_keep_working(gw: McpGateway) -> None:
    spec = {"id": "broken", "transport": {"type": "stdio", "command": "/nonexistent/mcp-server"}}
    body = await _add(gw, spec, wait_s=0)
    assert body["status"]["state"] in ("starting", "unavailable")
    try:
        up = gw.registry.upstream("broken")
        assert not gw.loop.call(up.wait_ready(0.5))
        async with httpx.AsyncClient(base_url=gw.url) as http:
            health = (await http.get("/health")).json()
        broken = next(s for s in health["mcp"]["servers"] if s["id"] == "broken")
        assert broken["state"] == "unavailable" and "nonexistent" in (broken["last_error"] or "")
        async with Client(gw.mcp_url) as client:
            result = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not result.is_error
    finally:
        await _delete(gw, "broken")


def test_cli_mcp_status_lists_servers_of_a_running_gateway(gw: McpGateway) -> None:
    from typer.testing import CliRunner

    from gateway.cli import app

    result = CliRunner().invoke(app, ["mcp", "status", "--url", gw.url])
    assert "time" in result.output and "ready" in result.output and "jira" in result.output
    assert result.exit_code in (0, 1)


def test_cli_mcp_status_says_why_a_server_is_not_ready_and_when_it_last_answered() -> None:
    from rich.console import Console

    from mcp_servers.cli import render_status

    wedged = {
        "id": "hostile",
        "transport": "stdio",
        "state": "degraded",
        "reason": "tool 'freeze' did not answer within 5 s",
        "restarts": 2,
        "last_ok": 1_000.0,
        "consecutive_failures": 3,
        "wire": {"junk_lines": 7, "oversize_messages": 1, "last_fault": "junk on stdout"},
    }
    console = Console(record=True, width=400)
    console.print(render_status([wedged], now=1_042.0))
    out = console.export_text()
    assert "degraded: tool 'freeze' did not answer within 5 s" in out
    assert "42 s ago" in out and "7 junk, 1 refused" in out
    row = next(line for line in out.splitlines() if "hostile" in line)
    assert " 3 " in row  # failures in a row
