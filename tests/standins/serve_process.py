"""``turnstile serve`` as a real child process (for tests that kill or signal the gateway): the
command a user runs, on 127.0.0.1 at a free port, with a configuration file the test writes.

The child is the Python interpreter itself (``python -m gateway.cli serve``), never a wrapper
such as ``uv run``: a signal sent to :attr:`ServeProcess.pid` reaches the gateway.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

SECRET_PREFIXES = ("TURNSTILE_", "OPENAI", "ANTHROPIC", "GEMINI")


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without Turnstile settings or provider keys, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SECRET_PREFIXES)}
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env.update(extra)
    return env


class ServeProcess:
    """One ``turnstile serve --config <config> --port <port> [args]`` child; start it again
    after a kill with :meth:`start` (same port, same files). ``args``: more options (e.g.
    ``["--workers", "2"]``)."""

    def __init__(
        self,
        config: Path,
        port: int,
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
    ) -> None:
        self.args = list(args or [])
        self.config = config
        self.port = port
        self.cwd = cwd
        self.env = env if env is not None else clean_env()
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = cwd / f"serve-{port}.log"

    @property
    def pid(self) -> int:
        """The gateway's process id (raises when it was never started)."""
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the child and wait (bounded) until ``GET /health`` answers 200. Raises
        ``RuntimeError`` with the child's log when it exits or does not come up in time."""
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gateway.cli",
                    "serve",
                    "--config",
                    str(self.config),
                    "--port",
                    str(self.port),
                    "--log-level",
                    "warning",
                    *self.args,
                ],
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: kill() reaches its workers too
            )
        deadline = time.monotonic() + timeout_s
        with httpx.Client(base_url=self.url, timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"turnstile serve exited ({self.proc.returncode}):\n{self.output()}")
                try:
                    if http.get("/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)  # polling pace while the child starts, not a synchronisation
        self.kill()
        raise RuntimeError(f"turnstile serve did not answer /health within {timeout_s} s:\n{self.output()}")

    def kill(self) -> None:
        """SIGKILL the child and everything it started (``--workers N``'s worker processes, MCP
        servers: its process group), and reap it. Killing the parent alone left the workers
        running after the test."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> None:
        """SIGTERM the child (a graceful shutdown); :meth:`wait` for it."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float) -> int:
        """The child's exit code, waiting at most ``timeout_s`` (raises
        ``subprocess.TimeoutExpired``)."""
        assert self.proc is not None
        return self.proc.wait(timeout_s)

    def output(self) -> str:
        """What the child wrote to stdout and stderr so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""
