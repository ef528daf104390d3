"""The real gateway as a child process (``python -m gateway.cli serve``), for tests that measure
what only a whole process shows: resident memory, file descriptors, slow connections, log lines.

The configuration is written as a YAML file in the test's temporary directory; the provider
keys of :mod:`standins.topology` are put in the child's environment. The child's stderr (its
log) goes to a file the test can read.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.config import GatewayConfig

from .topology import KEY_ENV, KEYS

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_status(pid: int) -> dict[str, int]:
    """The ``kB`` fields of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``, ...), in kB."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if len(parts) == 2 and parts[1] == "kB":
            out[key] = int(parts[0])
    return out


def open_fds(pid: int) -> int:
    """How many file descriptors process ``pid`` has open."""
    return len(os.listdir(f"/proc/{pid}/fd"))


class GatewayProcess:
    """``turnstile serve`` in a child process on 127.0.0.1 at a free port.

    ``nofile`` (when set) is the child's ``RLIMIT_NOFILE``, ``(soft, hard)``: a small fd
    budget, so a test needs few sockets to reach it. ``env`` adds environment variables."""

    def __init__(
        self,
        config: GatewayConfig,
        tmp: Path,
        *,
        nofile: tuple[int, int] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = tmp
        self.config_path = tmp / "gateway.yaml"
        data: dict[str, Any] = config.model_dump(mode="json", exclude_defaults=True)
        data.setdefault("server", {})["port"] = self.port
        self.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
        self.log_path = tmp / "gateway.log"
        self.nofile = nofile
        self.extra_env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the child and wait (bounded) until ``GET /health`` answers."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TURNSTILE_", "OPENAI", "ANTHROPIC"))}
        env.update({KEY_ENV[api]: KEYS[api] for api in KEY_ENV})
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        env.update(self.extra_env)
        nofile = self.nofile

        def limit_fds() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gateway.cli",
                "serve",
                "--config",
                str(self.config_path),
                "--log-level",
                "info",
            ],
            cwd=self.tmp,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_fds,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited during start-up:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"gateway did not start within {timeout_s}s:\n{self.log()}")
            time.sleep(0.1)

    def log(self) -> str:
        """Everything the child has written so far."""
        return self.log_path.read_text(errors="replace")

    def status(self) -> dict[str, int]:
        """The child's ``/proc/<pid>/status`` sizes (kB)."""
        return proc_status(self.pid)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not end within 20 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
