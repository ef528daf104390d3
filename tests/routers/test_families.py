"""Family experts: each family's own signal, mixed by a gate that recognises the family."""

from __future__ import annotations

import numpy as np

from routers.families import FamilyTable, fit_families
from routers.lexical import featurize


def _rows(n: int = 240) -> tuple[list[dict[str, float]], np.ndarray, np.ndarray]:
    """Two families marked by 'exam' / 'story'; 'hard' needs the strong model in the exam
    family only, 'long' in the story family only."""
    rng = np.random.default_rng(0)
    texts, labels, groups = [], [], []
    for i in range(n):
        fam = "exam" if i % 2 else "story"
        hard, long = bool(rng.integers(2)), bool(rng.integers(2))
        words = [fam, "hard" if hard else "easy", "long" if long else "short", f"filler{i % 7}"]
        texts.append(" ".join(words))
        labels.append(int(hard if fam == "exam" else long))
        groups.append(fam)
    return [featurize(t) for t in texts], np.array(labels), np.array(groups, dtype=object)


def test_each_family_expert_learns_its_own_signal_and_the_gate_picks_the_family() -> None:
    lex, y, groups = _rows()
    table = fit_families(lex, y, np.ones(len(y)), groups, c_family=10.0, c_gate=10.0, keep=0)
    assert table.names == ["exam", "story"] and table.coef.shape[1] == 4
    z = table.logits([featurize(t) for t in ("exam hard short", "exam easy long", "story easy long")])
    assert z[0] > 0 > z[1] and z[2] > 0
    gate = table.gate(featurize("exam easy short"))
    assert abs(sum(gate.values()) - 1) < 1e-9 and gate["exam"] > 0.9


def test_vectorised_logits_equal_one_text_at_a_time_and_unknown_words_score_the_intercepts() -> None:
    lex, y, groups = _rows()
    table = fit_families(lex, y, np.ones(len(y)), groups, c_family=1.0, c_gate=1.0, keep=3)
    assert len(table.index) <= 9  # three terms for each of the two experts and for the gate
    assert np.allclose(table.logits(lex[:20]), [table.logit(f) for f in lex[:20]])
    unknown = table.logit({"w:zzz": 1.0})
    f = len(table.names)
    g = np.exp(table.intercept[f:] - table.intercept[f:].max())
    assert unknown == float(g @ table.intercept[:f] / g.sum())


def test_no_family_scores_zero_and_one_family_is_its_expert_alone() -> None:
    assert FamilyTable.empty().logit(featurize("anything")) == 0.0
    lex, y, _ = _rows()
    one = np.array(["exam"] * len(y), dtype=object)
    table = fit_families(lex, y, np.ones(len(y)), one, c_family=1.0, c_gate=1.0, keep=0)
    assert table.names == ["exam"] and table.gate(lex[0]) == {"exam": 1.0}


def test_a_family_with_too_few_rows_or_one_label_gets_no_expert() -> None:
    lex, y, groups = _rows()
    groups = groups.copy()
    groups[:3] = "tiny"
    y = y.copy()
    y[groups == "story"] = 0
    table = fit_families(lex, y, np.ones(len(y)), groups, c_family=1.0, c_gate=1.0, keep=0)
    assert table.names == ["exam"]
