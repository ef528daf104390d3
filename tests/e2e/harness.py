"""One end-to-end run: the real gateway process (``python -m gateway.cli serve``) in front of the
scripted model (:class:`standins.agent_upstream.AgentUpstream`, OpenAI Chat Completions wire
API), a workspace holding the note the agent must read, a home directory of its own, and a
trap for anything that tries to leave the machine.

Nothing reaches the internet: every agent runs with ``HTTPS_PROXY``/``HTTP_PROXY``/
``ALL_PROXY`` pointing at :class:`ProxyTrap` (``NO_PROXY`` only for 127.0.0.1), which records
each connection attempt and closes it; a test asserts the trap saw none. The agent's own
configuration points it at the gateway only.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from standins.agent_upstream import MARKER, AgentUpstream, names_tool
from standins.serve_process import ServeProcess

from .model_names import all_names

UPSTREAM_KEY_ENV = "TURNSTILE_E2E_UPSTREAM_KEY"
UPSTREAM_KEY = "sk-e2e-upstream-0000"
CLIENT_KEY = "sk-e2e-client-0000"  # what the agents send the gateway (no client auth on loopback)
SCRIPTED = "scripted-agent"
# A model name outside Codex's bundled catalog (Codex then sends its classic tool list); routed
# to the scripted model like the tools' default names.
OUTSIDE_CODEX_CATALOG = "turnstile-e2e-model"


class ProxyTrap:
    """A TCP listener on 127.0.0.1 that the agents get as their HTTP(S) proxy: it keeps the first
    line of every connection (``CONNECT host:443 HTTP/1.1``) in :attr:`attempts` and closes it."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Listen at a random port; sets :attr:`url`."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), timeout=5)
            self.attempts.append(line.decode(errors="replace").strip() or "(connection, no request line)")
            writer.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
        except (TimeoutError, ConnectionError):
            self.attempts.append("(connection, no request line)")
        finally:
            writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


def gateway_config(upstream_url: str, db_path: Path) -> dict[str, Any]:
    """The gateway's configuration: one deployment, the scripted model, under every model name
    the pinned agents request (:mod:`tests.e2e.model_names`), so each agent runs unconfigured."""
    return {
        "server": {"host": "127.0.0.1", "db_path": str(db_path)},
        "deployments": [
            {
                "name": SCRIPTED,
                "api": "openai_chat",
                "model": "scripted-agent-model",
                "base_url": f"{upstream_url}/v1",
                "api_key_env": UPSTREAM_KEY_ENV,
                "context_window": 400_000,
                "price": {"input": 0, "output": 0},
            }
        ],
        "models": [
            {"name": name, "deployments": [SCRIPTED]} for name in [*all_names(), OUTSIDE_CODEX_CATALOG]
        ],
    }


