"""``turnstile route-train``: fit the learned router offline, calibrate its quality targets and
write its weights file.

Data: every routing JSONL under DATA (default ``$TURNSTILE_CORPUS/routing``). Only training
rows are used — held-out rows (:func:`routers.routing_data.held_out`) and contaminated rows
never are, for fitting, choosing or calibrating. Steps:

1. features of every training row: lexical (:mod:`routers.lexical`) and the WordLlama prompt
   embedding (:mod:`routers.embed`);
2. out-of-fold logits (``folds``-fold, stratified by benchmark group, ``seed``) of the model's
   three parts — lexical, embedding network, gated family experts
   (:func:`routers.fitting.fit_model`); the blend is fitted on them;
3. the calibration table (:func:`routers.calibration.calibrate`) from those out-of-fold
   scores: the threshold per quality target;
4. the model refitted on every training row, written with its table to OUT.

``--compare`` first prints the out-of-fold figures of the three designs (similarity-weighted
ranking, matrix factorisation, the shipped classifier) on the same folds. The shipped
``routers/data/router.npz`` is exactly ``turnstile route-train`` with the defaults (seed 0).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from routers.calibration import TARGETS, calibrate
from routers.dataset import Dataset, load
from routers.embed import Embedder
from routers.fitting import Features, Hyper, features, fit_model, folds_of
from routers.lexical import DENSE_FEATURES
from routers.metrics import curve_figures
from routers.scorer import DEFAULT_MODEL, RouteModel


def default_data() -> Path:
    """``$TURNSTILE_CORPUS/routing`` or ``../shared/corpus/routing`` next to the repository."""
    root = os.environ.get("TURNSTILE_CORPUS")
    base = Path(root) if root else Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
    return base / "routing"


def training_rows(data: Dataset) -> np.ndarray:
    """Indices of the rows a model may be fitted and calibrated on (not held out)."""
    return np.nonzero(~data.held)[0]


def train_model(
    data: Dataset, rows: np.ndarray, feats: Features, hyper: Hyper
) -> tuple[RouteModel, np.ndarray]:
    """The model fitted on ``rows`` of ``data`` (``feats`` are those rows' features, in the same
    order) with its calibration table, and the rows' out-of-fold probabilities."""
    part = data.take(rows)
    model, oof = fit_model(feats, part.label, part.group_weights(), part.group, hyper)
    model.targets = TARGETS.copy()
    model.thresholds = calibrate(oof, part.qs, part.qc, part.group)
    return model, oof


def compare(
    data: Dataset, rows: np.ndarray, feats: Features, oof_clf: np.ndarray, hyper: Hyper
) -> list[dict]:
    """Out-of-fold curve figures per group of the three designs on the same folds."""
    from routers.candidates import mf_scores, sw_scores

    emb = feats.net[:, : feats.net.shape[1] - len(DENSE_FEATURES)]
    part = data.take(rows)
    sw = np.zeros(len(rows))
    mf = np.zeros(len(rows))
    for test in folds_of(part.group, hyper.folds, hyper.seed):
        train = np.setdiff1d(np.arange(len(rows)), test)
        sw[test] = sw_scores(emb, part, train, test)
        mf[test] = mf_scores(emb, part, train, test, seed=hyper.seed)
    out = []
    for name, scores in (
        ("similarity-weighted", sw),
        ("matrix factorisation", mf),
        ("classifier (shipped)", oof_clf),
    ):
        for g in dict.fromkeys(part.group.tolist()):
            m = part.group == g
            fig = curve_figures(scores[m], part.qs[m], part.qc[m], part.cs[m], part.cc[m])
            out.append({"design": name, "group": g, "rows": int(m.sum()), **fig})
    return out


def train(
    data_dir: Path, out: Path = DEFAULT_MODEL, hyper: Hyper | None = None, *, with_compare: bool = False
) -> dict[str, Any]:
    """Train on the non-held-out rows under ``data_dir`` and write the weights file ``out``.
    Returns the model's ``meta`` (plus ``compare`` rows when asked). Raises ``ValueError``
    when there is no training row."""
    hyper = hyper or Hyper()
    started = time.monotonic()
    data = load(data_dir)
    rows = training_rows(data)
    if not len(rows):
        raise ValueError(f"no training rows under {data_dir}")
    feats = features([data.texts[i] for i in rows], Embedder())
    model, oof = train_model(data, rows, feats, hyper)
    groups, counts = np.unique(data.group[rows], return_counts=True)
    model.meta = {
        "rows": {str(g): int(n) for g, n in zip(groups, counts, strict=True)},
        "label": "strong quality > cheap quality",
        "split": "routers.routing_data.held_out (held-out rows never used)",
        "hyper": vars(hyper),
        "embedding": "wordllama 0.4.0.post1 l2_supercat 256-d, mean-pooled (routers.embed)",
        "calibration": "out-of-fold scores; every group with >= 200 rows reaches the target",
        "trainer": "sklearn LogisticRegression (lexical, family experts, gate) + MLPClassifier"
        " (embedding), blended",
    }
    model.save(out)
    meta: dict[str, Any] = dict(model.meta)
    if with_compare:
        meta["compare"] = compare(data, rows, feats, oof, hyper)
    meta["seconds"] = round(time.monotonic() - started, 1)
    return meta


def route_train(
    data: Annotated[
        Path | None,
        typer.Argument(help="Routing JSONL file or directory. Default: $TURNSTILE_CORPUS/routing."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Where to write the weights file (.npz).")] = DEFAULT_MODEL,
    c: Annotated[float, typer.Option("--c", help="Inverse L2 strength of the lexical model.")] = 1.0,
    keep: Annotated[int, typer.Option(help="Largest lexical coefficients kept (0: all).")] = 6000,
    hidden: Annotated[int, typer.Option(min=1, help="Hidden units of the embedding network.")] = 128,
    alpha: Annotated[float, typer.Option(help="L2 penalty of the embedding network.")] = 10.0,
    c_family: Annotated[
        float, typer.Option("--c-family", help="Inverse L2 strength of each family expert.")
    ] = 3.0,
    c_gate: Annotated[float, typer.Option("--c-gate", help="Inverse L2 strength of the family gate.")] = 1.0,
    folds: Annotated[int, typer.Option(min=2, help="Folds for the out-of-fold scores.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    with_compare: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="Also print out-of-fold figures of similarity-weighted ranking and matrix factorisation.",
        ),
    ] = False,
) -> None:
    """Train the learned router on the non-held-out rows, calibrate its quality targets and
    write its weights file."""
    source = data or default_data()
    if not source.exists():
        typer.echo(f"{source}: no such file or directory", err=True)
        raise typer.Exit(2)
    hyper = Hyper(
        c=c, keep=keep, hidden=hidden, alpha=alpha, c_family=c_family, c_gate=c_gate, folds=folds, seed=seed
    )
    try:
        meta = train(source, out, hyper, with_compare=with_compare)
    except ValueError as err:
        typer.echo(str(err), err=True)
        raise typer.Exit(2) from err
    rows = meta.pop("compare", None)
    typer.echo(f"wrote {out} ({out.stat().st_size} bytes) in {meta['seconds']} s; rows {meta['rows']}")
    model = RouteModel.load(out)
    typer.echo(f"threshold for target 0.95: {model.threshold_for(0.95):.4f}")
    if rows:
        typer.echo("out-of-fold on training rows (design, group, rows, APGR, cost saved @95%):")
        for r in rows:
            saved = f"{r['cost_saved_at_95']:.1%}"
            typer.echo(f"  {r['design']:22} {r['group']:20} {r['rows']:6} {r['apgr']:.3f} {saved}")
