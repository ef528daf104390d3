"""Fixtures of the coding-agent rows of the matrix: the end-to-end harness of :mod:`e2e`
(``agent_tools``: Codex CLI and Gemini CLI; ``e2e``: a gateway process in front of the scripted
Chat Completions model) and, for Claude Code, its pinned install (``claude_code``) and a gateway
process whose deployments speak Anthropic Messages to the scripted Claude (``cc``).

Without the npm registry the CLI tests skip, unless ``TURNSTILE_REQUIRE_SERVICES=1`` (CI),
where they fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e.conftest import REQUIRED, agent_tools, e2e  # noqa: F401  (fixtures)
from e2e.harness import E2E, UPSTREAM_KEY, UPSTREAM_KEY_ENV, ProxyTrap
from e2e.npm_tools import RegistryUnreachable, Tools
from standins.agent_upstream import NOTE_FILE, NOTE_TEXT
from standins.serve_process import ServeProcess, clean_env, free_port
from standins.servers import LoopThread

from .claude_code_harness import ClaudeCodeRig, ClientTap, install, write_config
from .claude_code_upstream import ClaudeCodeUpstream


@pytest.fixture(scope="session")
def claude_code() -> Tools:
    """Claude Code at its pinned version (npm, once per run, reused from ``.cache``)."""
    try:
        return install()
    except RegistryUnreachable as err:
        if REQUIRED:
            pytest.fail(f"{err}\nTURNSTILE_REQUIRE_SERVICES=1 requires the npm registry")
        pytest.skip(str(err).splitlines()[0])


@dataclass
class _Served:
    """The module's gateway process, scripted Claude, proxy trap and tap (one set per module:
    the gateway process takes seconds to start)."""

    gateway: ServeProcess
    upstream: ClaudeCodeUpstream
    trap: ProxyTrap
    tap: ClientTap
    db_path: Path


@pytest.fixture(scope="module")
def cc_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Served]:
    """A running gateway process in front of the scripted Claude, the proxy trap and the tap in
    front of the gateway; all stopped after the module."""
    tmp = tmp_path_factory.mktemp("claude-code")
    loop = LoopThread()
    upstream = ClaudeCodeUpstream(tmp)
    trap = ProxyTrap()
    loop.call(upstream.start())
    loop.call(trap.start())
    config, db_path = write_config(tmp, upstream.url)
    gateway = ServeProcess(config, free_port(), cwd=tmp, env=clean_env(**{UPSTREAM_KEY_ENV: UPSTREAM_KEY}))
    tap = ClientTap(gateway.url)
    try:
        gateway.start()
        loop.call(tap.start())
        yield _Served(gateway, upstream, trap, tap, db_path)
    finally:
        loop.call(tap.stop())
        gateway.kill()
        loop.call(upstream.stop())
        loop.call(trap.stop())
        loop.close()


@pytest.fixture
def cc(cc_served: _Served, tmp_path: Path) -> ClaudeCodeRig:
    """The module's gateway with this test's own workspace (holding the note) and home; the
    scripted Claude, the trap and the tap start empty."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / NOTE_FILE).write_text(NOTE_TEXT)
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "tmp").mkdir()
    served = cc_served
    served.upstream.restart(workspace)
    served.trap.attempts.clear()
    served.tap.received.clear()
    served.tap.answers.clear()
    run = E2E(served.gateway, served.upstream, served.trap, workspace, home, served.db_path)  # type: ignore[arg-type]
    return ClaudeCodeRig(run, served.tap, served.upstream)
