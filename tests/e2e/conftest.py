"""Fixtures of the end-to-end harness: the pinned CLIs (installed once per run) and, per test, a
gateway process in front of the scripted model (:class:`tests.e2e.harness.E2E`); also used by
the CLI rows of the compatibility suite (``tests/compat/agents/conftest.py``).

Without the npm registry the CLI tests skip, unless ``TURNSTILE_REQUIRE_SERVICES=1`` (CI),
where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from standins.agent_upstream import NOTE_FILE, NOTE_TEXT, AgentUpstream
from standins.serve_process import ServeProcess, clean_env, free_port
from standins.servers import LoopThread

from .harness import E2E, UPSTREAM_KEY, UPSTREAM_KEY_ENV, ProxyTrap, write_config
from .npm_tools import RegistryUnreachable, Tools, ensure_installed

REQUIRED = os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1"


@pytest.fixture(scope="session")
def agent_tools() -> Tools:
    """Codex CLI and Gemini CLI at their pinned versions (npm, once per run, reused)."""
    try:
        return ensure_installed()
    except RegistryUnreachable as err:
        if REQUIRED:
            pytest.fail(f"{err}\nTURNSTILE_REQUIRE_SERVICES=1 requires the npm registry")
        pytest.skip(str(err).splitlines()[0])


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    """A running gateway process in front of the scripted model, a workspace holding the note,
    an empty home directory and the proxy trap; all stopped afterwards."""
    loop = LoopThread()
    upstream = AgentUpstream()
    trap = ProxyTrap()
    loop.call(upstream.start())
    loop.call(trap.start())
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / NOTE_FILE).write_text(NOTE_TEXT)
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "tmp").mkdir()
    config, db_path = write_config(tmp_path, upstream.url)
    gateway = ServeProcess(
        config, free_port(), cwd=tmp_path, env=clean_env(**{UPSTREAM_KEY_ENV: UPSTREAM_KEY})
    )
    try:
        gateway.start()
        yield E2E(gateway, upstream, trap, workspace, home, db_path)
    finally:
        gateway.kill()
        loop.call(upstream.stop())
        loop.call(trap.stop())
        loop.close()
