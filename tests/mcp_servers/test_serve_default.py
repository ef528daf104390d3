"""The README's first command (``turnstile serve`` with the embedded default configuration), run
as a real process on a machine where ``npx`` is missing: it starts, serves ``mcp-server-time``,
reports the filesystem server ``unavailable`` in ``GET /health``, and leaves no child behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from mcp import Client
from mcp_harness import free_port


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_serve_starts_cleanly_without_npx_and_reports_filesystem_unavailable(tmp_path: Path) -> None:
    port = free_port()
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    secrets = ("TURNSTILE_", "OPENAI", "ANTHROPIC", "GEMINI")
    env = {k: v for k, v in os.environ.items() if not k.startswith(secrets)}
    env["PATH"] = str(empty_path)  # no npx, no mcp-server-time on PATH: found beside the Python
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--log-level", "warning"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    children: list[int] = []
    try:
        base = f"http://127.0.0.1:{port}"
        states: dict[str, str] = {}
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient(base_url=base, timeout=5) as http:
            while time.monotonic() < deadline and states.get("time") != "ready":
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                try:
                    body = (await http.get("/health")).json()
                    states = {s["id"]: s["state"] for s in body["mcp"]["servers"]}
                    errors = {s["id"]: s.get("last_error") for s in body["mcp"]["servers"]}
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        assert states == {"time": "ready", "filesystem": "unavailable"}, states
        assert "'npx'" in (errors["filesystem"] or "") and "not found" in (errors["filesystem"] or "")
        assert (tmp_path / "workspace").is_dir()
        async with Client(f"{base}/mcp") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "time__get_current_time" in names
            assert not any(n.startswith("filesystem__") for n in names)
            result = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            assert not result.is_error
        children = _children(proc.pid)
        assert children  # the time server
    finally:
        proc.send_signal(signal.SIGTERM)
        stopping = time.monotonic()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a clean stop
    assert time.monotonic() - stopping < 10  # an upstream waiting to retry does not hold up shutdown
    assert not [c for c in children if _alive(c)]
