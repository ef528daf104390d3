"""``turnstile route-eval DATA``: offline evaluation of the learned router.

For every benchmark group in DATA (MMLU, GSM8K, MT-Bench from RouteLLM's file; each other
file as one group; MMLU also split into ``mmlu-seen-subjects`` and ``mmlu-unseen-subjects``,
the rows of the subjects held out of training whole),
two kinds of figures (:mod:`routers.metrics`), each with a 95% bootstrap interval:

* **curve figures**, comparable with RouteLLM: APGR (computed as RouteLLM's evaluation does)
  and cost saved at 95% of the strong model's quality with the strong-call share there — the
  best point of the curve, chosen on the rows scored;
* the **fixed-threshold outcome**: the threshold stored with the model for ``--target``
  (calibrated on development rows, never on the rows scored), and what it reaches here: the
  quality as a share of always-strong's, the cost saved and the strong-call share.

Baselines: always-strong, always-cheap, random mix (expected value) and the oracle.
``--by-domain`` adds leave-one-domain-out figures (:mod:`routers.eval_domains`).

By default only held-out rows are scored; ``--all`` scores every row (for files never seen in
development). Contaminated rows are always excluded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import orjson
import typer

from routers.dataset import Dataset, load
from routers.metrics import TARGET, bootstrap, curve, curve_figures, fixed_outcome
from routers.scorer import DEFAULT_MODEL, RouteModel

#: Published reference points (RouteLLM paper): cost saved at 95% of GPT-4 quality.
ROUTELLM = {"mmlu": 0.45, "gsm8k": 0.35, "mt_bench": 0.85}


@dataclass
class Group:
    """Arrays of one benchmark group: router score, strong/cheap quality and cost per row."""

    name: str
    strong: str
    cheap: str
    p: np.ndarray
    qs: np.ndarray
    qc: np.ndarray
    cs: np.ndarray
    cc: np.ndarray


def _random(g: Group) -> dict[str, float]:
    q_strong, q_cheap = g.qs.mean(), g.qc.mean()
    need = (
        1.0
        if q_strong <= q_cheap
        else min(1.0, max(0.0, (TARGET * q_strong - q_cheap) / (q_strong - q_cheap)))
    )
    cost = need * g.cs.sum() + (1 - need) * g.cc.sum()
    return {
        "apgr": 0.5,
        "cost_saved_at_95": float(1 - cost / g.cs.sum()),
        "strong_share_at_95": float(need),
        "quality_at_95": float(need * q_strong + (1 - need) * q_cheap),
    }


def evaluate_group(
    g: Group, threshold: float | None = None, *, boots: int = 200, seed: int = 0
) -> dict[str, Any]:
    """Router figures, baselines and bootstrap intervals for one group; with ``threshold``
    also the fixed-threshold outcome (see module docstring)."""
    n = len(g.p)
    router: dict[str, Any] = curve_figures(g.p, g.qs, g.qc, g.cs, g.cc)
    oracle_p = (g.qs - g.qc) - 1e-9 * g.cs / max(float(g.cs.max()), 1e-12)
    oracle = curve_figures(oracle_p, g.qs, g.qc, g.cs, g.cc)

    def stat(idx: np.ndarray) -> dict[str, float]:
        qs, qc = g.qs[idx], g.qc[idx]
        if qs.mean() <= qc.mean():
            return {}
        fig = curve_figures(g.p[idx], qs, qc, g.cs[idx], g.cc[idx])
        out = {"apgr": fig["apgr"], "cost_saved_at_95": fig["cost_saved_at_95"]}
        if threshold is not None:
            fixed = fixed_outcome(g.p[idx], threshold, qs, qc, g.cs[idx], g.cc[idx])
            out.update(
                {"fixed_quality_share": fixed["quality_share"], "fixed_cost_saved": fixed["cost_saved"]}
            )
        return out

    router["ci95"] = bootstrap(n, stat, boots=boots, seed=seed) if boots else {}
    if threshold is not None:
        router["fixed"] = {"threshold": threshold, **fixed_outcome(g.p, threshold, g.qs, g.qc, g.cs, g.cc)}
    q_strong, q_cheap = float(g.qs.mean()), float(g.qc.mean())
    return {
        "group": g.name,
        "rows": n,
        "strong": g.strong,
        "cheap": g.cheap,
        "quality_strong": q_strong,
        "quality_cheap": q_cheap,
        "router": router,
        "always_strong": {
            "apgr": 1.0,
            "cost_saved_at_95": 0.0,
            "strong_share_at_95": 1.0,
            "quality_at_95": q_strong,
        },
        "always_cheap": {
            "apgr": 0.0,
            "cost_saved_at_95": float(1 - g.cc.sum() / g.cs.sum()),
            "strong_share_at_95": 0.0,
            "quality_at_95": q_cheap,
            "reaches_95": bool(q_cheap >= TARGET * q_strong),
        },
        "random": _random(g),
        "oracle": oracle,
    }


def groups_of(data: Dataset, p: np.ndarray) -> list[Group]:
    """Split scored rows into groups, in first-seen order, plus MMLU split by whether its
    subject was in training (``mmlu-seen-subjects``, ``mmlu-unseen-subjects``)."""
    out = []
    names = list(dict.fromkeys(data.group.tolist()))
    for name in names:
        m = data.group == name
        strong, cheap = data.pair[name]
        out.append(Group(name, strong, cheap, p[m], data.qs[m], data.qc[m], data.cs[m], data.cc[m]))
    if data.unseen.any():
        strong, cheap = data.pair["mmlu"]
        for name, m in (
            ("mmlu-seen-subjects", (data.group == "mmlu") & ~data.unseen),
            ("mmlu-unseen-subjects", data.unseen),
        ):
            if m.any():
                out.append(Group(name, strong, cheap, p[m], data.qs[m], data.qc[m], data.cs[m], data.cc[m]))
    return out


def scored(data: Dataset, model: RouteModel) -> np.ndarray:
    """The model's score of every row of ``data``."""
    return np.array([model.score(t) for t in data.texts])


