"""Cost–quality figures: RouteLLM's APGR, cost saved at 95%, fixed-threshold outcome, bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from routers.metrics import (
    apgr_fine,
    apgr_routellm,
    at_target,
    bootstrap,
    curve,
    curve_figures,
    fixed_outcome,
)


def _data(n: int = 2000, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    qc = (rng.random(n) < 0.6).astype(float)
    qs = np.maximum(qc, (rng.random(n) < 0.85).astype(float))
    return qs, qc, np.full(n, 10.0), np.full(n, 0.1)


def test_a_perfect_ranking_beats_random_and_random_is_near_one_half() -> None:
    qs, qc, cs, cc = _data()
    rand = np.random.default_rng(1).random(len(qs))
    perfect = qs - qc + rand * 1e-3  # ties broken: RouteLLM's quantile thresholds need distinct scores
    # the oracle's curve reaches the strong quality once every row the strong model wins is
    # routed (a third of them here): RouteLLM's 10-bin area is then about 1 - 0.34 / 2
    assert apgr_routellm(perfect, qs, qc) > 0.8
    assert apgr_routellm(rand, qs, qc) == pytest.approx(0.5, abs=0.05)
    assert apgr_fine(curve(rand, qs, qc, cs, cc)[0]) == pytest.approx(0.5, abs=0.05)


def test_routellm_apgr_uses_ten_quantile_bins() -> None:
    qs, qc, _, _ = _data(1000)
    p = qs - qc + np.linspace(0, 0.5, 1000)
    coarse, fine = apgr_routellm(p, qs, qc, bins=10), apgr_routellm(p, qs, qc, bins=1000)
    assert coarse != fine and abs(coarse - fine) < 0.05


def test_cost_saved_at_target_is_the_cheapest_point_reaching_it() -> None:
    qs = np.array([1.0, 1.0, 0.0, 1.0])
    qc = np.array([0.0, 1.0, 0.0, 1.0])
    cs, cc = np.full(4, 10.0), np.full(4, 0.0)
    q, c = curve(np.array([0.9, 0.1, 0.2, 0.3]), qs, qc, cs, cc)
    best = at_target(q, c, 0.95)
    assert best["strong_share"] == 0.25 and best["cost_saved"] == pytest.approx(0.75)


def test_fixed_outcome_reports_quality_share_and_cost_at_the_threshold() -> None:
    qs = np.array([1.0, 1.0, 1.0, 0.0])
    qc = np.array([0.0, 1.0, 0.0, 0.0])
    cs, cc = np.full(4, 1.0), np.zeros(4)
    out = fixed_outcome(np.array([0.9, 0.2, 0.7, 0.1]), 0.5, qs, qc, cs, cc)
    assert out == {"quality_share": 1.0, "quality": 0.75, "cost_saved": 0.5, "strong_share": 0.5}


def test_bootstrap_intervals_cover_the_point_estimate_and_skip_nan() -> None:
    qs, qc, cs, cc = _data(800)
    p = qs - qc + np.random.default_rng(2).random(len(qs))
    point = curve_figures(p, qs, qc, cs, cc)

    def stat(idx: np.ndarray) -> dict[str, float]:
        f = curve_figures(p[idx], qs[idx], qc[idx], cs[idx], cc[idx])
        return {"apgr": f["apgr"], "never": float("nan")}

    ci = bootstrap(len(p), stat, boots=100, seed=0)
    assert ci["apgr"] is not None and ci["apgr"][0] <= point["apgr"] <= ci["apgr"][1]
    assert "never" not in ci
    assert ci == bootstrap(len(p), stat, boots=100, seed=0)  # deterministic for a seed
