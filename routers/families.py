"""Family experts of the learned router: one lexical model per benchmark family, mixed by a gate.

A single logistic regression over every family's rows learns, besides what makes a prompt
hard *within* a family, which family is harder on average, and one set of term weights must
serve families whose hard prompts look different (a word problem Mixtral misses, an exam
question of a subject it does not know, a trivia question the small open model misses). The
routing figures are read within a family, so the router carries, next to the shared models,

* one **expert** per family: a logistic regression over :func:`routers.lexical.featurize`
  fitted on that family's rows only (label "the strong model did better");
* a **gate**: a multinomial logistic regression over the same features predicting the family
  of a prompt (classes balanced);

and the family logit of a text is ``sum_f gate_f(text) * expert_f(text)``. At serving time a
prompt of no known family gets the experts mixed by how much it resembles each family.

Out of fold on the training rows (5 folds stratified by family, seed 0) the family experts
raised RouteLLM's APGR from 0.630 / 0.548 / 0.685 (MMLU / GSM8K / LLMRouter, the shipped
blend) to about 0.64 / 0.56 / 0.72 (docs/routing.md).

Serving is numpy only (:class:`FamilyTable`); fitting (:func:`fit_families`) uses scikit-learn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from routers.lexical_fit import MIN_ROWS, fit_lexical

#: A family gets an expert when it has at least this many training rows with both labels.
MIN_FAMILY_ROWS = 20


@dataclass
class FamilyTable:
    """The experts and the gate as one coefficient table.

    ``names`` (F families); ``index`` feature -> row of ``coef``; ``coef`` (K, 2F) float32:
    columns ``0..F-1`` the experts' coefficients, ``F..2F-1`` the gate's; ``intercept`` (2F,)
    float64. With one family the gate is constant and the expert decides; with none the
    family logit is 0."""

    names: list[str]
    index: dict[str, int]
    coef: np.ndarray
    intercept: np.ndarray

    @classmethod
    def empty(cls) -> FamilyTable:
        """A table with no family (family logit 0)."""
        return cls([], {}, np.zeros((0, 0), np.float32), np.zeros(0))

    def mix(self, z: np.ndarray) -> float:
        """The gated family logit from the table's ``2F`` raw logits ``z`` (experts, gate)."""
        f = len(self.names)
        expert, gate = z[:f], z[f:]
        if f == 1:
            return float(expert[0])
        g = np.exp(gate - gate.max())
        return float(g @ expert) / float(g.sum())

    def logit(self, feats: dict[str, float]) -> float:
        """The gated family logit of one text's :func:`featurize` output ``feats``."""
        if not self.names:
            return 0.0
        index = self.index
        idx: list[int] = []
        vals: list[float] = []
        for k, v in feats.items():
            i = index.get(k)
            if i is not None:
                idx.append(i)
                vals.append(v)
        z = self.intercept + np.asarray(vals, dtype=np.float64) @ self.coef[idx] if idx else self.intercept
        return self.mix(z)

    def logits(self, lex: list[dict[str, float]]) -> np.ndarray:
        """:meth:`logit` of each row (shape (n,))."""
        return np.array([self.logit(f) for f in lex], dtype=np.float64)

    def gate(self, feats: dict[str, float]) -> dict[str, float]:
        """Family -> gate probability for ``feats`` (for inspection; sums to 1)."""
        if not self.names:
            return {}
        f = len(self.names)
        z = self.intercept.copy()
        for k, v in feats.items():
            i = self.index.get(k)
            if i is not None:
                z += v * self.coef[i]
        g = np.exp(z[f:] - z[f:].max()) if f > 1 else np.ones(1)
        g /= g.sum()
        return {n: float(p) for n, p in zip(self.names, g, strict=True)}


def _vectorize(lex: list[dict[str, float]], min_rows: int):  # type: ignore[no-untyped-def]
    from sklearn.feature_extraction import DictVectorizer

    vec = DictVectorizer()
    x = vec.fit_transform(lex).tocsc()
    seen = np.nonzero(np.diff(x.indptr) >= min_rows)[0]
    return x[:, seen].tocsr(), vec.get_feature_names_out()[seen]


def fit_families(
    lex: list[dict[str, float]],
    y: np.ndarray,
    w: np.ndarray,
    groups: np.ndarray,
    *,
    c_family: float,
    c_gate: float,
    keep: int,
    seed: int = 0,
) -> FamilyTable:
    """Experts (:func:`routers.lexical_fit.fit_lexical` with ``c_family`` and ``keep`` on each
    family's rows; families with fewer than :data:`MIN_FAMILY_ROWS` rows or one label get
    none) and the gate (multinomial, L2 ``c_gate``, balanced classes, the ``keep`` terms of
    largest coefficient magnitude over the classes, terms in at least two rows)."""
    names: list[str] = []
    experts: list[tuple[float, dict[str, float]]] = []
    for g in sorted(set(groups.tolist())):
        m = np.nonzero(groups == g)[0]
        if len(m) < MIN_FAMILY_ROWS or len(set(y[m].tolist())) < 2:
            continue
        names.append(str(g))
        experts.append(fit_lexical([lex[i] for i in m], y[m], w[m], c_family, keep, seed))
    if not names:
        return FamilyTable.empty()
    f = len(names)
    gate_w: dict[str, np.ndarray] = {}
    gate_b = np.zeros(f)
    if f > 1:
        from sklearn.linear_model import LogisticRegression

        rows = np.nonzero(np.isin(groups, names))[0]
        x, terms = _vectorize([lex[i] for i in rows], MIN_ROWS)
        cls = np.array([names.index(str(g)) for g in groups[rows]])
        model = LogisticRegression(C=c_gate, max_iter=3000, class_weight="balanced").fit(x, cls)
        coef, bias = model.coef_, model.intercept_  # (f, terms), (f,)
        if f == 2:  # scikit-learn fits one row for two classes: p(second) = sigmoid(row)
            coef = np.vstack([np.zeros_like(coef), coef])
            bias = np.array([0.0, bias[0]])
        order = np.argsort(-np.abs(coef).max(axis=0), kind="stable")
        top = order[:keep] if keep else order
        gate_w = {str(terms[i]): np.round(coef[:, i], 5) for i in top}
        gate_b = np.round(bias, 6)
    keys = sorted(set(gate_w).union(*(e[1] for e in experts)))
    index = {k: i for i, k in enumerate(keys)}
    table = np.zeros((len(keys), 2 * f), dtype=np.float32)
    for j, (_bias, weights) in enumerate(experts):
        for k, c in weights.items():
            table[index[k], j] = c
    for k, row in gate_w.items():
        table[index[k], f:] = row
    intercept = np.concatenate([[e[0] for e in experts], gate_b]).astype(np.float64)
    return FamilyTable(names, index, table, intercept)
