"""``turnstile route-eval``: both kinds of figures on the fixture slices, errors named, and the
held-out and leave-one-domain-out numbers on the whole routing corpus (skipped when it is
absent: set TURNSTILE_CORPUS)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from gateway.cli import app
from routers.eval import Group, evaluate_group

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "routing"
CORPUS = Path(os.environ.get("TURNSTILE_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus"))
needs_corpus = pytest.mark.skipif(
    not (CORPUS / "routing").is_dir(), reason="routing corpus absent (set TURNSTILE_CORPUS)"
)


def _group(p: list[float], qs: list[float], qc: list[float]) -> Group:
    n = len(p)
    return Group(
        "g",
        "s",
        "c",
        np.array(p),
        np.array(qs, float),
        np.array(qc, float),
        np.full(n, 10.0),
        np.full(n, 0.1),
    )


def test_a_perfect_scorer_matches_the_oracle_and_the_fixed_threshold_outcome_is_reported() -> None:
    qs, qc = [1, 1, 1, 1, 0, 1, 1, 1], [0, 0, 1, 1, 0, 1, 1, 1]
    g = _group([0.9, 0.8, 0.1, 0.2, 0.3, 0.1, 0.2, 0.1], qs, qc)
    res = evaluate_group(g, 0.5, boots=0)
    assert res["router"]["cost_saved_at_95"] == pytest.approx(res["oracle"]["cost_saved_at_95"])
    assert res["router"]["strong_share_at_95"] == pytest.approx(2 / 8)
    assert res["router"]["apgr"] > res["random"]["apgr"] == 0.5
    fixed = res["router"]["fixed"]
    assert (
        fixed["threshold"] == 0.5
        and fixed["quality_share"] == pytest.approx(1.0)
        and fixed["strong_share"] == 0.25
    )


def test_cli_prints_both_kinds_of_figures_and_writes_json_and_a_plot(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(
        app, ["route-eval", str(FIXTURES), "--all", "--boots", "20", "--plot", str(tmp_path / "p.png")]
    )
    assert out.exit_code == 0, out.output
    assert "mmlu" in out.output and "gsm8k" in out.output and "oracle" in out.output
    assert "fixed threshold" in out.output and "target 0.95" in out.output
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    js = runner.invoke(
        app, ["route-eval", str(FIXTURES / "routellm-slice.jsonl"), "--all", "--json", "--boots", "10"]
    )
    data = orjson.loads(js.output)
    groups = {r["group"]: r for r in data["results"]}
    assert {"mmlu", "gsm8k", "mt_bench"} <= set(groups) and data["routellm_published"]["mmlu"] == 0.45
    fixed = groups["mmlu"]["router"]["fixed"]
    assert fixed["threshold"] == data["threshold"] and 0 <= fixed["strong_share"] <= 1
    assert "fixed_quality_share" in groups["mmlu"]["router"]["ci95"]


def test_by_domain_trains_with_each_domain_left_out(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        [
            "route-eval",
            str(FIXTURES),
            "--all",
            "--json",
            "--boots",
            "5",
            "--by-domain",
            "--train-data",
            str(FIXTURES),
        ],
    )
    assert res.exit_code == 0, res.output
    domains = {d["domain"]: d for d in orjson.loads(res.output)["by_domain"]}
    assert "family llmrouter-dcrouter" in domains
    d = domains["family llmrouter-dcrouter"]
    assert d["trained_rows"] < 100 and "apgr" in d["left_out"] and "apgr" in d["in_domain"]


def test_by_domain_without_training_data_exits_2_naming_the_folder_before_any_work(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    res = CliRunner().invoke(
        app, ["route-eval", str(FIXTURES), "--all", "--by-domain", "--train-data", str(missing)]
    )
    assert res.exit_code == 2 and f"--train-data {missing}: no such file or directory" in res.output


def test_cli_refuses_a_missing_path_and_a_bad_model(tmp_path: Path) -> None:
    assert CliRunner().invoke(app, ["route-eval", "/nonexistent/routing"]).exit_code == 2
    bad = tmp_path / "m.npz"
    bad.write_bytes(b"x")
    out = CliRunner().invoke(app, ["route-eval", str(FIXTURES), "--model", str(bad)])
    assert out.exit_code == 2 and "not a readable router weights file" in out.output


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"id":"1","prompt":"x","scores":{"a":1,"b":0}}\n{"id":\n', ":2: not JSON"),
        ("", "at least two models"),
        ("[1, 2]\n", ":1: not a routing row"),
    ],
)
def test_bad_data_files_are_named_with_their_line_and_exit_2(
    tmp_path: Path, content: str, words: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(content)
    result = CliRunner().invoke(app, ["route-eval", str(data)])
    assert result.exit_code == 2 and words in result.output


def test_a_plot_into_a_missing_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id":"1","prompt":"x","scores":{"a":1,"b":0}}\n')
    result = CliRunner().invoke(app, ["route-eval", str(data), "--plot", str(tmp_path / "no" / "x.png")])
    assert result.exit_code == 2 and "does not exist" in result.output


@needs_corpus
def test_held_out_figures_on_the_corpus_beat_random_and_the_fixed_threshold_is_reported() -> None:
    out = CliRunner().invoke(app, ["route-eval", str(CORPUS / "routing"), "--json", "--boots", "50"])
    assert out.exit_code == 0, out.output
    res = {r["group"]: r for r in orjson.loads(out.output)["results"]}
    for group in ("mmlu-seen-subjects", "gsm8k", "mt_bench"):
        router = res[group]["router"]
        assert router["ci95"]["apgr"][1] > 0.5, group  # never reliably worse than random
        assert router["ci95"]["fixed_quality_share"][1] >= 0.95, group  # the target is not missed
    lo, hi = res["mmlu-seen-subjects"]["router"]["ci95"]["fixed_quality_share"]
    assert lo <= 0.95 <= hi  # where development data looks like it, the target is hit, not overshot
    assert res["mmlu"]["router"]["ci95"]["apgr"][0] > 0.5
    assert res["mmlu"]["router"]["cost_saved_at_95"] >= 0.40
    assert res["mmlu-unseen-subjects"]["router"]["apgr"] > 0.5
    assert res["mt_bench"]["rows"] <= 121
