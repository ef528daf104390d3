"""The gateway the MCP clients of the compatibility suite talk to: its own instance (the session
gateway of ``tests/conftest.py`` has no MCP servers) with one upstream MCP server registered, the
in-repo fixture server (``tests/mcp_servers/fixture_server.py``) as ``docs`` over streamable
HTTP, so a test can ask that upstream directly what it received (its ``received_calls`` tool
returns every ``reset`` call it served). ``reset`` is destructive, pre-approved here by
``trust`` (a client without elicitation, such as the Inspector CLI, could not confirm it).

Endpoints: ``/mcp`` (streamable HTTP) and ``GET /sse`` + ``POST /messages/`` (legacy HTTP+SSE,
:mod:`mcp_servers.legacy_sse`).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent

FIXTURE_SERVER = Path(__file__).parents[1] / "mcp_servers" / "fixture_server.py"
SERVER_ID = "docs"
READY_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def text_of(result: Any) -> str:
    """The text blocks of a ``tools/call`` result (an SDK ``CallToolResult``), joined."""
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def assert_lists_upstream_tools(listed: set[str], own: set[str]) -> None:
    """``listed`` (what a client saw) is the upstream's tools ``own``, each exposed as
    ``docs__<name>``; a name no model provider takes (dots, over 64 characters) is exposed under
    a sanitized name with a hash suffix (:mod:`mcp_servers.naming`), so only its count is checked."""
    assert len(listed) == len(own) and all(n.startswith(f"{SERVER_ID}__") for n in listed), listed
    plain = {f"{SERVER_ID}__{n}" for n in own}
    plain = {n for n in plain if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n)}
    assert plain <= listed and {f"{SERVER_ID}__echo", f"{SERVER_ID}__reset"} <= plain, sorted(listed)


class HttpUpstream:
    """The fixture server as a child process serving streamable HTTP at :attr:`url`."""

    def __init__(self, name: str) -> None:
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc = subprocess.Popen(
            [sys.executable, str(FIXTURE_SERVER), "--name", name, "--http-port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("the fixture MCP server did not start") from None
                time.sleep(0.05)

    async def received_calls(self) -> list[dict[str, Any]]:
        """Every ``reset`` call this upstream served (asked of it directly, not through the
        gateway): ``[{"tool": "reset", "mode": ..., "target": ...}, ...]``."""
        async with Client(self.url) as direct:
            calls: list[dict[str, Any]] = json.loads(text_of(await direct.call_tool("received_calls", {})))
        return calls

    async def tool_names(self) -> set[str]:
        """The upstream's own tool names (asked of it directly)."""
        async with Client(self.url) as direct:
            return {t.name for t in (await direct.list_tools()).tools}

    def stop(self) -> None:
        """Terminate and reap the child."""
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@dataclass(frozen=True)
class McpCompatGateway:
    """A running gateway (``url``: ``http://127.0.0.1:<port>``) and its upstream ``docs``."""

    url: str
    upstream: HttpUpstream

    def endpoint(self, transport: str) -> str:
        """The URL a client of ``transport`` (``http`` | ``sse``) connects to."""
        return f"{self.url}/mcp" if transport == "http" else f"{self.url}/sse"


@pytest.fixture(scope="session", name="mcp_gateway")
def mcp_gateway_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpCompatGateway]:
    """The gateway of the module docstring, started once per session."""
    from standins.servers import GatewayServer, LoopThread

    from gateway.config import Settings, parse_config
    from gateway.server import create_app

    tmp = tmp_path_factory.mktemp("compat-mcp")
    db_path = tmp / "gateway.db"
    upstream = HttpUpstream(SERVER_ID)
    loop = LoopThread()
    try:
        config = parse_config(
            {
                "server": {"db_path": str(db_path)},
                "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo"}],
                "mcp": {
                    "health_interval_s": 600,
                    "servers": [
                        {
                            "id": SERVER_ID,
                            "transport": {"type": "streamable_http", "url": upstream.url},
                            "trust": {"reset": "allow"},
                        }
                    ],
                },
            }
        )
        app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        server = GatewayServer(app)
        loop.call(server.start())
        try:
            registry = app.state.mcp.registry
            ready = loop.call(registry.wait_ready(READY_TIMEOUT_S), timeout=READY_TIMEOUT_S + 10)
            assert all(ready.values()), f"MCP upstream not ready: {registry.status()}"
            yield McpCompatGateway(str(server.url), upstream)
        finally:
            loop.call(server.stop())
    finally:
        loop.close()
        upstream.stop()
