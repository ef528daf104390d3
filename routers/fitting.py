"""Fitting the learned router's model (offline; scikit-learn is imported only here and in
:mod:`routers.candidates`, never on the serving path).

The model (:class:`routers.scorer.RouteModel`) blends a lexical logistic regression, a
small ReLU network over the prompt embedding and the gated family experts
(:mod:`routers.families`); :func:`fit_model` fits the three on training rows and the blend on
their out-of-fold logits. The label of a row is "the strong model did
better than the cheap one"; every benchmark group gets the same total weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from routers.embed import Embedder
from routers.families import FamilyTable, fit_families
from routers.lexical import DENSE_FEATURES, featurize
from routers.lexical_fit import fit_lexical
from routers.scorer import RouteModel


@dataclass
class Hyper:
    """Training settings (the defaults are what the shipped model uses): ``c`` inverse L2
    strength of the lexical model, ``keep`` its largest coefficients kept (0 = all),
    ``hidden`` units and ``alpha`` L2 penalty of the network, ``c_family`` inverse L2
    strength of each family expert and ``c_gate`` of the family gate (:mod:`routers.families`;
    both keep ``keep`` terms), ``folds`` for out-of-fold scores, ``seed`` for every random
    choice."""

    c: float = 1.0
    keep: int = 6000
    hidden: int = 128
    alpha: float = 10.0
    c_family: float = 3.0
    c_gate: float = 1.0
    folds: int = 5
    seed: int = 0


@dataclass
class Features:
    """Features of rows: ``lex`` (:func:`featurize` dicts) and ``net`` (embedding then dense
    shape features, not standardised; shape (n, dim + len(DENSE_FEATURES)))."""

    lex: list[dict[str, float]]
    net: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)

    def take(self, idx: np.ndarray) -> Features:
        """The rows at ``idx``."""
        return Features([self.lex[i] for i in idx], self.net[idx])


@dataclass
class Base:
    """The three fitted parts of a model before the blend."""

    intercept: float
    weights: dict[str, float]
    network: Network
    families: FamilyTable

    def model(self, blend: np.ndarray) -> RouteModel:
        """The route model of these parts with ``blend`` (``[a, b, c, d]``)."""
        n = self.network
        return RouteModel(
            lex_weights=self.weights,
            lex_intercept=self.intercept,
            mean=n.mean,
            scale=n.scale,
            w1=n.w1,
            b1=n.b1,
            w2=n.w2,
            b2=n.b2,
            blend=blend,
            families=self.families,
        )


def features(texts: list[str], embedder: Embedder) -> Features:
    """:class:`Features` of ``texts`` (the serving scorer computes the same per text)."""
    lex = [featurize(t) for t in texts]
    emb = embedder.embed_many(texts)
    dense = np.array([[f[k] for k in DENSE_FEATURES] for f in lex], dtype=np.float32)
    return Features(lex, np.hstack([emb, dense]).astype(np.float32))


def lexical_logits(intercept: float, weights: dict[str, float], lex: list[dict[str, float]]) -> np.ndarray:
    """The lexical logit of each row, as :meth:`RouteModel.lexical_logit` computes it."""
    out = np.empty(len(lex))
    for i, feats in enumerate(lex):
        z = intercept
        for k, v in feats.items():
            coef = weights.get(k)
            if coef is not None:
                z += coef * v
        out[i] = z
    return out


@dataclass
class Network:
    """A fitted network: standardisation ``mean``/``scale`` and layers ``w1``, ``b1``, ``w2``,
    ``b2`` (float32)."""

    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: float

    def logits(self, net: np.ndarray) -> np.ndarray:
        """Logits of rows ``net`` (not standardised), as :meth:`RouteModel.network_logit`."""
        x = (net.astype(np.float32) - self.mean) / self.scale
        h = np.maximum(x @ self.w1 + self.b1, 0.0)
        return (h @ self.w2).astype(np.float64) + self.b2


def fit_network(net: np.ndarray, y: np.ndarray, w: np.ndarray, hyper: Hyper) -> Network:
    """A one-hidden-layer ReLU network (scikit-learn ``MLPClassifier``, Adam, early stopping on
    10% of the rows) on standardised ``net``."""
    from sklearn.neural_network import MLPClassifier

    mean = net.mean(axis=0).astype(np.float32)
    scale = net.std(axis=0).astype(np.float32)
    scale[scale < 1e-6] = 1.0
    x = (net - mean) / scale
    model = MLPClassifier(
        hidden_layer_sizes=(hyper.hidden,),
        alpha=hyper.alpha,
        max_iter=300,
        early_stopping=True,
        random_state=hyper.seed,
    ).fit(x, y, sample_weight=w)
    return Network(
        mean=mean,
        scale=scale,
        w1=model.coefs_[0].astype(np.float32),
        b1=model.intercepts_[0].astype(np.float32),
        w2=model.coefs_[1][:, 0].astype(np.float32),
        b2=float(model.intercepts_[1][0]),
    )


def fit_blend(logits: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``[a, b, c, d]`` of ``a * z_lex + b * z_net + c * z_family + d`` by logistic regression
    (weak L2); ``logits`` (n, 3) are the parts' out-of-fold logits."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=100.0, max_iter=1000).fit(logits, y, sample_weight=w)
    return np.array([*model.coef_[0], model.intercept_[0]], dtype=np.float64)


def folds_of(groups: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    """``k`` disjoint test folds covering the rows, stratified by group (row indices)."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(groups), dtype=int)
    for g in dict.fromkeys(groups.tolist()):
        idx = np.nonzero(groups == g)[0]
        fold[rng.permutation(idx)] = np.arange(len(idx)) % k
    return [np.nonzero(fold == i)[0] for i in range(k)]


