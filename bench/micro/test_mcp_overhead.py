"""Gateway overhead per MCP tool call (issue 6 target: p50 at most 2 ms), pytest-benchmark.

Run: ``uv run pytest bench/micro/test_mcp_overhead.py`` (not in the normal test run: testpaths
is tests/). One local echo server (``MCPServer`` with one read-only ``echo`` tool) lives in the
benchmark's process; each benchmark is one ``tools/call echo`` with the ``mcp`` SDK ``Client``:

* ``direct-inproc``: the client calls the echo server in-process (no JSON-RPC framing, no I/O);
* ``gateway-inproc``: the client calls the gateway's MCP server in-process, which routes through
  the registry, the trust decision (tier ``allow``: no question), the audit log (SQLite), the
  upstream ``Client`` (in-process to the same echo server), the output cap and the result
  stamping: the difference to ``direct-inproc`` is the gateway's own work per call;
* ``direct-http``: the echo server served over streamable HTTP (uvicorn, 127.0.0.1);
* ``gateway-http``: the whole gateway app (uvicorn, ``/mcp``) in front of the in-process echo
  server: the difference to ``direct-http`` is what a client sees added by the gateway.

The upstream is put in-process by replacing :func:`mcp_servers.upstream.build_target` for the
server id ``echo`` (stdio or HTTP upstreams would add a process hop that is not the gateway's).
The last test prints the medians and checks the in-process overhead against the 2 ms target.

Measured 2026-11-30 (2-CPU VM shared with other work; mcp 2.3.0): direct-inproc p50 0.373 ms,
gateway-inproc 0.841 ms (overhead +0.47 ms); direct-http 47.9 ms, gateway-http 48.2 ms (overhead
+0.22 ms). Both HTTP cases sit on a ~40 ms floor of the SDK's HTTP client on loopback (the same
for both, so it cancels out of the overhead); the in-process pair is the sharper measure.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.types import TextContent, ToolAnnotations

import mcp_servers.upstream as upstream_mod
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.endpoint import McpEndpoint
from mcp_servers.registry import McpRegistry
from mcp_servers.store import McpStore

TARGET_P50_MS = 2.0
ARGS = {"text": "hello through the gateway"}
MEDIANS_S: dict[str, float] = {}
_real_build_target = upstream_mod.build_target


def echo_server() -> MCPServer:
    """The local echo server."""
    server = MCPServer("echo", version="0.0.1")

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    )
    def echo(text: str) -> str:
        return text

    return server


ECHO = echo_server()


def _inproc_target(spec: Any, read_env: Any, stack: Any, workspace_roots: Any = None) -> Any:
    if spec.id == "echo":
        return ECHO
    return _real_build_target(spec, read_env, stack, workspace_roots)


ECHO_SPEC = {"id": "echo", "transport": {"type": "stdio", "command": "echo-in-process"}}


class Rig:
    """A client entered in a host task of a private event loop; ``call()`` runs one tool call."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._host: asyncio.Task[None] | None = None
        self.client: Client | None = None
        self.name = "echo"

    def open(self, make: Callable[[], Awaitable[tuple[Client, str]]], cleanup: Any = None) -> None:
        ready: asyncio.Future[None] = self.loop.create_future()

        async def host() -> None:
            client, name = await make()
            try:
                async with client:
                    self.client, self.name = client, name
                    ready.set_result(None)
                    await self._stop.wait()
            finally:
                if cleanup is not None:
                    await cleanup()

        self._host = self.loop.create_task(host())
        done = self.loop.run_until_complete(asyncio.wait({ready, self._host}, return_when="FIRST_COMPLETED"))
        if self._host in done[0]:
            self._host.result()

    def call(self) -> Any:
        assert self.client is not None
        result = self.loop.run_until_complete(self.client.call_tool(self.name, ARGS))
        assert not result.is_error and isinstance(result.content[0], TextContent)
        return result

    def close(self) -> None:
        """Leave the client (in its host task) and close the loop; idempotent."""
        if self.loop.is_closed():
            return
        self._stop.set()
        if self._host is not None:
            self.loop.run_until_complete(self._host)
        self.loop.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig()
    try:
        yield r
    finally:
        r.close()


def _record(benchmark: Any, case: str, rig: Rig, rounds: int = 2000) -> None:
    rig.call()  # warm up
    benchmark.extra_info["case"] = case
    benchmark.pedantic(rig.call, rounds=rounds, iterations=1, warmup_rounds=min(100, rounds // 10))
    MEDIANS_S[case] = benchmark.stats.stats.median


def test_direct_inproc(benchmark: Any, rig: Rig) -> None:
    async def make() -> tuple[Client, str]:
        return Client(ECHO), "echo"

    rig.open(make)
    _record(benchmark, "direct-inproc", rig)


def test_gateway_inproc(benchmark: Any, rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_mod, "build_target", _inproc_target)
    config = McpConfig(servers=[McpServerSpec.model_validate(ECHO_SPEC)], health_interval_s=3600)
    registry = McpRegistry(config, store=McpStore(str(tmp_path / "gw.db")), read_env=lambda _: None)

    async def make() -> tuple[Client, str]:
        await registry.start()
        assert (await registry.wait_ready(10)) == {"echo": True}
        endpoint = McpEndpoint(registry, workspace_roots=[])
        return Client(endpoint.server), "echo__echo"

    rig.open(make, cleanup=registry.close)
    _record(benchmark, "gateway-inproc", rig)


@contextlib.contextmanager
def _served(app: Any) -> Iterator[str]:
    from standins.servers import GatewayServer, LoopThread

    loop = LoopThread()
    server = GatewayServer(app)
    loop.call(server.start())
    try:
        yield server.url
    finally:
        loop.call(server.stop())
        loop.close()


def test_direct_http(benchmark: Any, rig: Rig) -> None:
    with _served(echo_server().streamable_http_app()) as url:

        async def make() -> tuple[Client, str]:
            return Client(f"{url}/mcp"), "echo"

        rig.open(make)
        _record(benchmark, "direct-http", rig, rounds=200)
        rig.close()  # inside the server's lifetime


def test_gateway_http(benchmark: Any, rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.config import Settings, parse_config
    from gateway.server import create_app

    monkeypatch.setattr(upstream_mod, "build_target", _inproc_target)
    db = tmp_path / "gateway.db"
    config = parse_config(
        {
            "server": {"db_path": str(db)},
            "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo"}],
            "mcp": {"health_interval_s": 3600, "servers": [ECHO_SPEC]},
        }
    )
    app = create_app(config=config, settings=Settings(db_path=db, log_level="warning"))
    with _served(app) as url:

        async def make() -> tuple[Client, str]:
            return Client(f"{url}/mcp"), "echo__echo"

        rig.open(make)
        _record(benchmark, "gateway-http", rig, rounds=200)
        rig.close()


def test_report_gateway_overhead() -> None:
    if not {"direct-inproc", "gateway-inproc"} <= set(MEDIANS_S):
        pytest.skip("run the whole module to compare")
    ms = {k: v * 1000 for k, v in MEDIANS_S.items()}
    lines = [f"{k:>15}: p50 {v:.3f} ms" for k, v in ms.items()]
    inproc = ms["gateway-inproc"] - ms["direct-inproc"]
    lines.append(f"gateway overhead in-process: +{inproc:.3f} ms (target <= {TARGET_P50_MS} ms)")
    if {"direct-http", "gateway-http"} <= set(ms):
        lines.append(f"gateway overhead over HTTP:  +{ms['gateway-http'] - ms['direct-http']:.3f} ms")
    print("\n" + "\n".join(lines))
    assert inproc <= TARGET_P50_MS
