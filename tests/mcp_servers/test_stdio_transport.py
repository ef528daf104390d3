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
from structlog.testing import capture_logs

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


HOSTILE = Path(__file__).with_name("hostile_server.py")


async def _hostile(**fields: Any) -> Upstream:
    spec = McpServerSpec.model_validate(
        {
            "id": "loud",
            "transport": {"type": "stdio", "command": sys.executable, "args": [str(HOSTILE)]},
            **fields,
        }
    )
    up = Upstream(
        spec, read_env=lambda _: None, on_tools=lambda *_: None, backoff_s=0.05, health_interval_s=600
    )
    up.start()
    assert await up.wait_ready(30), up.status()
    return up


def _stderr_events(logs: list[dict[str, Any]], name: str = "mcp_server_stderr") -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name and e["server"] == "loud"]


@pytest.mark.usefixtures("info_logs")
@pytest.mark.parametrize("child", [False, True], ids=["server", "child of the server"])
async def test_stderr_of_a_server_and_of_its_children_becomes_log_events_not_gateway_stderr(
    child: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    forged = '{"event": "request", "method": "POST", "path": "/v1/chat/completions", "status": 200}'
    with capture_logs() as logs:
        up = await _hostile()
        try:
            result = await up.call_tool("stderr", {"text": forged, "child": child})
            assert _text(result) == "stderr done"
        finally:
            await up.stop()
    assert [e["line"] for e in _stderr_events(logs)] == [forged]
    assert forged not in capfd.readouterr().err  # nothing reached the gateway's own stderr


@pytest.mark.usefixtures("info_logs")
async def test_a_stderr_flood_never_blocks_the_server_and_is_logged_within_its_bounds() -> None:
    lines, size = 400, 64 * 1024  # 25 MiB of stderr, 400 pipe buffers' worth, before the answer
    began = time.monotonic()
    with capture_logs() as logs:
        up = await _hostile(stderr_lines_per_s=5, stderr_bytes_per_s=64 * 1024)
        try:
            result = await up.call_tool("stderr", {"lines": lines, "size": size})
            assert _text(result) == "stderr done"
        finally:
            await up.stop()
    elapsed = time.monotonic() - began
    logged = _stderr_events(logs)
    assert 5 <= len(logged) <= 5 + 5 * elapsed
    assert all(len(e["line"]) == 2048 and e["omitted_bytes"] == size - 1 - 2048 for e in logged)
    dropped = sum(e["lines"] for e in _stderr_events(logs, "mcp_server_stderr_dropped"))
    assert len(logged) + dropped == lines  # every line counted: logged or dropped
