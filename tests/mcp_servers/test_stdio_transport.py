"""The stdio transport (:mod:`mcp_servers.stdio_transport`) against real child processes: the
end of a server is noticed at once, and without the launcher (other POSIX systems) stopping a
server still ends its process group."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import TextContent
from mcp_harness import FIXTURE_SERVER

from mcp_servers import stdio_transport
from mcp_servers.config import McpServerSpec
from mcp_servers.upstream import Upstream

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="processes are read from /proc")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def _upstream(*args: str) -> Upstream:
    spec = McpServerSpec.model_validate(
        {
            "id": "fx",
            "transport": {"type": "stdio", "command": sys.executable, "args": [str(FIXTURE_SERVER), *args]},
        }
    )
    up = Upstream(
        spec, read_env=lambda _: None, on_tools=lambda *_: None, backoff_s=0.05, health_interval_s=600
    )
    up.start()
    assert await up.wait_ready(30), up.status()
    return up


@pytest.fixture
async def family(tmp_path: Path) -> AsyncIterator[Path]:
    pidfile = tmp_path / "pids"
    yield pidfile
    for line in pidfile.read_text().splitlines() if pidfile.exists() else []:
        pid = int(line.split()[1])
        if _alive(pid):  # a process this test started and documents as escaping
            os.kill(pid, signal.SIGKILL)


async def test_a_server_that_dies_while_idle_is_restarted_at_once() -> None:
    up = await _upstream()
    try:
        pid = int(_text(await up.call_tool("pid", {})))
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while up.restarts == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert await up.wait_ready(30) and up.restarts == 1
        assert "closed its standard output" in (up.last_error or "")
        assert int(_text(await up.call_tool("pid", {}))) != pid
    finally:
        await up.stop()


async def test_without_the_launcher_stopping_a_server_ends_its_process_group(
    family: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stdio_transport, "uses_launcher", lambda: False)
    up = await _upstream("--family", str(family))
    deadline = time.monotonic() + 30
    while len(family.read_text().splitlines()) < 3 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    pids = dict(line.split() for line in family.read_text().splitlines())
    await up.stop()
    assert not _alive(int(pids["server"])) and not _alive(int(pids["grandchild"]))
    # documented: a daemon in a session of its own escapes a process group (the launcher reaches it)
