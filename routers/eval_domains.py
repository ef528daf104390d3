"""``route-eval --by-domain``: leave-one-domain-out generalisation (offline; fits models).

Domains: each benchmark family of the training rows (``mmlu``, ``gsm8k``, the LLMRouter file)
and each group of MMLU subjects by the split's subject hash (buckets 1–4; bucket 0's subjects
are held out of all training already). For each domain a model is fitted on the training rows
outside it (:func:`routers.fitting.fit_base`: same features, settings and seed as the shipped
model; the blend weights are the shipped model's, to keep this to one fit per domain), and the
evaluated rows inside it are scored twice: by that model (**left out**) and by the shipped
model (**in domain**). Domains no model ever trains on (MT-Bench, the held-out MMLU subjects)
are listed with the shipped model's figures only. Training rows stay as they are: no held-out
row is fitted on, and the evaluated rows are the same for both columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from routers.dataset import Dataset, load
from routers.embed import Embedder
from routers.fitting import Hyper, features, fit_base, model_probabilities
from routers.metrics import bootstrap, curve_figures
from routers.routing_data import BUCKETS, subject_bucket_of
from routers.scorer import RouteModel


def subject_bucket(domain: str) -> int | None:
    """The split's hash bucket of an ``mmlu/<subject>`` domain, else None."""
    if not domain.startswith("mmlu/"):
        return None
    return subject_bucket_of(domain.split("/", 1)[1])


def domain_masks(data: Dataset) -> dict[str, np.ndarray]:
    """Domain name -> boolean mask over ``data``'s rows (see module docstring)."""
    out: dict[str, np.ndarray] = {}
    for g in dict.fromkeys(data.group.tolist()):
        out[f"family {g}"] = data.group == g
    buckets = np.array([subject_bucket(str(d)) for d in data.domain], dtype=object)
    for k in range(1, BUCKETS):
        m = buckets == k
        if m.any():
            out[f"mmlu subjects #{k}"] = m
    return out


def _figures(p: np.ndarray, rows: Dataset, boots: int) -> dict[str, Any]:
    fig: dict[str, Any] = curve_figures(p, rows.qs, rows.qc, rows.cs, rows.cc)

    def stat(idx: np.ndarray) -> dict[str, float]:
        if rows.qs[idx].mean() <= rows.qc[idx].mean():
            return {}
        f = curve_figures(p[idx], rows.qs[idx], rows.qc[idx], rows.cs[idx], rows.cc[idx])
        return {"apgr": f["apgr"], "cost_saved_at_95": f["cost_saved_at_95"]}

    fig["ci95"] = bootstrap(len(p), stat, boots=boots) if boots else {}
    return fig


def leave_one_domain_out(
    train_dir: Path, rows: Dataset, model: RouteModel, threshold: float | None, *, boots: int = 200
) -> list[dict[str, Any]]:
    """Left-out and in-domain figures per domain for the evaluated ``rows`` (see module
    docstring). ``threshold`` is unused by the left-out models (uncalibrated) and reported for
    the never-trained domains' fixed outcome. Raises ``ValueError`` for unreadable data."""
    train = load(train_dir)
    tr = np.nonzero(~train.held)[0]
    part = train.take(tr)
    embedder = Embedder()
    train_feats = features(part.texts, embedder)
    eval_feats = features(rows.texts, embedder)
    shipped = model_probabilities(model, eval_feats)
    hyper = Hyper(**{k: v for k, v in model.meta.get("hyper", {}).items() if k in Hyper.__dataclass_fields__})
    eval_masks = domain_masks(rows)
    out: list[dict[str, Any]] = []
    for name, train_mask in domain_masks(part).items():
        m = eval_masks.get(name)
        if m is None or m.sum() < 20:
            continue
        keep = np.nonzero(~train_mask)[0]
        sub = part.take(keep)
        base = fit_base(train_feats.take(keep), sub.label, sub.group_weights(), sub.group, hyper)
        left = base.model(model.blend)
        idx = np.nonzero(m)[0]
        target_rows = rows.take(idx)
        out.append(
            {
                "domain": name,
                "rows": len(idx),
                "trained_rows": len(keep),
                "left_out": _figures(model_probabilities(left, eval_feats.take(idx)), target_rows, boots),
                "in_domain": _figures(shipped[idx], target_rows, 0),
            }
        )
    for name, m in (
        ("mmlu held-out subjects (never trained)", rows.unseen),
        ("mt_bench (never trained)", rows.group == "mt_bench"),
    ):
        if m.sum() >= 20:
            idx = np.nonzero(m)[0]
            fig = _figures(shipped[idx], rows.take(idx), boots)
            out.append(
                {"domain": name, "rows": len(idx), "trained_rows": 0, "left_out": fig, "in_domain": None}
            )
    return out


def print_domains(domains: list[dict[str, Any]]) -> None:
    """The leave-one-domain-out figures as a rich table."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="leave one domain out (curve figures; 95% bootstrap CI for the left-out model)")
    for col in (
        "domain",
        "rows",
        "APGR left out",
        "cost saved @95% left out",
        "APGR in domain",
        "cost saved in domain",
    ):
        table.add_column(col)
    for d in domains:
        lo, ind = d["left_out"], d["in_domain"]
        ci = lo.get("ci95", {})
        a, c = ci.get("apgr"), ci.get("cost_saved_at_95")
        table.add_row(
            d["domain"],
            str(d["rows"]),
            f"{lo['apgr']:.3f}" + (f" [{a[0]:.3f}, {a[1]:.3f}]" if a else ""),
            f"{lo['cost_saved_at_95']:.1%}" + (f" [{c[0]:.1%}, {c[1]:.1%}]" if c else ""),
            f"{ind['apgr']:.3f}" if ind else "(same model)",
            f"{ind['cost_saved_at_95']:.1%}" if ind else "",
        )
    Console(width=200).print(table)
