"""The other router designs ``route-train --compare`` measures against the shipped one, after
RouteLLM (arXiv 2406.18665), on the same WordLlama prompt embeddings (offline only):

* **similarity-weighted ranking** (:func:`sw_scores`): a prompt's score is the
  similarity-weighted mean of "strong minus cheap quality" over its ``k`` most similar
  training prompts (cosine on centred embeddings, weight ``exp(gamma * (sim - best sim))``);
  RouteLLM weights arena battles by similarity the same way before a Bradley-Terry fit, which
  for one model pair reduces to this weighted win margin;
* **matrix factorisation** (:func:`mf_scores`): a bilinear model ``delta(m, q) = v_m . (W e_q +
  b)`` over every model of the data (the LLMRouter file has nine), fitted on every pair of
  models' outcomes on a prompt with the logistic loss (full-batch Adam, numpy); the score is
  ``sigmoid(delta(strong) - delta(cheap))`` for the row's pair.
"""

from __future__ import annotations

import numpy as np

from routers.dataset import Dataset


def _unit(x: np.ndarray, center: np.ndarray) -> np.ndarray:
    z = x - center
    n = np.linalg.norm(z, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return z / n


def sw_scores(
    emb: np.ndarray, data: Dataset, train: np.ndarray, test: np.ndarray, *, k: int = 50, gamma: float = 10.0
) -> np.ndarray:
    """Similarity-weighted scores of rows ``test`` from rows ``train`` (indices into ``emb`` and
    ``data``)."""
    center = emb[train].mean(axis=0)
    a = _unit(emb[train], center)
    margin = data.qs[train] - data.qc[train]
    k = min(k, len(train))
    out = np.empty(len(test))
    for s in range(0, len(test), 1024):
        b = _unit(emb[test[s : s + 1024]], center)
        sim = b @ a.T
        top = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        ts = np.take_along_axis(sim, top, 1)
        wts = np.exp(gamma * (ts - ts.max(axis=1, keepdims=True)))
        out[s : s + 1024] = (wts * margin[top]).sum(axis=1) / wts.sum(axis=1)
    return out


def _pairs(data: Dataset, rows: np.ndarray, models: list[str]) -> tuple[np.ndarray, ...]:
    """(row, winner, loser, weight) of every pair of models with different outcomes; each
    row's pairs share its group's weight equally."""
    index = {m: i for i, m in enumerate(models)}
    weights = data.take(rows).group_weights()
    r, win, lose, wt = [], [], [], []
    for j, i in enumerate(rows):
        sc = [(index[m], v) for m, v in data.scores[i].items() if m in index]
        pairs = [
            (a, b) if va > vb else (b, a) for n, (a, va) in enumerate(sc) for b, vb in sc[n + 1 :] if va != vb
        ]
        for a, b in pairs:
            r.append(j)
            win.append(a)
            lose.append(b)
            wt.append(weights[j] / len(pairs))
    return np.array(r), np.array(win), np.array(lose), np.array(wt)


def mf_scores(
    emb: np.ndarray,
    data: Dataset,
    train: np.ndarray,
    test: np.ndarray,
    *,
    rank: int = 32,
    steps: int = 300,
    lr: float = 0.01,
    l2: float = 1e-3,
    seed: int = 0,
) -> np.ndarray:
    """Matrix-factorisation scores of rows ``test`` from a model fitted on rows ``train``."""
    models = sorted({m for i in train for m in data.scores[i]})
    center = emb[train].mean(axis=0)
    scale = emb[train].std(axis=0) + 1e-6
    x = (emb[train] - center) / scale
    rows, win, lose, wt = _pairs(data, train, models)
    wt = wt / wt.sum()
    rng = np.random.default_rng(seed)
    params = {
        "w": rng.normal(0, 0.05, (x.shape[1], rank)),
        "b": np.zeros(rank),
        "v": rng.normal(0, 0.05, (len(models), rank)),
    }
    m1 = {k: np.zeros_like(v) for k, v in params.items()}
    m2 = {k: np.zeros_like(v) for k, v in params.items()}
    for t in range(1, steps + 1):
        u = x @ params["w"] + params["b"]  # (n, r)
        diff = params["v"][win] - params["v"][lose]  # (pairs, r)
        z = np.einsum("pr,pr->p", u[rows], diff)
        g = -wt / (1.0 + np.exp(z))  # d loss / d z for -log sigmoid(z)
        gu = np.zeros_like(u)
        np.add.at(gu, rows, g[:, None] * diff)
        gdiff = g[:, None] * u[rows]
        gv = np.zeros_like(params["v"])
        np.add.at(gv, win, gdiff)
        np.add.at(gv, lose, -gdiff)
        grads = {"w": x.T @ gu + l2 * params["w"], "b": gu.sum(axis=0), "v": gv + l2 * params["v"]}
        for k in params:
            m1[k] = 0.9 * m1[k] + 0.1 * grads[k]
            m2[k] = 0.999 * m2[k] + 0.001 * grads[k] ** 2
            params[k] -= lr * (m1[k] / (1 - 0.9**t)) / (np.sqrt(m2[k] / (1 - 0.999**t)) + 1e-8)
    index = {m: i for i, m in enumerate(models)}
    u = ((emb[test] - center) / scale) @ params["w"] + params["b"]
    out = np.empty(len(test))
    for j, i in enumerate(test):
        strong, cheap = data.pair[str(data.group[i])]
        if strong not in index or cheap not in index:
            out[j] = 0.5
            continue
        z = float(u[j] @ (params["v"][index[strong]] - params["v"][index[cheap]]))
        out[j] = 1.0 / (1.0 + np.exp(-z))
    return out
