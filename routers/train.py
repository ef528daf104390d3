"""``turnstile route-train``: fit the learned routing scorer offline and write its artifact.

Data: every routing JSONL under DATA (default ``../shared/corpus/routing``). For each file
the strong/cheap pair is :func:`routers.routing_data.pick_pair`; the label of a row is
"the strong model scored higher than the cheap one". Held-out rows
(:func:`routers.routing_data.held_out`) and contaminated rows are never used. Each benchmark
group gets equal total weight (GSM8K would otherwise drown in MMLU). Model: scikit-learn
``LogisticRegression`` (L2, ``C``) over :func:`routers.learned.featurize`; the ``keep``
largest coefficients are written as plain JSON, so serving needs no scikit-learn.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from routers.learned import DEFAULT_ARTIFACT, featurize, math_word_problem
from routers.routing_data import data_files, held_out, pick_pair, prices_for, read_rows


def _group(row_group: str, path: Path) -> str:
    return row_group if row_group != "all" else path.parent.name or path.stem


def _fit(
    feats: list[dict[str, float]], labels: list[int], weights: list[float] | None, c: float, keep: int
) -> tuple[float, dict[str, float]]:
    """Logistic regression over ``feats``; ``(intercept, the keep largest coefficients)``."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = DictVectorizer()
    x = vec.fit_transform(feats)
    model = LogisticRegression(C=c, max_iter=3000).fit(x, labels, sample_weight=weights)
    coef = model.coef_[0]
    names = vec.get_feature_names_out()
    top = sorted(range(len(coef)), key=lambda i: -abs(coef[i]))[:keep]
    return round(float(model.intercept_[0]), 6), {
        str(names[i]): round(float(coef[i]), 5) for i in sorted(top, key=lambda i: str(names[i]))
    }


def train(
    data: Path,
    out: Path = DEFAULT_ARTIFACT,
    *,
    c: float = 1.0,
    keep: int = 6000,
    math_groups: tuple[str, ...] = ("gsm8k",),
    math_blend: float = 1.0,
) -> dict[str, Any]:
    """Train on the non-held-out rows under ``data`` and write the artifact to ``out``.

    The main model sees every training row (groups weighted equally). A math sub-model is
    trained on the training rows of ``math_groups`` whose text passes
    :func:`routers.learned.math_word_problem`, and serves (``math_blend`` share of the logit)
    on texts that pass it; empty ``math_groups`` or no such row: no sub-model. The choice
    (GSM8K rows, blend 1.0) was made by 5-fold cross-validation on the training rows only.
    Returns the artifact's ``meta``. Raises ``ValueError`` when no training row is found."""
    feats: list[dict[str, float]] = []
    math: list[bool] = []
    labels: list[int] = []
    groups: list[str] = []
    for path in data_files(data):
        rows = list(read_rows(path))
        strong, cheap = pick_pair(rows, prices_for(path))
        for r in rows:
            if r.contaminated or held_out(r) or strong not in r.scores or cheap not in r.scores:
                continue
            feats.append(featurize(r.text()))
            math.append(math_word_problem(r.text()))
            labels.append(int(r.scores[strong] > r.scores[cheap]))
            groups.append(_group(r.group, path))
    if not feats:
        raise ValueError(f"no training rows under {data}")
    count = collections.Counter(groups)
    weights = [len(groups) / (len(count) * count[g]) for g in groups]
    intercept, coefs = _fit(feats, labels, weights, c, keep)
    meta: dict[str, Any] = {
        "rows": dict(count),
        "C": c,
        "features": len(coefs),
        "label": "strong score > cheap score",
        "split": "routers.routing_data.held_out",
        "trainer": "sklearn LogisticRegression",
    }
    artifact: dict[str, Any] = {
        "kind": "turnstile-route-scorer",
        "version": 2,
        "meta": meta,
        "intercept": intercept,
        "weights": coefs,
    }
    sub = [i for i, g in enumerate(groups) if g in math_groups and math[i]]
    if sub and len({labels[i] for i in sub}) == 2:
        m_int, m_coefs = _fit([feats[i] for i in sub], [labels[i] for i in sub], None, c, keep)
        artifact["math"] = {"intercept": m_int, "weights": m_coefs, "blend": math_blend}
        meta["math"] = {"groups": list(math_groups), "rows": len(sub), "blend": math_blend}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(artifact, option=orjson.OPT_INDENT_2 if keep <= 50 else 0))
    return meta


def default_data() -> Path:
    """``$TURNSTILE_CORPUS/routing`` or ``../shared/corpus/routing`` next to the repo."""
    import os

    root = os.environ.get("TURNSTILE_CORPUS")
    base = Path(root) if root else Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
    return base / "routing"


def route_train(
    data: Annotated[
        Path | None,
        typer.Argument(
            help="Routing JSONL file or directory. Default: "
            "$TURNSTILE_CORPUS/routing or ../shared/corpus/routing."
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="Where to write the scorer (JSON weights).")] = DEFAULT_ARTIFACT,
    c: Annotated[float, typer.Option("--c", help="Inverse L2 regularisation strength.")] = 1.0,
    keep: Annotated[int, typer.Option(help="Largest coefficients kept in the artifact.")] = 6000,
    math_group: Annotated[
        list[str] | None,
        typer.Option(
            help="Benchmark groups the math sub-scorer trains on (default: gsm8k; 'none': no sub-scorer)."
        ),
    ] = None,
    math_blend: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of the sub-scorer's logit on math word problems.")
    ] = 1.0,
) -> None:
    """Train the learned routing scorer on the non-held-out rows and write its artifact."""
    groups = tuple(g for g in (math_group or ["gsm8k"]) if g != "none")
    meta = train(data or default_data(), out, c=c, keep=keep, math_groups=groups, math_blend=math_blend)
    typer.echo(f"wrote {out} ({out.stat().st_size} bytes): {orjson.dumps(meta).decode()}")
