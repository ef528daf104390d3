"""Real third-party MCP servers behind the gateway, listed and called through ``/mcp``.

* PyPI ``mcp-server-git==2026.10.19`` (dev dependency) on a repository inside the workspace:
  ``git_reset`` (destructiveHint) comes out ``confirm``, ``git_add``/``git_commit`` (writes,
  closed world, ``repo_path`` argument) ``allow_in_workspace``, so they run without asking there
  (``git_add``'s relative ``files`` count as inside because the spec declares that the server
  resolves them against the repository: ``relative_paths_base``).
* npm ``@modelcontextprotocol/server-everything@2026.8.31`` over stdio through ``npx`` (fetched
  from the npm registry on first use). Without ``npx`` its tests skip, unless
  ``TURNSTILE_REQUIRE_SERVICES=1``, where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult, TextContent
from mcp_harness import McpGateway, start_gateway

GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
NPX = shutil.which("npx")
REQUIRED = os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def real_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """The gateway with ``git`` (a fresh repository in the workspace) and, with npx, ``everything``."""
    if NPX is None and REQUIRED:
        pytest.fail("npx is not on PATH and TURNSTILE_REQUIRE_SERVICES=1")
    tmp = tmp_path_factory.mktemp("real-servers")
    repo = tmp / "workspace" / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "test@example.org")
    _git(repo, "config", "user.name", "Turnstile Test")
    (repo / "README.md").write_text("hello\n")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-q", "-m", "first")
    servers: list[dict[str, Any]] = [
        {
            "id": "git",
            "transport": {
                "type": "stdio",
                "command": GIT_SERVER,
                "args": ["--repository", str(repo)],
                "relative_paths_base": str(repo),  # git_add resolves its files against the repository
            },
        }
    ]
    if NPX is not None:
        servers.append(
            {
                "id": "everything",
                "transport": {"type": "stdio", "command": NPX, "args": ["-y", EVERYTHING]},
                "connect_timeout_s": 300,
            }
        )
    yield from start_gateway(tmp, servers)


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _repo(gw: McpGateway) -> Path:
    return gw.workspace / "repo"


async def test_git_tools_get_their_tiers_from_annotations(real_gw: McpGateway) -> None:
    async with Client(real_gw.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tier = {
        name: (t.meta or {})["io.turnstile/origin"]["trust"]
        for name, t in tools.items()
        if name.startswith("git__")
    }
    assert tier["git__git_reset"] == "confirm"
    assert tier["git__git_add"] == "allow_in_workspace"
    assert tier["git__git_commit"] == "allow_in_workspace"
    assert tier["git__git_status"] == "allow" and tier["git__git_log"] == "allow"


async def test_git_add_and_commit_inside_the_workspace_run_without_asking(real_gw: McpGateway) -> None:
    repo = _repo(real_gw)
    (repo / "notes.txt").write_text("a note\n")
    async with Client(real_gw.mcp_url) as client:  # cannot elicit: a question would be an error
        added = await client.call_tool("git__git_add", {"repo_path": str(repo), "files": ["notes.txt"]})
        committed = await client.call_tool(
            "git__git_commit", {"repo_path": str(repo), "message": "add notes"}
        )
        status = await client.call_tool("git__git_status", {"repo_path": str(repo)})
    assert not added.is_error and not committed.is_error, (_text(added), _text(committed))
    assert _git(repo, "log", "-1", "--format=%s").strip() == "add notes"
    assert "Repository status" in _text(status)


async def test_git_reset_asks_with_the_exact_action_and_a_decline_runs_nothing(real_gw: McpGateway) -> None:
    repo = _repo(real_gw)
    (repo / "README.md").write_text("changed\n")
    _git(repo, "add", "README.md")
    asked: list[str] = []

    async def decline(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    async with Client(real_gw.mcp_url, elicitation_callback=decline) as client:
        result = await client.call_tool("git__git_reset", {"repo_path": str(repo)})
    assert result.is_error and "did not approve" in _text(result)
    assert len(asked) == 1
    assert f'will run tool "git_reset" of MCP server "git" with repo_path="{repo}"' in asked[0]
    assert "destructive" in asked[0]
    assert _git(repo, "diff", "--cached", "--name-only").strip() == "README.md"  # still staged


@pytest.mark.skipif(NPX is None and not REQUIRED, reason="npx is not on PATH: cannot start server-everything")
async def test_server_everything_lists_and_calls_through_the_gateway(real_gw: McpGateway) -> None:
    async with Client(real_gw.mcp_url) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"everything__echo", "everything__get-sum"} <= tools
        echoed = await client.call_tool("everything__echo", {"message": "through the gateway"})
        summed = await client.call_tool("everything__get-sum", {"a": 2, "b": 40})
    assert _text(echoed) == "Echo: through the gateway"
    assert "42" in _text(summed)
    assert (echoed.meta or {})["io.modelcontextprotocol/serverInfo"]["name"] == "turnstile"
    assert (echoed.meta or {})["io.turnstile/origin"]["server"] == "everything"
