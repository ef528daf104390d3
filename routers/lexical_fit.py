"""Fitting one lexical logistic regression (offline; scikit-learn imported inside): the
learned router's lexical part (:mod:`routers.fitting`) and each family expert
(:mod:`routers.families`)."""

from __future__ import annotations

import numpy as np

#: A lexical term is a feature when it occurs in at least this many training rows.
MIN_ROWS = 2


def fit_lexical(
    lex: list[dict[str, float]], y: np.ndarray, w: np.ndarray, c: float, keep: int, seed: int = 0
) -> tuple[float, dict[str, float]]:
    """Logistic regression (liblinear, L2, ``c``) over the terms of ``lex`` present in at least
    :data:`MIN_ROWS` rows; ``(intercept, coefficients)`` with the ``keep`` largest by magnitude
    (all when ``keep`` is 0), rounded to 1e-5."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = DictVectorizer()
    x = vec.fit_transform(lex).tocsc()
    # terms of a single row cannot generalise: left out (and the fit is several times faster)
    seen = np.nonzero(np.diff(x.indptr) >= MIN_ROWS)[0]
    x = x[:, seen].tocsr()
    x.indices = x.indices.astype(np.int32)  # liblinear takes 32-bit indices only
    x.indptr = x.indptr.astype(np.int32)
    # liblinear shuffles with its random_state: fixed, so a retrain writes the same weights
    model = LogisticRegression(C=c, solver="liblinear", max_iter=3000, random_state=seed).fit(
        x, y, sample_weight=w
    )
    coef = model.coef_[0]
    names = vec.get_feature_names_out()[seen]
    order = np.argsort(-np.abs(coef), kind="stable")
    top = order[:keep] if keep else order
    weights = {str(names[i]): round(float(coef[i]), 5) for i in top if coef[i] != 0}
    return round(float(model.intercept_[0]), 6), dict(sorted(weights.items()))
