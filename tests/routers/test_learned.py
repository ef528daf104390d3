"""The learned policy and its shipped scorer artifact."""

from __future__ import annotations

from helpers_routing import two_tiers
from route_turns import turn

from gateway.config import RoutingConfig
from gateway.schema import Request, TextPart, UserMessage
from routers.features import extract
from routers.learned import DEFAULT_ARTIFACT, LearnedRouter, Scorer, featurize, math_word_problem


def _req(text: str) -> Request:
    return Request(model="auto", messages=[UserMessage(content=[TextPart(text=text)])])


def test_shipped_artifact_loads_is_small_and_scores_are_probabilities() -> None:
    assert DEFAULT_ARTIFACT.stat().st_size < 400_000
    s = Scorer.load()
    for text in ("hi", "Solve: 3x + 7 = 22. Show your steps.", "x" * 20_000):
        assert 0.0 <= s.score(text) <= 1.0


def test_featurize_is_deterministic_and_scaled() -> None:
    f = featurize("What is 2 + 2? What is 2 + 2?")
    assert f == featurize("What is 2 + 2? What is 2 + 2?")
    assert f["w:what"] == f["b:what is"] and 0 < f["w:what"] < 1 and f["d:questions"] == 0.2


def test_threshold_splits_turns_between_the_tiers_and_the_reason_gives_the_score() -> None:
    scorer = Scorer(weights={"w:prove": 5.0}, intercept=-2.0, meta={})
    cfg = RoutingConfig(policy="learned", tiers={"cheap": ["mini"], "strong": ["big"]}, threshold=0.5)
    _, cands = two_tiers()
    router = LearnedRouter(cfg, scorer=scorer)
    hard = router.decide(extract(_req("prove it")), cands)
    easy = router.decide(extract(_req("hello there")), cands)
    assert (
        hard.deployment == "big"
        and hard.score is not None
        and hard.score > 0.5
        and "p(strong)=" in hard.reason
    )
    assert easy.deployment == "mini" and easy.score is not None and easy.score < 0.5


def test_configured_rules_are_tried_before_the_scorer() -> None:
    scorer = Scorer(weights={}, intercept=5.0, meta={})  # always "strong"
    cfg = RoutingConfig(
        policy="learned",
        tiers={"cheap": ["mini"], "strong": ["big"]},
        rules=[{"kind": ["tool_digest"], "tier": "cheap"}],
    )  # type: ignore[list-item]
    _, cands = two_tiers()
    d = LearnedRouter(cfg, scorer=scorer).decide(extract(turn(8)), cands)
    assert d.deployment == "mini" and "rule[0]" in d.reason and d.score is None


def test_math_word_problems_are_recognised_and_exams_and_code_are_not() -> None:
    assert math_word_problem("Tom has 3 apples and buys 5 more. How many apples does he have?")
    assert not math_word_problem("Which is larger?\nA. 3\nB. 5\nC. 7\nD. 9")  # lettered options
    assert not math_word_problem("```py\nx = 3 + 5\n```\nWhat does this print?")
    assert not math_word_problem("How many apples are there?")  # fewer than two numbers
    assert not math_word_problem("Tom has 3 apples and 5 pears.")  # no question


def test_math_sub_scorer_decides_math_word_problems_in_its_blend_share() -> None:
    base = {"weights": {"w:apples": -1.0}, "intercept": 0.0, "meta": {}}
    problem = "Tom has 3 apples and buys 5 more. How many apples does he have?"
    full = Scorer(**base, math_weights={"w:apples": 4.0}, math_intercept=0.0, math_blend=1.0)  # type: ignore[arg-type]
    half = Scorer(**base, math_weights={"w:apples": 4.0}, math_intercept=0.0, math_blend=0.5)  # type: ignore[arg-type]
    plain = Scorer(**base)  # type: ignore[arg-type]
    assert plain.score(problem) < 0.5 < half.score(problem) < full.score(problem)
    assert full.score("I like apples.") == plain.score("I like apples.")  # not a math problem
