"""The README's first contact, checked: every ``turnstile`` command it shows runs through
``uv run`` from the checkout (the script is not on PATH after set-up), the serve command leaves
the development tools out, and every command it names exists."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from gateway.cli import app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
COMMAND = re.compile(r"\bturnstile ([a-z][a-z-]*)")


def _shown_commands() -> list[str]:
    """Inline code spans and shell-block lines of the README that run a turnstile command."""
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    lines = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", README, flags=re.S))
    return [s for s in lines + spans if COMMAND.search(s)]


def test_every_turnstile_command_in_the_readme_runs_through_uv_run() -> None:
    shown = _shown_commands()
    assert len(shown) >= 8, shown
    not_runnable = [s for s in shown if not re.search(r"\buv run( --[a-z-]+)* turnstile ", s)]
    assert not_runnable == [], "a fresh clone has no turnstile on PATH: write them as uv run turnstile …"


def test_the_readme_serves_without_installing_the_development_tools() -> None:
    serve = [s for s in _shown_commands() if COMMAND.search(s).group(1) == "serve"]  # type: ignore[union-attr]
    assert serve and all("--no-dev" in s for s in serve), serve
    assert "until Ctrl-C" in README  # the serve command blocks, and the README says so


def test_every_command_the_readme_names_exists() -> None:
    names = {COMMAND.search(s).group(1) for s in _shown_commands()}  # type: ignore[union-attr]
    for name in sorted(names):
        result = CliRunner().invoke(app, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
