"""The ``mcp`` Python SDK's ``Client`` (pinned in the dev group) against the gateway's MCP
endpoint over both transports: streamable HTTP (``/mcp``) and legacy HTTP+SSE (``GET /sse`` +
``POST /messages/``), each in the SDK's ``auto`` mode (MCP 2026-07-28 where offered) and its
``legacy`` mode (the ``initialize`` handshake). The upstream is the fixture server behind the
gateway (:mod:`compat.mcp_gateway`); a call's arguments are read back from the upstream itself."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from .mcp_gateway import (  # noqa: F401  (fixture)
    SERVER_ID,
    McpCompatGateway,
    assert_lists_upstream_tools,
    mcp_gateway_fixture,
    text_of,
)

TRANSPORTS = {"http": "streamable HTTP /mcp", "sse": "legacy HTTP+SSE /sse"}


def _client(gw: McpCompatGateway, transport: str, mode: str) -> Client:
    target: Any = gw.endpoint(transport) if transport == "http" else sse_client(gw.endpoint(transport))
    return Client(target, mode=mode, read_timeout_seconds=20)  # type: ignore[arg-type]


def cases(scenario: str, checks: str) -> list[Any]:
    """``transport`` parameters, each marked as the matrix row ``<scenario> (<transport>)``."""
    return [
        pytest.param(
            t,
            id=t,
            marks=pytest.mark.compat(client="mcp", scenario=f"{scenario} ({label})", checks=checks),
        )
        for t, label in TRANSPORTS.items()
    ]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(
    "transport",
    cases(
        "initialize + tools/list",
        "auto and legacy (initialize) modes; the upstream's tools listed as docs__<name> with their schemas",
    ),
)
async def test_sdk_client_lists_the_upstreams_tools_under_the_server_prefix(
    transport: str, mode: str, mcp_gateway: McpCompatGateway
) -> None:
    async with _client(mcp_gateway, transport, mode) as client:
        assert client.server_info is not None and client.server_info.name == "turnstile"
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert_lists_upstream_tools(set(tools), await mcp_gateway.upstream.tool_names())
    reset = tools[f"{SERVER_ID}__reset"].input_schema
    assert reset["properties"]["mode"]["enum"] == ["soft", "hard"] and reset["required"] == ["mode"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(
    "transport",
    cases("tools/call", "the upstream received the call with its arguments; its result came back"),
)
async def test_sdk_client_call_reaches_the_upstream_with_its_arguments(
    transport: str, mode: str, mcp_gateway: McpCompatGateway
) -> None:
    target = f"sdk-{transport}-{mode}"
    async with _client(mcp_gateway, transport, mode) as client:
        result = await client.call_tool(f"{SERVER_ID}__reset", {"mode": "hard", "target": target})
    assert not result.is_error and text_of(result) == f"reset --hard {target}"
    assert result.meta is not None and result.meta["io.turnstile/origin"]["server"] == SERVER_ID
    received = [c for c in await mcp_gateway.upstream.received_calls() if c["target"] == target]
    assert received == [{"tool": "reset", "mode": "hard", "target": target}]


@pytest.mark.parametrize(
    "transport",
    cases(
        "tools/call outside the tool's schema",
        "refused by the gateway, naming the field; the upstream received no call",
    ),
)
async def test_sdk_client_call_outside_the_schema_never_reaches_the_upstream(
    transport: str, mcp_gateway: McpCompatGateway
) -> None:
    target = f"sdk-{transport}-invalid"
    async with _client(mcp_gateway, transport, "auto") as client:
        try:
            result = await client.call_tool(f"{SERVER_ID}__reset", {"mode": "medium", "target": target})
            refusal = text_of(result) if result.is_error else f"not refused: {text_of(result)}"
        except MCPError as err:
            refusal = str(err)
    assert "arguments.mode: 'medium' is not one of ['soft', 'hard']" in refusal
    assert [c for c in await mcp_gateway.upstream.received_calls() if c["target"] == target] == []