@dataclass
class AgentRun:
    """What an agent did: exit code, stdout, stderr, wall time in seconds."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def report(self) -> str:
        return (
            f"exit {self.returncode} after {self.seconds:.1f} s\n"
            f"--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-6000:]}"
        )


@dataclass
class E2E:
    """One test's gateway, scripted model, proxy trap, workspace (holding the note) and home."""

    gateway: ServeProcess
    upstream: AgentUpstream
    trap: ProxyTrap
    workspace: Path
    home: Path
    db_path: Path
    runs: list[AgentRun] = field(default_factory=list)

    def agent_env(self, path: str, **extra: str) -> dict[str, str]:
        """A clean environment for an agent (nothing inherited: no keys, no user settings):
        ``PATH``, ``HOME``, ``TMPDIR``, locale, the proxy trap, and ``extra``."""
        env = {
            "PATH": path,
            "HOME": str(self.home),
            "TMPDIR": str(self.home.parent / "tmp"),  # e.g. Gemini CLI's error reports stay here
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "HTTPS_PROXY": self.trap.url,
            "HTTP_PROXY": self.trap.url,
            "ALL_PROXY": self.trap.url,
            "https_proxy": self.trap.url,
            "http_proxy": self.trap.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "NODE_USE_ENV_PROXY": "1",  # Node >= 24: fetch() honours the proxy variables
        }
        env.update(extra)
        return env

    def run(self, cmd: list[str], *, env: dict[str, str], timeout_s: float) -> AgentRun:
        """Run ``cmd`` in the workspace, stdin closed, bounded by ``timeout_s`` (its whole process
        group is killed past it and the test fails with what it printed)."""
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=self.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=10)
            run = AgentRun(-9, out, err, time.monotonic() - start)
            pytest.fail(f"{cmd[0]} did not finish within {timeout_s} s\n{run.report()}\n{self.diagnosis()}")
        run = AgentRun(proc.returncode, out, err, time.monotonic() - start)
        self.runs.append(run)
        return run

    def rows(self) -> list[dict[str, Any]]:
        """The gateway's transcript rows, oldest first (committed before each answer was sent)."""
        conn = sqlite3.connect(str(self.db_path))
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute("SELECT * FROM turns ORDER BY ts")]
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()

    def diagnosis(self) -> str:
        """What the scripted model answered and the gateway's log, for a failure message."""
        rows = [
            (r["client_dialect"], r["requested_model"], r["status"], r["stop"], r["error"])
            for r in self.rows()
        ]
        return (
            f"scripted model answered: {self.upstream.answered}\n"
            f"transcript rows (dialect, model, status, stop, error): {rows}\n"
            f"proxy trap saw: {self.trap.attempts}\n"
            f"--- gateway log\n{self.gateway.output()[-4000:]}"
        )

    def assert_tool_round_trip(self, tool: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The transcript holds the tool loop: a row whose answer calls ``tool`` (bare or
        namespaced, :func:`standins.agent_upstream.names_tool`), then a later
        row whose request carries that call's result (holding :data:`MARKER`) and whose answer
        quotes it. Returns ``(call row, result row)``; fails naming what was found."""
        rows = self.rows()
        for i, row in enumerate(rows):
            answer = json.loads(row["response"] or "null") or {}
            calls = [
                p
                for p in (answer.get("message") or {}).get("content") or []
                if p.get("type") == "tool_call" and names_tool(str(p.get("name")), tool)
            ]
            if not calls:
                continue
            for later in rows[i + 1 :]:
                request = json.loads(later["request"] or "null") or {}
                results = [m for m in request.get("messages") or [] if m.get("role") == "tool"]
                reply = json.loads(later["response"] or "null") or {}
                if MARKER in json.dumps(results) and MARKER in json.dumps(reply.get("message")):
                    return row, later
        pytest.fail(f"no {tool} round trip in the transcript\n{self.diagnosis()}")

    def assert_result_reached_upstream(self) -> dict[str, Any]:
        """A Chat Completions request that reached the scripted model carries a ``role: tool``
        message holding :data:`MARKER` (the note, read by the agent's tool). Returns it."""
        for rec in self.upstream.received:
            body = rec.body if isinstance(rec.body, dict) else {}
            for msg in body.get("messages") or []:
                if isinstance(msg, dict) and msg.get("role") == "tool" and MARKER in json.dumps(msg):
                    return dict(msg)
        pytest.fail(f"no tool result holding the note reached the upstream\n{self.diagnosis()}")

    def assert_offline(self) -> None:
        """Nothing tried to reach past the gateway (the proxy trap saw no connection)."""
        assert self.trap.attempts == [], f"an agent tried to reach the internet: {self.trap.attempts}"


def require_edge(url: str, dialect: str, path: str) -> None:
    """Skip when this branch has no ``dialect`` edge: ``POST path`` (an empty JSON body) answers
    404 **and** ``gateway.edges.DIALECTS`` has no such name. Once the dialect is registered a 404
    fails the test instead, so the suite cannot skip in CI after the edge has landed."""
    from gateway.edges import DIALECTS

    status = httpx.post(f"{url}{path}", json={}, timeout=10).status_code
    if status != 404:
        return
    if dialect in DIALECTS:
        pytest.fail(f"the {dialect} edge is registered but POST {path} answers 404")
    pytest.skip(
        f"no {dialect} edge on this branch (POST {path} answers 404; gateway.edges has no {dialect!r})"
    )


def write_config(tmp: Path, upstream_url: str) -> tuple[Path, Path]:
    """Write the gateway's configuration under ``tmp``; returns ``(config path, db path)``."""
    db_path = tmp / "transcript.db"
    config = tmp / "gateway.yaml"
    config.write_text(yaml.safe_dump(gateway_config(upstream_url, db_path), sort_keys=False))
    return config, db_path
