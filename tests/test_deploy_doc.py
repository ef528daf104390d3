"""``docs/deploy.md`` as written: its configuration is a valid gateway configuration, every
``turnstile`` command it shows runs through ``uv run`` and exists with the options it uses, and
its deployment quota example parses. (The commands themselves, in a fresh clone against
PostgreSQL and Redis, are what the multi-instance tests under ``tests/wire/test_cluster*.py``
run.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gateway.cli import app
from gateway.config import parse_config

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text()


def _config() -> dict:
    block = re.search(r"`gateway.yaml`.*?```yaml\n(.*?)```", DEPLOY, flags=re.S)
    assert block is not None, "deploy.md shows its gateway.yaml"
    return yaml.safe_load(block.group(1))


def _commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", DEPLOY, flags=re.S)
    lines = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if re.search(r"\bturnstile [a-z]", line)]


def test_the_configuration_it_shows_is_valid() -> None:
    config = parse_config(_config())
    assert config.storage.url and config.redis.url and config.access.auth == "required"
    assert [d.name for d in config.deployments] == ["claude"]


def test_every_turnstile_command_runs_through_uv_run_and_takes_the_options_it_shows() -> None:
    shown = _commands()
    assert len(shown) >= 3, shown
    for line in shown:
        words = shlex.split(line)
        assert words[:2] == ["uv", "run"], line
        args = words[words.index("turnstile") + 1 :]
        command = [w for w in args if not w.startswith("-")][:2]
        result = CliRunner().invoke(app, [*command[: 2 if command[0] in ("keys", "teams") else 1], "--help"])
        assert result.exit_code == 0, (line, result.output)
        for option in [w.split("=")[0] for w in args if w.startswith("--")]:
            assert option in result.output, (line, option)


def test_the_quota_example_in_the_limits_doc_parses() -> None:
    limits = (ROOT / "docs" / "limits.md").read_text()
    block = re.search(r"## Deployment quotas.*?```yaml\n(.*?)```", limits, flags=re.S)
    assert block is not None
    deployments = yaml.safe_load(block.group(1))["deployments"]
    config = parse_config({"deployments": deployments, "models": [{"name": "m", "deployments": ["claude"]}]})
    quota = config.deployments[0].quota
    assert quota is not None and (quota.rpm, quota.tpm, quota.concurrent) == (4000, 2_000_000, 200)
