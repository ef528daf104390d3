"""Processes the benchmark starts: tool checks, free ports, start/stop, readiness, peak RSS.

Every process is started in its own session and stopped by its own process-group id; nothing
is stopped by name. All servers listen on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

APT_PACKAGES = ("nginx", "wrk", "libnginx-mod-http-echo")
LITELLM_VERSION = "1.99.4"
DEFAULT_LITELLM_VENV = Path(
    os.environ.get("BENCH_LITELLM_VENV", f"/tmp/turnstile-bench/venv-litellm-{LITELLM_VERSION}")
)


def ensure_tools(install: bool) -> None:
    """Make sure ``nginx`` (with its echo module) and ``wrk`` are installed: as root with
    apt-get available and ``install`` True, install them (``apt-get install -y`` the three);
    otherwise exit with the command to run."""
    from bench.upstream import has_echo, nginx_binary

    def present(p: str) -> bool:
        if p == "nginx":
            return nginx_binary() is not None
        return has_echo() if p == "libnginx-mod-http-echo" else shutil.which(p) is not None

    missing = [p for p in APT_PACKAGES if not present(p)]
    if not missing:
        return
    cmd = f"apt-get update && apt-get install -y {' '.join(APT_PACKAGES)}"
    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"installing {', '.join(missing)}: {cmd}", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", *APT_PACKAGES], check=True, env=env, timeout=900)
        return
    sys.exit(f"the benchmark needs {', '.join(missing)}; install with: {cmd}")


def ensure_litellm(venv: Path) -> Path | None:
    """The ``litellm`` executable of a virtual environment holding ``litellm[proxy]==1.99.4``,
    creating it with uv when absent. None (with a message) when it cannot be made."""
    exe = venv / "bin" / "litellm"
    stamp = venv / f".litellm-{LITELLM_VERSION}"
    if exe.exists() and stamp.exists():
        return exe
    uv = shutil.which("uv")
    if uv is None:
        print("LiteLLM skipped: uv is not on PATH to build its virtual environment", flush=True)
        return None
    print(f"installing litellm[proxy]=={LITELLM_VERSION} into {venv} (once)", flush=True)
    try:
        subprocess.run([uv, "venv", "-q", "--python", "3.11", str(venv)], check=True, timeout=300)
        subprocess.run(
            [
                uv,
                "pip",
                "install",
                "-q",
                "--python",
                str(venv / "bin" / "python"),
                f"litellm[proxy]=={LITELLM_VERSION}",
            ],
            check=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as err:
        print(f"LiteLLM skipped: cannot install it: {err}", flush=True)
        return None
    stamp.touch()
    return exe


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    """One started server: its own process group, output to ``log``."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        log: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.log = log
        self._out = log.open("wb")
        self.popen = subprocess.Popen(
            argv,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL after ``grace_s`` seconds."""
        if self.alive():
            try:
                os.killpg(self.pid, signal.SIGTERM)
                self.popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.popen.wait(5)
            except ProcessLookupError:
                pass
        self._out.close()

    def tail(self, n: int = 20) -> str:
        lines = self.log.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])


async def wait_ready(proc: Proc, url: str, timeout_s: float) -> None:
    """Poll ``url`` (GET) until it answers anything below 500. Raises RuntimeError with the
    process's last log lines when it exits or does not answer in ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if not proc.alive():
                raise RuntimeError(f"{proc.name} exited during start-up:\n{proc.tail()}")
            try:
                async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as r:
                    if r.status < 500:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            await _sleep(0.2)
    raise RuntimeError(f"{proc.name} did not answer {url} within {timeout_s:.0f}s:\n{proc.tail()}")


async def _sleep(s: float) -> None:
    import asyncio

    await asyncio.sleep(s)


def _tree(pid: int) -> list[int]:
    out = [pid]
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            kids = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
            for k in kids:
                out.extend(_tree(int(k)))
    except OSError:
        pass
    return out


def reset_peak_rss(pid: int) -> None:
    """Reset the kernel's peak-RSS counter (``VmHWM``) of ``pid`` and its descendants
    (``echo 5 > /proc/PID/clear_refs``; silently skipped where not permitted)."""
    for p in _tree(pid):
        with contextlib.suppress(OSError):
            Path(f"/proc/{p}/clear_refs").write_text("5")


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory (MB) of ``pid`` and its descendants: the sum of their ``VmHWM``."""
    total_kb = 0
    for p in _tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total_kb += int(line.split()[1])
        except OSError:
            pass
    return total_kb / 1024
