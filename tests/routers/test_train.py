"""``turnstile route-train``: trains on non-held-out rows only and writes a calibrated weights file."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gateway.cli import app
from routers.routing_data import Row, held_out, read_rows
from routers.scorer import RouteModel

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "routing"


def test_training_writes_a_calibrated_weights_file_from_training_rows_only(tmp_path: Path) -> None:
    out = tmp_path / "router.npz"
    args = ["route-train", str(FIXTURES), "--out", str(out), "--keep", "50", "--hidden", "8", "--folds", "2"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    model = RouteModel.load(out)
    assert len(model.lex_weights) <= 50 and model.w1.shape[1] == 8
    eligible = [
        r
        for p in sorted(FIXTURES.rglob("*.jsonl"))
        for r in read_rows(p)
        if not r.contaminated and not held_out(r)
    ]
    assert sum(model.meta["rows"].values()) == len(eligible)
    assert model.meta["hyper"]["seed"] == 0
    assert model.threshold_for(0.95) >= 0.0 and 0.0 <= model.score("What is 2+2?") <= 1.0
    assert "threshold for target 0.95" in res.output


def test_training_from_a_missing_folder_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["route-train", str(tmp_path / "none"), "--out", str(tmp_path / "m.npz")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_held_out_rule_keeps_whole_subjects_test_splits_and_mt_bench_apart() -> None:
    assert held_out(Row(id="x", prompt="p", scores={}, split="test"))
    assert held_out(Row(id="x", prompt="p", scores={}, source="mt_bench/writing"))
    unseen = [Row(id=str(i), prompt="p", scores={}, source="mmlu/virology") for i in range(50)]
    assert all(held_out(r) for r in unseen)  # virology is a held-out subject
    seen = [Row(id=str(i), prompt="p", scores={}, source="mmlu/anatomy") for i in range(200)]
    share = sum(held_out(r) for r in seen) / len(seen)
    assert 0.1 < share < 0.3  # other subjects: about one row in five by id hash


def test_retraining_with_the_same_seed_writes_the_same_weights(tmp_path: Path) -> None:
    import numpy as np

    args = ["--keep", "50", "--hidden", "8", "--folds", "2"]
    for name in ("a.npz", "b.npz"):
        res = CliRunner().invoke(app, ["route-train", str(FIXTURES), "--out", str(tmp_path / name), *args])
        assert res.exit_code == 0, res.output
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
