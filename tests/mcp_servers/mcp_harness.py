"""A real gateway with real MCP servers behind it, started once per test module.

Upstreams: PyPI ``mcp-server-time`` (pinned in the dev group) and instances of the in-repo
fixture server (``fixture_server.py``) over stdio and over streamable HTTP. The gateway runs in
``standins.servers.LoopThread``; tests talk to ``/mcp`` with the ``mcp`` SDK ``Client``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURE_SERVER = Path(__file__).with_name("fixture_server.py")
ADMIN_KEY = "test-admin-key"
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


def fixture_spec(server_id: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A stdio server spec running the fixture server as ``server_id``."""
    return {
        "id": server_id,
        "transport": {
            "type": "stdio",
            "command": sys.executable,
            "args": [str(FIXTURE_SERVER), "--name", server_id, *args],
        },
        **fields,
    }


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpFixture:
    """The fixture server as a child process serving streamable HTTP."""

    def __init__(self, name: str, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [sys.executable, str(FIXTURE_SERVER), "--name", name, "--http-port", str(self.port), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("fixture HTTP server did not start")

    def stop(self) -> None:
        """Terminate and reap the child."""
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


class McpGateway:
    """A running gateway: ``url``, ``app``, ``loop`` (to run coroutines in the gateway's loop)."""

    def __init__(self, url: str, app: Any, loop: Any, workspace: Path, db_path: Path) -> None:
        self.url = url
        self.mcp_url = f"{url}/mcp"
        self.app = app
        self.loop = loop
        self.workspace = workspace
        self.db_path = db_path

    @property
    def registry(self) -> Any:
        """The running :class:`mcp_servers.registry.McpRegistry`."""
        return self.app.state.mcp.registry


def start_gateway(
    tmp: Path, servers: list[dict[str, Any]], env: dict[str, str] | None = None, **mcp_fields: Any
) -> Iterator[McpGateway]:
    """Start a gateway whose ``mcp`` section lists ``servers`` (``env``: extra environment
    variables while it runs); yields once all are ready."""
    from gateway.config import parse_config

    workspace = tmp / "workspace"
    workspace.mkdir(exist_ok=True)
    db_path = tmp / "gateway.db"
    config = parse_config(
        {
            "server": {"db_path": str(db_path)},
            "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo"}],
            "mcp": {
                "workspace_roots": [str(workspace)],
                "restart_backoff_s": 0.05,
                "health_interval_s": 600,
                "servers": servers,
                **mcp_fields,
            },
        }
    )
    yield from run_gateway(config, db_path, workspace, env=env)


def run_gateway(
    config: Any,
    db_path: Path,
    workspace: Path,
    *,
    ready_timeout_s: float = 30,
    env: dict[str, str] | None = None,
) -> Iterator[McpGateway]:
    """Serve ``config`` (a validated ``GatewayConfig``) on a free port; yields once every MCP
    upstream is ready; stops the gateway (every upstream child reaped) afterwards."""
    from standins.servers import GatewayServer, LoopThread

    from gateway.config import Settings
    from gateway.server import create_app

    loop = LoopThread()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TURNSTILE_ADMIN_KEY", ADMIN_KEY)
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        server = GatewayServer(app)
        loop.call(server.start())
        try:
            registry = app.state.mcp.registry
            ready = loop.call(registry.wait_ready(ready_timeout_s), timeout=ready_timeout_s + 10)
            assert all(ready.values()), f"upstreams not ready: {ready}: {app.state.mcp.registry.status()}"
            yield McpGateway(server.url, app, loop, workspace, db_path)
        finally:
            loop.call(server.stop())
            loop.close()
