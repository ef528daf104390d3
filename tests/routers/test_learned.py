"""The learned policy: rules first, then the model at the threshold of the alias's quality target."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_routing import two_tiers
from route_turns import turn

from gateway.config import RoutingConfig
from gateway.schema import Request, TextPart, UserMessage
from routers.features import extract
from routers.learned import LearnedRouter, threshold_of
from routers.lexical import DENSE_FEATURES, featurize
from routers.scorer import RouteModel

TIERS = {"cheap": ["mini"], "strong": ["big"]}


def _req(text: str) -> Request:
    return Request(model="auto", messages=[UserMessage(content=[TextPart(text=text)])])


def _model(lex: dict[str, float], intercept: float) -> RouteModel:
    """A model whose network contributes nothing: the lexical logit decides."""
    d = 256 + len(DENSE_FEATURES)
    return RouteModel(
        lex_weights=lex,
        lex_intercept=intercept,
        mean=np.zeros(d, np.float32),
        scale=np.ones(d, np.float32),
        w1=np.zeros((d, 2), np.float32),
        b1=np.zeros(2, np.float32),
        w2=np.zeros(2, np.float32),
        b2=0.0,
        blend=np.array([1.0, 0.0, 0.0, 0.0]),
        targets=np.array([0.9, 0.95, 1.0]),
        thresholds=np.array([0.8, 0.5, 0.0]),
    )


def test_featurize_is_deterministic_and_scaled() -> None:
    f = featurize("What is 2 + 2? What is 2 + 2?")
    assert f == featurize("What is 2 + 2? What is 2 + 2?")
    assert f["w:what"] == f["b:what is"] and 0 < f["w:what"] < 1 and f["d:questions"] == 0.2
    assert all(k in f for k in DENSE_FEATURES)


def test_the_target_quality_sets_the_threshold_from_the_calibration_table() -> None:
    model = _model({"w:prove": 5.0}, -2.0)
    assert threshold_of(RoutingConfig(policy="learned", tiers=TIERS), model) == (0.5, "target 0.95")
    cfg = RoutingConfig(policy="learned", tiers=TIERS, target_quality=0.9)
    assert threshold_of(cfg, model) == (0.8, "target 0.9")
    fixed = RoutingConfig(policy="learned", tiers=TIERS, threshold=0.3)
    assert threshold_of(fixed, model) == (0.3, "configured")


def test_threshold_splits_turns_between_the_tiers_and_the_reason_gives_score_and_target() -> None:
    _, cands = two_tiers()
    router = LearnedRouter(RoutingConfig(policy="learned", tiers=TIERS), model=_model({"w:prove": 5.0}, -2.0))
    hard = router.decide(extract(_req("prove it")), cands)
    easy = router.decide(extract(_req("hello there")), cands)
    assert hard.deployment == "big" and hard.score is not None and hard.score > 0.5
    assert "p(strong)=" in hard.reason and "target 0.95" in hard.reason
    assert easy.deployment == "mini" and easy.score is not None and easy.score < 0.5


def test_configured_rules_are_tried_before_the_model() -> None:
    cfg = RoutingConfig(policy="learned", tiers=TIERS, rules=[{"kind": ["tool_digest"], "tier": "cheap"}])  # type: ignore[list-item]
    _, cands = two_tiers()
    d = LearnedRouter(cfg, model=_model({}, 5.0)).decide(extract(turn(8)), cands)  # model says "strong"
    assert d.deployment == "mini" and "rule[0]" in d.reason and d.score is None


def test_target_quality_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="target_quality"):
        RoutingConfig(policy="learned", tiers=TIERS, target_quality=1.2)


def test_the_shipped_model_routes_with_the_default_target() -> None:
    _, cands = two_tiers()
    router = LearnedRouter(RoutingConfig(policy="learned", tiers=TIERS))
    d = router.decide(extract(_req("What is the capital of France?")), cands)
    assert d.deployment in ("mini", "big") and "(target 0.95)" in d.reason
