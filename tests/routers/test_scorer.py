"""The serving scorer (numpy only) equals the training-time computation, and its weights file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from routers.dataset import load
from routers.embed import shared_embedder
from routers.fitting import Hyper, features, fit_model, model_probabilities
from routers.scorer import DEFAULT_MODEL, RouteModel

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "routing"


@pytest.fixture(scope="module")
def fitted() -> tuple[RouteModel, list[str]]:
    data = load(FIXTURES)
    feats = features(data.texts, shared_embedder())
    model, oof = fit_model(
        feats, data.label, data.group_weights(), data.group, Hyper(keep=0, hidden=8, folds=2)
    )
    assert oof.shape == (len(data),) and np.all((oof >= 0) & (oof <= 1))
    return model, data.texts


def test_numpy_scorer_equals_the_training_time_scorer_on_the_fixtures(
    fitted: tuple[RouteModel, list[str]],
) -> None:
    model, texts = fitted
    trained = model_probabilities(model, features(texts, shared_embedder()))
    served = np.array([model.score(t) for t in texts])
    assert np.allclose(served, trained, atol=1e-5)


def test_weights_file_round_trips_exactly(fitted: tuple[RouteModel, list[str]], tmp_path: Path) -> None:
    model, texts = fitted
    model.targets, model.thresholds = np.array([0.9, 0.95]), np.array([0.6, 0.4])
    model.meta = {"seed": 0}
    model.save(tmp_path / "m.npz")
    back = RouteModel.load(tmp_path / "m.npz")
    assert back.meta == {"seed": 0} and back.lex_weights == pytest.approx(model.lex_weights, abs=1e-6)
    assert [back.score(t) for t in texts[:10]] == pytest.approx(
        [model.score(t) for t in texts[:10]], abs=1e-6
    )
    assert (
        back.threshold_for(0.95) == 0.4 and back.threshold_for(0.93) == 0.4 and back.threshold_for(0.5) == 0.6
    )


def test_a_file_that_is_not_a_route_model_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a route model"):
        RouteModel.load(junk)
    other = tmp_path / "other.npz"
    np.savez(other, kind=np.array("something-else"))
    with pytest.raises(ValueError, match="not a turnstile-route-model"):
        RouteModel.load(other)


def test_shipped_weights_are_small_calibrated_and_score_probabilities() -> None:
    assert DEFAULT_MODEL.stat().st_size < 3_000_000
    model = RouteModel.load()
    th = model.threshold_for(0.95)
    assert 0.0 < th < 1.0 and model.threshold_for(0.99) <= th <= model.threshold_for(0.9)
    for text in ("hi", "Solve: 3x + 7 = 22. Show your steps.", "x" * 20_000):
        assert 0.0 <= model.score(text) <= 1.0


def test_a_model_without_calibration_refuses_a_target() -> None:
    model = RouteModel.load()
    model.targets = np.zeros(0)
    with pytest.raises(ValueError, match="no calibration table"):
        model.threshold_for(0.95)


def test_serving_imports_neither_scikit_learn_nor_wordllama() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from routers.engine import make_router; from routers.scorer import load_model; "
        "load_model().score('What is 2+2?'); "
        "print(sorted(m for m in ('sklearn', 'wordllama', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_one_pass_over_the_terms_gives_the_lexical_and_the_family_logit() -> None:
    from routers.lexical import featurize

    model = RouteModel.load()
    assert model.families.names == ["gsm8k", "llmrouter-dcrouter", "mmlu"]
    for text in (
        "hi",
        "Solve: 3x + 7 = 22. Show your steps.",
        "Which of these is a mammal?\nA. cat\nB. fish",
    ):
        feats = featurize(text)
        lex, family = model.term_logits(feats)
        assert lex == pytest.approx(model.lexical_logit(feats), abs=1e-9)
        assert family == pytest.approx(model.families.logit(feats), abs=1e-6)
