"""The spend ledger read from the transcript (:mod:`gateway.ledger`): sums by key, team, model
and deployment, step rows never counted twice, windows, and ``turnstile spend``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gateway.access.model import Principal
from gateway.cli import app
from gateway.ledger import ledger_spend, spend_of, spend_report
from gateway.transcript import TranscriptWriter, TurnRecord


def _who(key: str, team: str | None) -> Principal:
    return Principal(key_id=key, key_name=key, team_id=team, team_name=team, expires_at=None)


def _row(rid: str, ts: float, cost: float, key: str | None, team: str | None, dep: str = "oa") -> TurnRecord:
    return TurnRecord(
        request_id=rid,
        ts=ts,
        client_dialect="openai_chat",
        requested_model="default",
        stream=False,
        status=200,
        deployment=dep,
        usage={"input_tokens": 10, "output_tokens": 5},
        cost_usd=cost,
        principal=_who(key, team) if key else None,
    )


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    db = tmp_path / "t.db"

    async def write() -> None:
        w = TranscriptWriter(db)
        await w.start()
        for rec in (
            _row("a", 100.0, 1.0, "k1", "t1"),
            _row("a.step1", 100.0, 0.4, "k1", "t1"),  # the turn's row already holds its steps' cost
            _row("b", 200.0, 2.0, "k2", "t1", dep="an"),
            _row("c", 300.0, 4.0, "k1", None),
            _row("d", 400.0, 8.0, None, None),
        ):
            await w.append(rec)
        await w.close()

    asyncio.run(write())
    return db


def test_spend_sums_a_scopes_turns_in_its_window_without_their_step_rows(ledger: Path) -> None:
    assert spend_of(str(ledger), "key:k1", 0, None) == 5.0
    assert spend_of(str(ledger), "key:k1", 150, 350) == 4.0
    assert spend_of(str(ledger), "team:t1", 0, 250) == 3.0
    assert spend_of(str(ledger), "deployment:an", 0, None) == 2.0
    assert asyncio.run(ledger_spend(str(ledger))("key:k2", "day", 0, None)) == 2.0
    with pytest.raises(ValueError, match="scope"):
        spend_of(str(ledger), "user:x", 0, None)


def test_spend_report_groups_dearest_first_with_anonymous_turns_under_none(ledger: Path) -> None:
    by_key = spend_report(str(ledger), "key")
    assert [(r["group"], r["turns"], r["cost_usd"]) for r in by_key] == [
        (None, 1, 8.0),
        ("k1", 2, 5.0),
        ("k2", 1, 2.0),
    ]
    assert by_key[1]["input_tokens"] == 20 and by_key[1]["errors"] == 0
    assert [r["group"] for r in spend_report(str(ledger), "deployment", since_s=150)] == ["oa", "an"]


def test_a_missing_transcript_has_spent_nothing(tmp_path: Path) -> None:
    assert spend_of(str(tmp_path / "none.db"), "key:k", 0, None) == 0.0
    assert spend_report(str(tmp_path / "none.db"), "team") == []


def test_turnstile_spend_prints_the_ledger_as_json_lines(ledger: Path, tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(yaml.safe_dump({"server": {"db_path": str(ledger)}}))
    got = CliRunner().invoke(app, ["spend", "--config", str(config), "--group-by", "team", "--json"])
    assert got.exit_code == 0, got.output
    rows = [json.loads(line) for line in got.output.splitlines()]
    assert [(r["group"], r["cost_usd"]) for r in rows] == [(None, 12.0), ("t1", 3.0)]
    bad = CliRunner().invoke(app, ["spend", "--config", str(config), "--group-by", "colour"])
    assert bad.exit_code == 2