def plot(groups: list[Group], results: list[dict[str, Any]], path: Path) -> None:
    """Cost (share of always-strong) against quality per group: router, random, oracle,
    always-strong/cheap points, the 95% line and the fixed-threshold point. Writes a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.8), squeeze=False)
    for ax, g, res in zip(axes[0], groups, results, strict=True):
        for label, p, style in (("router", g.p, "-"), ("oracle", g.qs - g.qc, ":")):
            q, c = curve(p, g.qs, g.qc, g.cs, g.cc)
            ax.plot(c / c[-1], q, style, label=label)
        ax.plot([g.cc.sum() / g.cs.sum(), 1], [g.qc.mean(), g.qs.mean()], "--", label="random")
        ax.axhline(TARGET * g.qs.mean(), color="grey", lw=0.6)
        ax.scatter([1, g.cc.sum() / g.cs.sum()], [g.qs.mean(), g.qc.mean()], c="k", s=12)
        fixed = res["router"].get("fixed")
        if fixed:
            ax.scatter(
                [1 - fixed["cost_saved"]],
                [fixed["quality"]],
                marker="x",
                c="r",
                s=30,
                label="fixed threshold",
            )
        ax.set_title(f"{g.name} (n={len(g.p)}), APGR {res['router']['apgr']:.2f}")
        ax.set_xlabel("cost / always-strong")
        ax.set_ylabel("mean quality")
    axes[0][0].legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ci(ci: dict[str, Any], key: str, pct: bool) -> str:
    v = ci.get(key)
    if not v:
        return ""
    return f" [{v[0]:.1%}, {v[1]:.1%}]" if pct else f" [{v[0]:.3f}, {v[1]:.3f}]"


def _fixed_cost(fixed: dict[str, Any], ci: dict[str, Any]) -> str:
    saved = f"{fixed['cost_saved']:.1%}{_ci(ci, 'fixed_cost_saved', True)}"
    return f"{saved} ({fixed['strong_share']:.0%} strong)"


def print_table(results: list[dict[str, Any]], title: str, target: float) -> None:
    """The results as a rich table on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    cols = ("group", "rows", "strong / cheap", "policy", "APGR", "cost saved @95%", "strong share")
    for col in (*cols, f"fixed threshold: quality / strong (target {target:g})", "cost saved", "RouteLLM"):
        table.add_column(col)
    for r in results:
        ci = r["router"].get("ci95", {})
        for name in ("router", "random", "oracle", "always_cheap", "always_strong"):
            m = r[name]
            first = name == "router"
            saved = f"{m['cost_saved_at_95']:.1%}" + (_ci(ci, "cost_saved_at_95", True) if first else "")
            if name == "always_cheap" and not m["reaches_95"]:
                saved = "below 95%"
            fixed = m.get("fixed") if first else None
            ref = ROUTELLM.get(r["group"])
            table.add_row(
                r["group"] if first else "",
                str(r["rows"]) if first else "",
                f"{r['quality_strong']:.3f} / {r['quality_cheap']:.3f}" if first else "",
                name,
                f"{m['apgr']:.3f}" + (_ci(ci, "apgr", False) if first else ""),
                saved,
                f"{m['strong_share_at_95']:.1%}",
                f"{fixed['quality_share']:.1%}{_ci(ci, 'fixed_quality_share', True)}" if fixed else "",
                _fixed_cost(fixed, ci) if fixed else "",
                f"{ref:.0%}" if first and ref is not None else "",
            )
    Console(width=200).print(table)


