"""The learned router's scorer at serving time: numpy only, read from one weights file.

``p(strong needed | text)`` blends three parts trained offline by ``turnstile route-train``
(:mod:`routers.train`):

* **lexical**: a logistic regression over :func:`routers.learned.featurize` (word unigrams and
  bigrams, shape features), its largest coefficients kept as a feature -> weight map;
* **embedding**: a one-hidden-layer ReLU network over the WordLlama prompt embedding
  (:mod:`routers.embed`) and the same shape features, standardised;
* **family experts**: one lexical model per benchmark family mixed by a gate over the
  families (:mod:`routers.families`);

``logit = a * lexical + b * network + c * family + d`` (``a, b, c, d`` fitted on out-of-fold
logits), ``p = sigmoid(logit)``.

The same file holds the **calibration table**: for each target quality ``t`` (share of the
strong model's mean quality), the threshold on ``p`` at which every benchmark group of the
development rows (out-of-fold scores, never rows being evaluated) reached ``t``. An alias's
``target_quality`` is turned into a threshold with :meth:`RouteModel.threshold_for`.

File: ``.npz`` (``numpy.savez_compressed``) of plain arrays, read with ``allow_pickle=False``;
``meta`` is a JSON string. Written by :func:`RouteModel.save`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from routers.embed import Embedder, shared_embedder
from routers.families import FamilyTable
from routers.lexical import DENSE_FEATURES, featurize

DEFAULT_MODEL = Path(__file__).resolve().parent / "data" / "router.npz"
KIND = "turnstile-route-model"
VERSION = 4


def _sigmoid(z: float) -> float:
    if z < -30:
        return 0.0
    if z > 30:
        return 1.0
    return 1.0 / (1.0 + math.exp(-z))


@dataclass
class RouteModel:
    """Weights of the learned router (shapes: ``d`` = embedding dim + len(DENSE_FEATURES),
    ``h`` hidden units).

    * ``lex_weights`` feature -> coefficient, ``lex_intercept``;
    * ``mean``, ``scale`` (d,): standardisation of the network's input;
    * ``w1`` (d, h), ``b1`` (h,), ``w2`` (h,), ``b2``: the network;
    * ``blend`` (4,): ``a, b, c, d`` of the blended logit;
    * ``families``: the gated family experts (:class:`routers.families.FamilyTable`);
    * ``targets``, ``thresholds``: the calibration table (targets ascending);
    * ``meta``: how it was trained (JSON-ready).
    """

    lex_weights: dict[str, float]
    lex_intercept: float
    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: float
    blend: np.ndarray
    families: FamilyTable = field(default_factory=FamilyTable.empty)
    targets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    thresholds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    meta: dict[str, Any] = field(default_factory=dict)
    embedder: Embedder | None = None
    _terms: tuple[dict[str, int], np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)

    # -- scoring ---------------------------------------------------------------------------

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            self.embedder = shared_embedder()
        return self.embedder

    def lexical_logit(self, feats: dict[str, float]) -> float:
        """The lexical model's logit for :func:`featurize` output ``feats``."""
        z = self.lex_intercept
        w = self.lex_weights
        for k, v in feats.items():
            c = w.get(k)
            if c is not None:
                z += c * v
        return z

    def _term_table(self) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        """Every term's coefficients in one table (built once): column 0 the lexical model,
        then the family table's columns, so a text's terms are looked up once for both."""
        if self._terms is None:
            fam = self.families
            keys = sorted(set(self.lex_weights) | set(fam.index))
            index = {k: i for i, k in enumerate(keys)}
            width = fam.coef.shape[1] if fam.names else 0
            coef = np.zeros((len(keys), 1 + width), dtype=np.float64)
            for k, c in self.lex_weights.items():
                coef[index[k], 0] = c
            if width:
                rows = [index[k] for k in sorted(fam.index, key=fam.index.__getitem__)]
                coef[rows, 1:] = fam.coef
            bias = np.concatenate([[self.lex_intercept], fam.intercept if width else []])
            self._terms = (index, coef, bias)
        return self._terms

    def term_logits(self, feats: dict[str, float]) -> tuple[float, float]:
        """The lexical and the family logit of :func:`featurize` output ``feats`` (equal to
        :meth:`lexical_logit` and ``families.logit`` up to float rounding), in one pass."""
        index, coef, bias = self._term_table()
        idx: list[int] = []
        vals: list[float] = []
        for k, v in feats.items():
            i = index.get(k)
            if i is not None:
                idx.append(i)
                vals.append(v)
        z = bias + np.asarray(vals, dtype=np.float64) @ coef[idx] if idx else bias
        return float(z[0]), (self.families.mix(z[1:]) if len(z) > 1 else 0.0)

    def network_input(self, text: str, feats: dict[str, float]) -> np.ndarray:
        """The network's standardised input for ``text``: embedding then shape features."""
        emb = self._embedder().embed(text)
        dense = np.array([feats[k] for k in DENSE_FEATURES], dtype=np.float32)
        return (np.concatenate([emb, dense]) - self.mean) / self.scale

    def network_logit(self, x: np.ndarray) -> float:
        """The network's logit for standardised input ``x`` (shape (d,))."""
        h = np.maximum(x @ self.w1 + self.b1, 0.0)
        return float(h @ self.w2) + self.b2

    def logit(self, text: str) -> float:
        """The blended logit for ``text``."""
        feats = featurize(text)
        a, b, c, d = (float(v) for v in self.blend)
        lex, family = self.term_logits(feats)
        return a * lex + b * self.network_logit(self.network_input(text, feats)) + c * family + d

    def score(self, text: str) -> float:
        """Probability in [0, 1] that ``text`` needs the strong model."""
        return _sigmoid(self.logit(text))

    # -- calibration -----------------------------------------------------------------------

    def threshold_for(self, target: float) -> float:
        """Threshold on :meth:`score` for ``target`` (share of the strong model's quality, in
        (0, 1]): the calibration table's threshold at the smallest calibrated target at least
        ``target`` (conservative between grid points). Raises ``ValueError`` when the model
        has no calibration table or ``target`` lies outside it."""
        if not len(self.targets):
            raise ValueError("this route model has no calibration table (retrain with route-train)")
        if not 0.0 < target <= 1.0:
            raise ValueError(f"target quality {target} is not in (0, 1]")
        i = int(np.searchsorted(self.targets, target - 1e-9))
        if i >= len(self.targets):
            return float(self.thresholds[-1])
        if i == 0 and target < self.targets[0] - 1e-9:
            return float(self.thresholds[0])
        return float(self.thresholds[i])

    # -- file ------------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the weights file (compressed ``.npz``, no pickled objects)."""
        keys = sorted(self.lex_weights)
        fam = self.families
        fam_keys = sorted(fam.index, key=fam.index.__getitem__)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fh:
            np.savez_compressed(
                fh,
                kind=np.array(KIND),
                version=np.array(VERSION),
                meta=np.array(json.dumps(self.meta, sort_keys=True)),
                lex_keys=np.array(keys, dtype=np.str_),
                lex_coef=np.array([self.lex_weights[k] for k in keys], dtype=np.float32),
                lex_intercept=np.array(self.lex_intercept, dtype=np.float64),
                mean=self.mean.astype(np.float32),
                scale=self.scale.astype(np.float32),
                w1=self.w1.astype(np.float32),
                b1=self.b1.astype(np.float32),
                w2=self.w2.astype(np.float32),
                b2=np.array(self.b2, dtype=np.float64),
                fam_names=np.array(fam.names, dtype=np.str_),
                fam_keys=np.array(fam_keys, dtype=np.str_),
                fam_coef=fam.coef.astype(np.float32),
                fam_intercept=np.round(fam.intercept.astype(np.float64), 9),
                # rounded: a retrain's last-bit differences (threaded BLAS) do not reach the file
                blend=np.round(self.blend.astype(np.float64), 10),
                targets=np.round(self.targets.astype(np.float64), 6),
                thresholds=np.round(self.thresholds.astype(np.float64), 12),
            )

    @classmethod
    def load(cls, path: Path | str = DEFAULT_MODEL) -> RouteModel:
        """Read a weights file written by :meth:`save`. Raises ``OSError`` when it cannot be
        read and ``ValueError`` when it is not a route model of this version."""
        try:
            with np.load(Path(path), allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (ValueError, EOFError) as err:  # zipfile/npz format errors
            raise ValueError(f"{path}: not a route model weights file ({err})") from err
        if str(data.get("kind", "")) != KIND:
            raise ValueError(f"{path}: not a {KIND} file")
        if int(data["version"]) != VERSION:
            raise ValueError(f"{path}: version {int(data['version'])}, expected {VERSION} (retrain)")
        coef = data["lex_coef"].astype(np.float64)
        fam_keys = [str(k) for k in data["fam_keys"]]
        families = FamilyTable(
            names=[str(n) for n in data["fam_names"]],
            index={k: i for i, k in enumerate(fam_keys)},
            coef=data["fam_coef"].astype(np.float32),
            intercept=data["fam_intercept"].astype(np.float64),
        )
        return cls(
            lex_weights={str(k): float(c) for k, c in zip(data["lex_keys"], coef, strict=True)},
            lex_intercept=float(data["lex_intercept"]),
            mean=data["mean"].astype(np.float32),
            scale=data["scale"].astype(np.float32),
            w1=data["w1"].astype(np.float32),
            b1=data["b1"].astype(np.float32),
            w2=data["w2"].astype(np.float32),
            b2=float(data["b2"]),
            blend=data["blend"].astype(np.float64),
            families=families,
            targets=data["targets"].astype(np.float64),
            thresholds=data["thresholds"].astype(np.float64),
            meta=json.loads(str(data["meta"])),
        )


@lru_cache(maxsize=8)
def load_model(path: str | None = None) -> RouteModel:
    """The route model at ``path`` (default: the shipped one), loaded once per process."""
    return RouteModel.load(path or DEFAULT_MODEL)
