"""What the ``mcp`` SDK ``Client`` of one upstream connects to (:func:`build_target`): a stdio
child (its command resolved, ``${workspace}`` expanded, an allow-listed environment) or a
streamable HTTP transport (configured headers from the environment, the upstream's OAuth)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

from mcp_servers.config import WORKSPACE_PLACEHOLDER, HttpTransport, McpServerSpec, StdioTransport

EnvReader = Callable[[str], str | None]
"""Reads one environment variable (the gateway's settings object's reader)."""


class CommandNotFound(Exception):
    """The stdio server's command is neither on ``PATH`` nor beside the gateway's Python."""

    def __init__(self, server: str, command: str) -> None:
        super().__init__(
            f"command {command!r} of MCP server {server!r} was not found on PATH; install it or set "
            f"enabled: false on the server"
        )


def resolve_command(command: str) -> str | None:
    """The executable to run for ``command``: itself when it contains a path separator and
    exists, else ``shutil.which(command)``, else the file of that name beside
    ``sys.executable`` (the gateway's own environment's scripts); None when none exists."""
    if os.sep in command:
        return command if os.path.exists(command) else None
    found = shutil.which(command)
    if found:
        return found
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else None


def expand_workspace(value: str, workspace_roots: list[str]) -> str:
    """``value`` with ``${workspace}`` replaced by the first workspace root (absolute)."""
    if WORKSPACE_PLACEHOLDER not in value:
        return value
    if not workspace_roots:
        raise ValueError(f"{value!r} uses {WORKSPACE_PLACEHOLDER} but mcp.workspace_roots is empty")
    return value.replace(WORKSPACE_PLACEHOLDER, workspace_roots[0])


def build_target(
    spec: McpServerSpec,
    read_env: EnvReader,
    stack: AsyncExitStack,
    workspace_roots: list[str] | None = None,
    auth: Any = None,
) -> Any:
    """What ``mcp.Client`` connects to for ``spec``: ``StdioServerParameters`` (the child gets the
    SDK's minimal safe environment, the allow-listed variables and ``env``; ``${workspace}`` in
    ``args``/``cwd`` expanded; raises :class:`CommandNotFound`), or a streamable HTTP
    transport whose ``httpx2`` client carries the configured headers read from the environment
    and ``auth`` (the upstream's OAuth, :mod:`mcp_servers.upstream_oauth`), registered on
    ``stack`` so it is closed with the connection."""
    t = spec.transport
    if isinstance(t, StdioTransport):
        env = {name: value for name in t.env_passthrough if (value := read_env(name)) is not None}
        env.update(t.env)
        command = resolve_command(t.command)
        if command is None:
            raise CommandNotFound(spec.id, t.command)
        roots = workspace_roots or []
        args = [expand_workspace(a, roots) for a in t.args]
        cwd = expand_workspace(t.cwd, roots) if t.cwd else None
        return StdioServerParameters(command=command, args=args, cwd=cwd, env=env or None)
    assert isinstance(t, HttpTransport)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {h: value for h, var in t.headers_env.items() if (value := read_env(var)) is not None}
    http = create_mcp_http_client(headers=headers or None, auth=auth)
    stack.push_async_callback(http.aclose)
    return streamable_http_client(t.url, http_client=http)