def route_eval(
    data: Annotated[Path, typer.Argument(help="Routing JSONL file or a directory of them.")],
    json: Annotated[
        bool, typer.Option("--json", help="Print machine-readable JSON instead of a table.")
    ] = False,
    plot_path: Annotated[
        Path | None, typer.Option("--plot", help="Write the cost–quality plot (PNG).")
    ] = None,
    model_path: Annotated[Path, typer.Option("--model", help="Router weights file (.npz).")] = DEFAULT_MODEL,
    all_rows: Annotated[
        bool,
        typer.Option(
            "--all", help="Score every row, not only held-out ones (for data never used in development)."
        ),
    ] = False,
    target: Annotated[
        float, typer.Option(min=0.5, max=1.0, help="Quality target whose calibrated threshold is applied.")
    ] = TARGET,
    by_domain: Annotated[
        bool,
        typer.Option(
            "--by-domain",
            help="Also train with each domain left out (benchmark families, MMLU subject groups) and "
            "score it: generalisation beside the in-domain figures (minutes).",
        ),
    ] = False,
    train_data: Annotated[
        Path | None,
        typer.Option(help="--by-domain: routing data to train on (default $TURNSTILE_CORPUS/routing)."),
    ] = None,
    boots: Annotated[int, typer.Option(min=0, help="Bootstrap resamples for the intervals.")] = 200,
) -> None:
    """Evaluate the learned router: curve figures (APGR, cost saved at 95% of strong quality)
    and the outcome at the threshold calibrated for --target, against always-strong,
    always-cheap, random and oracle."""
    if not data.exists():
        typer.echo(f"{data}: no such file or directory", err=True)
        raise typer.Exit(2)
    if plot_path is not None and not plot_path.parent.is_dir():
        typer.echo(f"--plot {plot_path}: folder {plot_path.parent} does not exist", err=True)
        raise typer.Exit(2)
    train_dir: Path | None = None
    if by_domain:
        from routers.train import default_data

        train_dir = train_data or default_data()
        if not train_dir.exists():
            typer.echo(
                f"--train-data {train_dir}: no such file or directory (pass --train-data or set "
                "TURNSTILE_CORPUS)",
                err=True,
            )
            raise typer.Exit(2)
    try:
        model = RouteModel.load(model_path)
        threshold = model.threshold_for(target)
    except (OSError, ValueError, KeyError) as err:
        typer.echo(f"--model {model_path}: not a readable router weights file ({err})", err=True)
        raise typer.Exit(2) from err
    try:
        rows = load(data)
    except ValueError as err:  # names the data file and line
        typer.echo(str(err), err=True)
        raise typer.Exit(2) from err
    if not all_rows:
        rows = rows.take(np.nonzero(rows.held)[0])
    if not len(rows):
        typer.echo(f"{data}: no evaluable rows", err=True)
        raise typer.Exit(2)
    groups = groups_of(rows, scored(rows, model))
    results = [evaluate_group(g, threshold, boots=boots) for g in groups]
    domains = None
    if train_dir is not None:
        from routers.eval_domains import leave_one_domain_out

        domains = leave_one_domain_out(train_dir, rows, model, threshold, boots=boots)
    if plot_path is not None:
        plot(groups, results, plot_path)
    if json:
        out: dict[str, Any] = {
            "results": results,
            "target": target,
            "threshold": threshold,
            "routellm_published": ROUTELLM,
        }
        if domains is not None:
            out["by_domain"] = domains
        typer.echo(orjson.dumps(out, option=orjson.OPT_SERIALIZE_NUMPY).decode())
        return
    which = "all rows" if all_rows else "held-out rows"
    print_table(
        results,
        f"route-eval {data} ({which}; threshold {threshold:.4f} for target {target:g}; 95% bootstrap CI)",
        target,
    )
    if domains is not None:
        from routers.eval_domains import print_domains

        print_domains(domains)
    if plot_path is not None:
        typer.echo(f"plot written to {plot_path}")
