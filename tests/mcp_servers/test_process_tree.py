"""No process started for a stdio MCP server outlives the gateway (issue 11, item 13).

The real gateway (``turnstile serve`` as a child process) runs the fixture server with
``--family``: the server starts a grandchild that double-forks a daemon in a session of its own
(no process group reaches it, and it is no longer in the gateway's process tree by parentage).
The gateway is then stopped with SIGTERM (a graceful stop: the upstream is left, its whole tree
must go) or killed with SIGKILL (nothing in the gateway runs any more: the launcher's
parent-death signal must end the tree). Every process seen before, and every pid the family
wrote down, must be gone within a bounded wait.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp_harness import FIXTURE_SERVER, free_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="descendants are read from /proc")

FAMILY_ROLES = {"server", "grandchild", "daemon"}


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of ``pid``, or None when it no longer exists."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return int(fields[1]), fields[0]


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[1] not in ("Z", "X")  # a zombie has ended, only unreaped


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            children.setdefault(stat[0], []).append(int(entry))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _family(pidfile: Path) -> dict[str, int]:
    if not pidfile.exists():
        return {}
    pairs = (line.split() for line in pidfile.read_text().splitlines() if line.strip())
    return {role: int(pid) for role, pid in pairs}


def _start_gateway(tmp: Path, pidfile: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    config = {
        "server": {"db_path": str(tmp / "gateway.db")},
        "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo"}],
        "mcp": {
            "servers": [
                {
                    "id": "family",
                    "transport": {
                        "type": "stdio",
                        "command": sys.executable,
                        "args": [str(FIXTURE_SERVER), "--name", "family", "--family", str(pidfile)],
                    },
                }
            ]
        },
    }
    path = tmp / "gateway.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNSTILE_")}
    quiet = ["--log-level", "warning"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(path), "--port", str(port), *quiet],
        cwd=tmp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return proc, port


def _wait_until_ready(proc: subprocess.Popen[bytes], port: int, pidfile: Path) -> None:
    deadline = time.monotonic() + 60
    state = None
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                servers = http.get("/health").json()["mcp"]["servers"]
                state = next(s["state"] for s in servers if s["id"] == "family")
            except httpx.TransportError:
                pass
            if state == "ready" and set(_family(pidfile)) == FAMILY_ROLES:
                return
            time.sleep(0.05)
    raise AssertionError(f"the gateway did not get ready (family: {state}, pids: {_family(pidfile)})")


def _survivors(pids: set[int], within_s: float) -> set[int]:
    """The pids still alive once ``within_s`` passed, or none as soon as all are gone."""
    deadline = time.monotonic() + within_s
    alive = {p for p in pids if _alive(p)}
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = {p for p in alive if _alive(p)}
    return alive


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_no_descendant_of_a_stdio_server_outlives_the_gateway(tmp_path: Path, how: signal.Signals) -> None:
    pidfile = tmp_path / "family.pids"
    proc, port = _start_gateway(tmp_path, pidfile)
    seen: set[int] = set()
    try:
        _wait_until_ready(proc, port, pidfile)
        seen = _descendants(proc.pid) | set(_family(pidfile).values())
        assert len(seen) >= 3
        proc.send_signal(how)
        proc.wait(30)
        left = _survivors(seen, within_s=15)
        roles = {pid: role for role, pid in _family(pidfile).items()}
        assert not left, f"survived {how.name} of the gateway: " + ", ".join(
            f"{roles.get(p, 'process')} {p}" for p in sorted(left)
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in seen:  # what a failed run left behind (processes this test started)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
