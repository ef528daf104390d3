"""The ``learned`` policy: a text scorer trained offline predicts whether a turn needs the
strong tier.

The scorer is a logistic regression over hashed-free, explicit text features (lower-cased
word unigrams and bigrams, present/absent, scaled by 1/sqrt(#terms)) plus a few dense shape
features (length, digits, numbers, code, question marks). Training (``turnstile route-train``,
:mod:`routers.train`) uses scikit-learn; **serving does not**: the artifact is plain JSON of
weights (``routers/data/scorer.json``) and :func:`featurize` is the same Python function at
training and serving time, so scores agree exactly and a decision costs well under a
millisecond for typical prompts (text is clipped to 4000 characters by the feature extractor).

Rules configured on the alias are tried first (e.g. tool-result digestion -> cheap); the
scorer decides the remaining turns: probability >= ``threshold`` -> strongest tier, else the
cheapest.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import orjson

from gateway.config import RoutingConfig
from routers.base import Candidate, Decision
from routers.features import TurnFeatures
from routers.rules import compile_rules, decide_tier, decision_for_tier

DEFAULT_ARTIFACT = Path(__file__).resolve().parent / "data" / "scorer.json"

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUM = re.compile(r"\d+(?:\.\d+)?")
_CODEISH = re.compile(r"```|def |class |function|\{|\};|=>|#include")


def featurize(text: str) -> dict[str, float]:
    """Sparse features of ``text``: ``w:<word>``, ``b:<word> <word>`` (1/sqrt(n) each) and dense
    ``d:*`` shape features. Same function for training and serving."""
    low = text[:8000].lower()
    words = _WORD.findall(low)
    terms = {f"w:{w}" for w in words}
    terms.update(f"b:{a} {b}" for a, b in itertools.pairwise(words))
    scale = 1.0 / math.sqrt(len(terms)) if terms else 0.0
    feats = dict.fromkeys(terms, scale)
    n = len(text) or 1
    feats["d:log_chars"] = math.log1p(len(text)) / 10.0
    feats["d:log_words"] = math.log1p(len(words)) / 10.0
    feats["d:digit_frac"] = sum(ch.isdigit() for ch in text[:8000]) / min(n, 8000)
    feats["d:numbers"] = min(len(_NUM.findall(text[:8000])), 50) / 50.0
    feats["d:code"] = 1.0 if _CODEISH.search(text[:8000]) else 0.0
    feats["d:questions"] = min(text.count("?"), 10) / 10.0
    feats["d:lines"] = min(text.count("\n"), 100) / 100.0
    return feats


_OPTIONS = re.compile(r"(?m)^\s*\(?[A-D][.)]\s")


def math_word_problem(text: str) -> bool:
    """True when ``text`` reads like a math word problem: at least two numbers, a question in
    its last 200 characters, under 1500 characters, no code fence and no lettered answer
    options (multiple-choice exams have their own signal). Decides whether the math
    sub-scorer (trained on GSM8K's training rows) scores the text."""
    t = text[:8000]
    return (
        len(t) < 1500
        and "?" in t[-200:]
        and "```" not in t
        and len(_NUM.findall(t)) >= 2
        and not _OPTIONS.search(t)
    )


def _logit(weights: dict[str, float], intercept: float, feats: dict[str, float]) -> float:
    z = intercept
    for k, v in feats.items():
        c = weights.get(k)
        if c is not None:
            z += c * v
    return z


@dataclass(frozen=True)
class Scorer:
    """Weights of the trained scorer: ``weights`` (feature -> coefficient), ``intercept``;
    optionally a math sub-scorer (``math_weights``, ``math_intercept``) whose logit replaces
    a ``math_blend`` share of the main one on texts where :func:`math_word_problem` holds
    (RouteLLM's GSM8K pair differs from the general pattern; one linear model fits it
    poorly)."""

    weights: dict[str, float]
    intercept: float
    meta: dict[str, object]
    math_weights: dict[str, float] | None = None
    math_intercept: float = 0.0
    math_blend: float = 1.0

    @classmethod
    def load(cls, path: Path | str = DEFAULT_ARTIFACT) -> Scorer:
        """Read an artifact written by :func:`routers.train.train`. Raises ``OSError`` when it
        cannot be read and ``ValueError`` when it is not a scorer artifact."""
        data = orjson.loads(Path(path).read_bytes())
        if data.get("kind") != "turnstile-route-scorer":
            raise ValueError(f"{path}: not a turnstile route scorer artifact")
        sub = data.get("math") or {}
        return cls(
            weights=dict(data["weights"]),
            intercept=float(data["intercept"]),
            meta=dict(data.get("meta", {})),
            math_weights=dict(sub["weights"]) if sub else None,
            math_intercept=float(sub.get("intercept", 0.0)),
            math_blend=float(sub.get("blend", 1.0)),
        )

    def score(self, text: str) -> float:
        """Probability in [0, 1] that the strong model is needed for ``text``."""
        feats = featurize(text)
        z = _logit(self.weights, self.intercept, feats)
        if self.math_weights is not None and math_word_problem(text):
            b = self.math_blend
            z = (1 - b) * z + b * _logit(self.math_weights, self.math_intercept, feats)
        if z < -30:
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))


@lru_cache(maxsize=8)
def load_scorer(path: str | None = None) -> Scorer:
    """The scorer at ``path`` (default: the shipped artifact), loaded once per process."""
    return Scorer.load(path or DEFAULT_ARTIFACT)


class LearnedRouter:
    """The ``learned`` policy for one alias."""

    name = "learned"

    def __init__(self, cfg: RoutingConfig, scorer: Scorer | None = None) -> None:
        self.cfg = cfg
        self.rules = compile_rules(cfg.rules)
        self.scorer = scorer or load_scorer(cfg.model_path)
        tiers = list(cfg.tiers)
        self.cheap, self.strong = tiers[0], tiers[-1]

    def decide(self, features: TurnFeatures, candidates: list[Candidate]) -> Decision:
        """Rules first; otherwise the scorer on the last user message's text."""
        hit = decide_tier(self.cfg, self.rules, features)
        if hit is not None:
            return decision_for_tier(self.name, hit[0], f"learned: {hit[1]}", self.cfg, candidates, features)
        p = self.scorer.score(features.text)
        tier = self.strong if p >= self.cfg.threshold else self.cheap
        op = ">=" if p >= self.cfg.threshold else "<"
        reason = f"learned: p(strong)={p:.3f} {op} {self.cfg.threshold} -> {tier}"
        return decision_for_tier(self.name, tier, reason, self.cfg, candidates, features, score=round(p, 4))