def fit_base(feats: Features, y: np.ndarray, w: np.ndarray, groups: np.ndarray, hyper: Hyper) -> Base:
    """The lexical model, the network and the family experts fitted on all of ``feats``
    (``groups``: each row's benchmark family)."""
    intercept, weights = fit_lexical(feats.lex, y, w, hyper.c, hyper.keep, hyper.seed)
    families = fit_families(
        feats.lex,
        y,
        w,
        groups,
        c_family=hyper.c_family,
        c_gate=hyper.c_gate,
        keep=hyper.keep,
        seed=hyper.seed,
    )
    return Base(intercept, weights, fit_network(feats.net, y, w, hyper), families)


def base_logits(base: Base, feats: Features) -> np.ndarray:
    """The parts' logits of rows ``feats``, shape (n, 3): lexical, network, family."""
    return np.column_stack(
        [
            lexical_logits(base.intercept, base.weights, feats.lex),
            base.network.logits(feats.net),
            base.families.logits(feats.lex),
        ]
    )


def oof_base_logits(
    feats: Features, y: np.ndarray, w: np.ndarray, groups: np.ndarray, hyper: Hyper
) -> np.ndarray:
    """Out-of-fold logits of the parts, shape (n, 3) (each row's from parts fitted on the
    other folds)."""
    z = np.zeros((len(y), 3))
    for test in folds_of(groups, hyper.folds, hyper.seed):
        train = np.setdiff1d(np.arange(len(y)), test)
        base = fit_base(feats.take(train), y[train], w[train], groups[train], hyper)
        z[test] = base_logits(base, feats.take(test))
    return z


def fit_model(
    feats: Features, y: np.ndarray, w: np.ndarray, groups: np.ndarray, hyper: Hyper
) -> tuple[RouteModel, np.ndarray]:
    """The model fitted on all the rows, and the out-of-fold probability of every row (for
    calibration). The blend is fitted on out-of-fold logits."""
    z = oof_base_logits(feats, y, w, groups, hyper)
    blend = fit_blend(z, y, w)
    oof = 1.0 / (1.0 + np.exp(-(z @ blend[:3] + blend[3])))
    return fit_base(feats, y, w, groups, hyper).model(blend), oof


def model_probabilities(model: RouteModel, feats: Features) -> np.ndarray:
    """The training-time computation of :meth:`RouteModel.score` for rows ``feats``."""
    net = Network(model.mean, model.scale, model.w1, model.b1, model.w2, model.b2)
    z = (
        model.blend[0] * lexical_logits(model.lex_intercept, model.lex_weights, feats.lex)
        + model.blend[1] * net.logits(feats.net)
        + model.blend[2] * model.families.logits(feats.lex)
        + model.blend[3]
    )
    return 1.0 / (1.0 + np.exp(-z))
