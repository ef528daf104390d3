"""``turnstile route-train``: trains on non-held-out rows only and writes a loadable artifact."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from gateway.cli import app
from routers.learned import Scorer
from routers.routing_data import Row, held_out, read_rows

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "routing"


def test_training_writes_a_json_artifact_the_router_can_load(tmp_path: Path) -> None:
    out = tmp_path / "scorer.json"
    res = CliRunner().invoke(app, ["route-train", str(FIXTURES), "--out", str(out), "--keep", "50"])
    assert res.exit_code == 0, res.output
    data = orjson.loads(out.read_bytes())
    assert data["kind"] == "turnstile-route-scorer" and len(data["weights"]) <= 50
    trained_rows = sum(data["meta"]["rows"].values())
    eligible = [
        r
        for p in sorted(FIXTURES.rglob("*.jsonl"))
        for r in read_rows(p)
        if not r.contaminated and not held_out(r)
    ]
    assert trained_rows == len(eligible)
    assert 0.0 <= Scorer.load(out).score("What is 2+2?") <= 1.0
    math = data["meta"].get("math")  # the GSM8K sub-scorer when the slice has such training rows
    assert math is None or (math["groups"] == ["gsm8k"] and Scorer.load(out).math_weights is not None)
    res = CliRunner().invoke(app, ["route-train", str(FIXTURES), "--out", str(out), "--math-group", "none"])
    assert res.exit_code == 0 and "math" not in orjson.loads(out.read_bytes())


def test_held_out_rule_keeps_whole_subjects_test_splits_and_mt_bench_apart() -> None:
    assert held_out(Row(id="x", prompt="p", scores={}, split="test"))
    assert held_out(Row(id="x", prompt="p", scores={}, source="mt_bench/writing"))
    unseen = [Row(id=str(i), prompt="p", scores={}, source="mmlu/virology") for i in range(50)]
    assert all(held_out(r) for r in unseen)  # virology is a held-out subject
    seen = [Row(id=str(i), prompt="p", scores={}, source="mmlu/anatomy") for i in range(200)]
    share = sum(held_out(r) for r in seen) / len(seen)
    assert 0.1 < share < 0.3  # other subjects: about one row in five by id hash
