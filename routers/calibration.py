"""Thresholds for quality targets, calibrated on development rows (numpy only).

A quality target ``t`` asks that routing keep ``t`` x the strong model's mean quality. The
threshold for ``t`` is read from out-of-fold scores of the training rows (each scored by a
model that did not see it; :mod:`routers.train`): among the candidate thresholds (the score
quantiles, fewest strong calls first), the first at which **every** calibration group (a
benchmark with at least :data:`MIN_GROUP_ROWS` rows) reaches ``t`` on its own rows. Requiring
every group, rather than the pooled rows, keeps the target on each kind of traffic seen in
development instead of averaging a shortfall on one against a surplus on another; the price is
extra strong calls on the groups that reach it early.

Thresholds are never chosen on the rows an evaluation scores: ``route-eval`` reads them from
the weights file.
"""

from __future__ import annotations

import numpy as np

#: Targets in the calibration table stored with a model (0.80, 0.81, ..., 1.00).
TARGETS = np.round(np.arange(0.80, 1.0001, 0.01), 2)
#: Groups smaller than this are not calibrated on (too noisy to constrain the threshold).
MIN_GROUP_ROWS = 200
#: Candidate thresholds: score quantiles at this many points.
GRID = 2001


def quality_share(p: np.ndarray, threshold: float, qs: np.ndarray, qc: np.ndarray) -> float:
    """Mean quality with ``p >= threshold`` -> strong, as a share of always-strong's."""
    strong = float(qs.mean())
    return float(np.where(p >= threshold, qs, qc).mean()) / strong if strong > 0 else 1.0


def calibrate(
    p: np.ndarray,
    qs: np.ndarray,
    qc: np.ndarray,
    groups: np.ndarray,
    targets: np.ndarray = TARGETS,
) -> np.ndarray:
    """Threshold per target (same order as ``targets``): the highest candidate threshold at
    which every calibration group reaches the target; 0.0 (always strong) when none does.

    ``p``: out-of-fold scores; ``qs``/``qc``: strong/cheap quality per row; ``groups``: the
    row's benchmark group; when no group has :data:`MIN_GROUP_ROWS` rows, all rows count as
    one group. Raises ``ValueError`` when there is no row."""
    if not len(p):
        raise ValueError("no calibration rows")
    names = [g for g in dict.fromkeys(groups.tolist()) if int((groups == g).sum()) >= MIN_GROUP_ROWS]
    if not names:  # small data: all rows as one group
        groups = np.zeros(len(p), dtype=int)
        names = [0]
    cands = np.unique(np.quantile(p, np.linspace(0.0, 1.0, GRID)))[::-1]  # high -> low
    cands = np.concatenate([[np.inf], cands])
    masks = [groups == g for g in names]
    strong = np.array([qs[m].mean() for m in masks])
    # shares[j, k]: group k's quality share at candidate j
    shares = np.empty((len(cands), len(names)))
    for k, m in enumerate(masks):
        pk, qsk, qck = p[m], qs[m], qc[m]
        for j, t in enumerate(cands):
            shares[j, k] = np.where(pk >= t, qsk, qck).mean() / strong[k] if strong[k] > 0 else 1.0
    worst = shares.min(axis=1)
    out = np.zeros(len(targets))
    for i, t in enumerate(targets):
        ok = np.nonzero(worst >= t - 1e-12)[0]
        out[i] = float(cands[ok[0]]) if len(ok) else 0.0
    out[np.isinf(out)] = 1.0 + 1e-9  # even always-cheap reaches it: a threshold nothing passes
    return out
