"""The Linux launcher of stdio servers (:mod:`mcp_servers._launcher`): it passes the server's exit
status on, starts nothing for a gateway already gone, and ends every descendant (a daemon in a
session of its own included) when the server exits or when it is told to stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixture_server import FAMILY

LAUNCHER = Path(__file__).parents[2] / "mcp_servers" / "_launcher.py"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the launcher is used on Linux only")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _pids(path: Path, roles: set[str], within_s: float = 30) -> dict[str, int]:
    deadline = time.monotonic() + within_s
    found: dict[str, int] = {}
    while time.monotonic() < deadline and set(found) != roles:
        if path.exists():
            found = dict((r, int(p)) for r, p in (ln.split() for ln in path.read_text().splitlines()))
        time.sleep(0.02)
    assert set(found) == roles, found
    return found


def _gone(pids: list[int], within_s: float = 15) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if _alive(p)]


def launch_argv(*command: str, parent: int | None = None) -> list[str]:
    """The launcher's command line for ``command``, as the stdio transport builds it."""
    own = [sys.executable, "-I", "-S", str(LAUNCHER), "--parent", str(parent or os.getpid())]
    return [*own, "--grace", "1", "--", *command]


def _launch(*command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(launch_argv(*command), stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("code", "status"), [("raise SystemExit(3)", 3), ("import os; os.kill(os.getpid(), 9)", 137)]
)
def test_the_launcher_exits_with_the_server_status(code: str, status: int) -> None:
    assert _launch(sys.executable, "-c", code).wait(30) == status


def test_a_launcher_whose_gateway_is_already_gone_starts_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    # pid 1 is not its parent: the gateway that started it is gone
    argv = launch_argv(sys.executable, "-c", f"open({str(marker)!r}, 'w')", parent=1)
    assert subprocess.run(argv, timeout=30).returncode == 1
    assert not marker.exists()


def test_a_daemon_left_by_an_exiting_server_is_ended(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    script = f"setsid sleep 300 & echo daemon $! > {pidfile}"
    launcher = _launch("/bin/sh", "-c", script)
    daemon = _pids(pidfile, {"daemon"})["daemon"]
    assert launcher.wait(30) == 0
    assert not _gone([daemon])


def test_stopping_the_launcher_ends_the_server_and_every_descendant(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    launcher = _launch(sys.executable, "-c", FAMILY, str(pidfile))
    family = _pids(pidfile, {"grandchild", "daemon"})
    try:
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(30) == 128 + signal.SIGTERM
        assert not _gone(list(family.values()))
    finally:
        for pid in family.values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
