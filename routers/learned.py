"""The ``learned`` policy: a model trained offline predicts whether a turn needs the strong tier,
and the alias's quality target decides how sure it must be.

Rules configured on the alias are tried first (e.g. tool-result digestion -> cheap, a retry
after a tool error -> strong); the model (:class:`routers.scorer.RouteModel`: lexical
features and a WordLlama prompt embedding, numpy only at serving) scores the remaining turns
on the last user message's text. Probability >= threshold -> the strongest tier, else the
cheapest. The threshold is the model's calibrated threshold for the alias's
``target_quality`` (share of the strong tier's quality), or a configured ``threshold``.
Session stickiness is applied afterwards by the engine (:mod:`routers.sticky`).
"""

from __future__ import annotations

from gateway.config import RoutingConfig
from routers.base import Candidate, Decision
from routers.features import TurnFeatures
from routers.rules import compile_rules, decide_tier, decision_for_tier
from routers.scorer import RouteModel, load_model


def threshold_of(cfg: RoutingConfig, model: RouteModel) -> tuple[float, str]:
    """The threshold an alias routes with and how it was set (for the decision's reason):
    ``cfg.threshold`` when configured, else the model's calibrated threshold for
    ``cfg.target_quality``. Raises ``ValueError`` when the model has no calibration table."""
    if cfg.threshold is not None:
        return cfg.threshold, "configured"
    return model.threshold_for(cfg.target_quality), f"target {cfg.target_quality:g}"


class LearnedRouter:
    """The ``learned`` policy for one alias."""

    name = "learned"

    def __init__(self, cfg: RoutingConfig, model: RouteModel | None = None) -> None:
        self.cfg = cfg
        self.rules = compile_rules(cfg.rules)
        self.model = model or load_model(cfg.model_path)
        self.threshold, how = threshold_of(cfg, self.model)
        self._how = f"{self.threshold:.4f} ({how})"
        tiers = list(cfg.tiers)
        self.cheap, self.strong = tiers[0], tiers[-1]

    def decide(self, features: TurnFeatures, candidates: list[Candidate]) -> Decision:
        """Rules first; otherwise the model on the last user message's text."""
        hit = decide_tier(self.cfg, self.rules, features)
        if hit is not None:
            return decision_for_tier(self.name, hit[0], f"learned: {hit[1]}", self.cfg, candidates, features)
        p = self.model.score(features.text)
        strong = p >= self.threshold
        tier = self.strong if strong else self.cheap
        reason = f"learned: p(strong)={p:.3f} {'>=' if strong else '<'} {self._how} -> {tier}"
        return decision_for_tier(self.name, tier, reason, self.cfg, candidates, features, score=round(p, 4))
