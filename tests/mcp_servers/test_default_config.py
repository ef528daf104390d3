"""The embedded default configuration's MCP servers, end to end through ``/mcp``.

``config/default.yaml`` registers PyPI ``mcp-server-time`` (a runtime dependency) and npm
``@modelcontextprotocol/server-filesystem@2026.8.31`` run by ``npx`` from the machine's Node.js,
limited to ``./workspace`` (made at start). The gateway is started from a scratch working
directory so ``./workspace`` lands there, and an ``mcp`` SDK client lists and calls their tools.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult, TextContent
from mcp_harness import McpGateway, run_gateway

from gateway.config import default_config_path, load_config

pytestmark = pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed")


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


@pytest.fixture(scope="module")
def default_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """The default configuration served from a fresh working directory."""
    tmp = tmp_path_factory.mktemp("default-config")
    config = load_config(default_config_path())
    config.mcp.restart_backoff_s = 0.05
    before = os.getcwd()
    os.chdir(tmp)  # ./workspace and ./turnstile.db are relative to the working directory
    try:
        yield from run_gateway(config, tmp / "gateway.db", tmp / "workspace", ready_timeout_s=170)
    finally:
        os.chdir(before)


async def test_default_config_registers_time_and_a_workspace_filesystem(default_gw: McpGateway) -> None:
    workspace = default_gw.workspace
    assert workspace.is_dir()  # made at start
    async with Client(default_gw.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"time__get_current_time", "time__convert_time"} <= set(tools)
        assert {"filesystem__read_text_file", "filesystem__write_file", "filesystem__move_file"} <= set(tools)
        now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not now.is_error and now.structured_content["timezone"] == "UTC"
        allowed = await client.call_tool("filesystem__list_allowed_directories", {})
    assert _text(allowed).strip().splitlines()[-1] == os.path.realpath(workspace)


async def test_write_inside_the_workspace_runs_without_asking(default_gw: McpGateway) -> None:
    asked: list[str] = []

    async def approve(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    target = Path(os.path.realpath(default_gw.workspace)) / "note.txt"
    async with Client(default_gw.mcp_url, elicitation_callback=approve) as client:
        wrote = await client.call_tool("filesystem__write_file", {"path": str(target), "content": "hello"})
        assert not wrote.is_error, _text(wrote)
        made = await client.call_tool("filesystem__create_directory", {"path": str(target.parent / "sub")})
        assert not made.is_error, _text(made)
    assert asked == []
    assert target.read_text() == "hello" and (target.parent / "sub").is_dir()


async def test_a_relative_write_lands_in_the_workspace_without_asking(default_gw: McpGateway) -> None:
    asked: list[str] = []

    async def decline(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    async with Client(default_gw.mcp_url, elicitation_callback=decline) as client:
        wrote = await client.call_tool("filesystem__write_file", {"path": "rel.txt", "content": "r"})
        assert not wrote.is_error, _text(wrote)
        up = await client.call_tool("filesystem__write_file", {"path": "../up.txt", "content": "u"})
    assert up.is_error and len(asked) == 1 and "../up.txt" in asked[0]
    assert (default_gw.workspace / "rel.txt").read_text() == "r"
    assert not (default_gw.workspace.parent / "up.txt").exists()


async def test_destructive_call_asks_with_the_exact_action(default_gw: McpGateway) -> None:
    asked: list[str] = []

    async def approve(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    ws = Path(os.path.realpath(default_gw.workspace))
    (ws / "a.txt").write_text("a")
    async with Client(default_gw.mcp_url, elicitation_callback=approve) as client:
        moved = await client.call_tool(
            "filesystem__move_file", {"source": str(ws / "a.txt"), "destination": str(ws / "b.txt")}
        )
    assert not moved.is_error, _text(moved)
    assert asked == [
        f'Turnstile will run tool "move_file" of MCP server "filesystem" with source="{ws / "a.txt"}", '
        f'destination="{ws / "b.txt"}". It needs your approval because it is destructive (destructiveHint).'
    ]
    assert (ws / "b.txt").read_text() == "a" and not (ws / "a.txt").exists()


async def test_write_outside_the_workspace_asks_and_a_refusal_runs_nothing(default_gw: McpGateway) -> None:
    asked: list[str] = []

    async def decline(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    outside = Path(os.path.realpath(default_gw.workspace)).parent / "outside.txt"
    async with Client(default_gw.mcp_url, elicitation_callback=decline) as client:
        result = await client.call_tool("filesystem__write_file", {"path": str(outside), "content": "x"})
    assert result.is_error and "did not approve" in _text(result)
    assert len(asked) == 1
    action = f'will run tool "write_file" of MCP server "filesystem" with path="{outside}", content="x"'
    assert action in asked[0]
    assert "outside the workspace" in asked[0]
    assert not outside.exists()


async def test_health_reports_both_default_servers_ready(default_gw: McpGateway) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        body = (await http.get(f"{default_gw.url}/health")).json()
    states = {s["id"]: s["state"] for s in body["mcp"]["servers"]}
    assert states == {"time": "ready", "filesystem": "ready"}
