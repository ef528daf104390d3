"""Cost–quality figures of a router's scores on rows of known outcomes (numpy only).

Inputs are arrays over the same rows: ``p`` the router's score (higher = more likely to need
the strong model), ``qs``/``qc`` the quality of the strong/cheap model's answer (0..1), and
``cs``/``cc`` the cost of the row on each (USD).

* **curve figures** (RouteLLM, arXiv 2406.18665 and ``routellm/evals``): the router's ranking is
  swept over every share of strong calls;
  - **APGR** as RouteLLM's evaluation computes it: thresholds at the 11 quantile edges of the
    scores (10 bins), each giving (share of strong calls, mean quality); trapezoid area under
    quality over share, minus the always-cheap area, over the always-strong minus always-cheap
    area. Random routing scores 0.5; it can exceed 1 when the cheap model is right where the
    strong one is wrong. :func:`apgr_fine` is the same area over every share (k/n);
  - **cost saved at 95%**: ``1 - cost / cost(always strong)`` at the cheapest point of the
    curve whose mean quality reaches 95% of always-strong's. This point is chosen on the rows
    being scored (it is how RouteLLM reports), so it is an optimistic figure;
* **fixed-threshold outcome** (:func:`fixed_outcome`): what a router with a threshold chosen
  beforehand actually reaches on the rows: quality as a share of always-strong's, cost saved,
  share of strong calls.

:func:`bootstrap` resamples rows for 95% intervals of any of these.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

TARGET = 0.95
#: RouteLLM's evaluation sweeps ``num_results=10`` quantile bins of the scores.
ROUTELLM_BINS = 10


def curve(
    p: np.ndarray, qs: np.ndarray, qc: np.ndarray, cs: np.ndarray, cc: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean quality and total cost (arrays of length n+1) when the ``k`` highest-scored rows go
    to the strong model, for k = 0..n (ties in input order)."""
    o = np.argsort(-p, kind="stable")
    qs, qc, cs, cc = qs[o], qc[o], cs[o], cc[o]
    n = len(qs)
    zero = np.zeros(1)
    quality = (
        np.concatenate([zero, np.cumsum(qs)]) + np.concatenate([[qc.sum()], qc.sum() - np.cumsum(qc)])
    ) / n
    cost = np.concatenate([zero, np.cumsum(cs)]) + np.concatenate([[cc.sum()], cc.sum() - np.cumsum(cc)])
    return quality, cost


def apgr_routellm(p: np.ndarray, qs: np.ndarray, qc: np.ndarray, bins: int = ROUTELLM_BINS) -> float:
    """APGR as RouteLLM's ``evaluate.py`` computes it (see module docstring). NaN when the
    strong model is not better on average."""
    strong, cheap = float(qs.mean()), float(qc.mean())
    if strong <= cheap:
        return float("nan")
    edges = np.quantile(p, np.linspace(0.0, 1.0, bins + 1))
    points = []
    for i, t in enumerate(edges):
        sel = p > t if i == bins else p >= t
        points.append((float(sel.mean()), float(np.where(sel, qs, qc).mean())))
    points.sort()
    x = np.array([a for a, _ in points])
    y = np.array([b for _, b in points])
    span = x[-1] - x[0]
    if span <= 0:
        return float("nan")
    auc = float(np.sum((y[1:] + y[:-1]) / 2 * np.diff(x)))
    return (auc - cheap * span) / ((strong - cheap) * span)


def apgr_fine(quality: np.ndarray) -> float:
    """Area under the performance-gap-recovered curve over every share k/n (from :func:`curve`'s
    quality; first point always-cheap, last always-strong)."""
    n = len(quality) - 1
    gap = quality[-1] - quality[0]
    if gap <= 0:
        return float("nan")
    pgr = (quality - quality[0]) / gap
    return float(np.sum((pgr[1:] + pgr[:-1]) / 2) / n)


def at_target(quality: np.ndarray, cost: np.ndarray, target: float = TARGET) -> dict[str, float]:
    """Cheapest point of a curve reaching ``target`` x always-strong's quality: cost saved
    (fraction of always-strong's cost), share of strong calls, quality there."""
    n = len(quality) - 1
    ok = np.nonzero(quality >= target * quality[-1] - 1e-12)[0]
    best = int(ok[np.argmin(cost[ok])])
    return {
        "cost_saved": float(1 - cost[best] / cost[-1]) if cost[-1] > 0 else 0.0,
        "strong_share": best / n,
        "quality": float(quality[best]),
    }


def curve_figures(
    p: np.ndarray, qs: np.ndarray, qc: np.ndarray, cs: np.ndarray, cc: np.ndarray, target: float = TARGET
) -> dict[str, float]:
    """``apgr`` (RouteLLM's), ``apgr_fine``, ``cost_saved_at_95`` and ``strong_share_at_95``
    (at ``target``) of scores ``p``."""
    quality, cost = curve(p, qs, qc, cs, cc)
    best = at_target(quality, cost, target)
    return {
        "apgr": apgr_routellm(p, qs, qc),
        "apgr_fine": apgr_fine(quality),
        "cost_saved_at_95": best["cost_saved"],
        "strong_share_at_95": best["strong_share"],
        "quality_at_95": best["quality"],
    }


def fixed_outcome(
    p: np.ndarray, threshold: float, qs: np.ndarray, qc: np.ndarray, cs: np.ndarray, cc: np.ndarray
) -> dict[str, float]:
    """What routing with a fixed ``threshold`` reaches (``p >= threshold`` -> strong):
    ``quality_share`` (mean quality / always-strong's), ``quality``, ``cost_saved`` (vs
    always-strong) and ``strong_share``."""
    sel = p >= threshold
    quality = float(np.where(sel, qs, qc).mean())
    strong = float(qs.mean())
    cost = float(np.where(sel, cs, cc).sum())
    total = float(cs.sum())
    return {
        "quality_share": quality / strong if strong > 0 else float("nan"),
        "quality": quality,
        "cost_saved": 1 - cost / total if total > 0 else 0.0,
        "strong_share": float(sel.mean()),
    }


def bootstrap(
    n: int, stat: Callable[[np.ndarray], dict[str, float]], *, boots: int = 200, seed: int = 0
) -> dict[str, list[float] | None]:
    """95% percentile intervals of each figure ``stat(idx)`` returns, over ``boots`` resamples of
    ``n`` rows with replacement (``idx`` the resampled row indices). Resamples whose figure is
    NaN are left out of that figure; a figure with none left gets None."""
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {}
    for _ in range(boots):
        idx = rng.integers(0, n, n)
        for k, v in stat(idx).items():
            if not np.isnan(v):
                samples.setdefault(k, []).append(v)
    return {
        k: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] if v else None
        for k, v in samples.items()
    }
