"""``turnstile route-eval``: metrics on hand-made data, the CLI on corpus slices, and the
held-out numbers on the whole routing corpus (skipped when the corpus is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from gateway.cli import app
from routers.eval import Group, curve, evaluate_group, summarise

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "routing"
CORPUS = Path(os.environ.get("TURNSTILE_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus"))


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


def test_a_perfect_scorer_matches_the_oracle_and_beats_random() -> None:
    qs, qc = [1, 1, 1, 1, 0, 1, 1, 1], [0, 0, 1, 1, 0, 1, 1, 1]
    g = _group([0.9, 0.8, 0.1, 0.2, 0.3, 0.1, 0.2, 0.1], qs, qc)
    res = evaluate_group(g, boots=0)
    assert res["router"]["cost_saved_at_95"] == pytest.approx(res["oracle"]["cost_saved_at_95"])
    assert res["router"]["strong_share_at_95"] == pytest.approx(2 / 8)
    assert res["router"]["apgr"] > res["random"]["apgr"] == 0.5


def test_curve_endpoints_are_always_cheap_and_always_strong() -> None:
    g = _group([0.5, 0.4, 0.3], [1, 1, 0], [0, 1, 0])
    quality, cost = curve(np.arange(3), g)
    assert quality[0] == pytest.approx(1 / 3) and quality[-1] == pytest.approx(2 / 3)
    assert cost[0] == pytest.approx(0.3) and cost[-1] == pytest.approx(30.0)
    s = summarise(quality, cost)
    assert 0 <= s["strong_share_at_95"] <= 1


def test_cli_prints_a_table_and_writes_json_and_a_plot(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(
        app, ["route-eval", str(FIXTURES), "--all", "--boots", "20", "--plot", str(tmp_path / "p.png")]
    )
    assert out.exit_code == 0, out.output
    assert "mmlu" in out.output and "gsm8k" in out.output and "oracle" in out.output
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    js = runner.invoke(
        app, ["route-eval", str(FIXTURES / "routellm-slice.jsonl"), "--all", "--json", "--boots", "10"]
    )
    data = orjson.loads(js.output)
    groups = {r["group"] for r in data["results"]}
    assert {"mmlu", "gsm8k", "mt_bench"} <= groups and data["routellm_published"]["mmlu"] == 0.45


def test_cli_refuses_a_missing_path() -> None:
    out = CliRunner().invoke(app, ["route-eval", "/nonexistent/routing"])
    assert out.exit_code == 2


@pytest.mark.skipif(not (CORPUS / "routing").is_dir(), reason="routing corpus absent (set TURNSTILE_CORPUS)")
def test_held_out_mmlu_saving_reaches_routellm_and_apgr_is_clear_of_random() -> None:
    out = CliRunner().invoke(app, ["route-eval", str(CORPUS / "routing"), "--json", "--boots", "50"])
    assert out.exit_code == 0, out.output
    res = {r["group"]: r for r in orjson.loads(out.output)["results"]}
    mmlu = res["mmlu"]["router"]
    assert mmlu["cost_saved_at_95"] >= 0.45 and mmlu["ci95"]["apgr"][0] > 0.5
    assert res["mmlu-unseen-subjects"]["router"]["apgr"] > 0.5
    assert res["mt_bench"]["rows"] <= 121


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
