"""``turnstile keys`` and ``turnstile teams`` on the store of a configuration: a key's secret
printed once, lists and shows without it, revoke and rotate, team updates, ``--json``, and
errors as exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.access.keygen import digest
from gateway.cli import app

runner = CliRunner()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(f"server:\n  db_path: {tmp_path / 't.db'}\n")
    return path


def _json(args: list[str], config: Path) -> list[dict]:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_keys_are_made_listed_shown_rotated_and_revoked(config: Path) -> None:
    [team] = _json(["teams", "create", "eng", "--model", "default", "--budget", "month:100"], config)
    [made] = _json(
        [
            "keys",
            "create",
            "--name",
            "alice",
            "--team",
            "eng",
            "--budget",
            "day:1:soft",
            "--rpm",
            "10",
            "--mcp",
            "time",
            "--meta",
            "owner=alice",
        ],
        config,
    )
    secret, key = made["secret"], made["key"]
    assert secret.startswith("tsk-") and key["team_id"] == team["id"] and key["prefix"] == secret[:12]
    assert (
        key["budgets"] == [{"period": "day", "usd": 1.0, "hard": False}] and key["rate_limits"]["rpm"] == 10
    )
    assert key["mcp"] == ["time"] and key["metadata"] == {"owner": "alice"}
    listed = runner.invoke(app, ["keys", "list", "--config", str(config)])
    assert listed.exit_code == 0 and "alice" in listed.stdout and secret not in listed.stdout
    [shown] = _json(["keys", "show", key["id"]], config)
    assert "hash" not in shown and digest(secret) not in json.dumps(shown)
    [rotated] = _json(["keys", "rotate", key["id"]], config)
    assert rotated["secret"] != secret and rotated["key"]["id"] == key["id"]
    [revoked] = _json(["keys", "revoke", key["id"]], config)
    assert revoked["revoked_at"] is not None
    [updated] = _json(["teams", "update", "eng", "--name", "platform", "--tpm", "5000"], config)
    assert (
        updated["name"] == "platform"
        and updated["rate_limits"]["tpm"] == 5000
        and updated["models"] == ["default"]
    )
    assert [t["name"] for t in _json(["teams", "list"], config)] == ["platform"]
    assert _json(["teams", "delete", "platform"], config) == [{"id": team["id"], "deleted": True}]


def test_a_plain_create_prints_the_secret_once_with_a_warning(config: Path) -> None:
    result = runner.invoke(app, ["keys", "create", "--name", "bob", "--config", str(config)])
    assert result.exit_code == 0
    secrets = [line for line in result.stdout.splitlines() if line.startswith("tsk-")]
    assert len(secrets) == 1 and "only time" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["keys", "show", "key-nope"], 1, "no key"),
        (["keys", "create", "--name", "x", "--budget", "year"], 2, "--budget"),
        (["keys", "create", "--name", "x", "--budget", "year:5"], 2, "budgets"),
        (["keys", "create", "--name", "x", "--team", "nope"], 1, "no team"),
    ],
)
def test_errors_are_one_message_and_an_exit_code(config: Path, args: list[str], code: int, says: str) -> None:
    result = runner.invoke(app, [*args, "--config", str(config)])
    assert result.exit_code == code and says in result.output, result.output
