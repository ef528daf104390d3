"""``turnstile route-eval DATA``: offline evaluation of the learned router.

For every benchmark group in DATA (MMLU, GSM8K, MT-Bench from RouteLLM's file; each other
file as one group) the router's score orders the prompts; sending the top ``k`` to the strong
model for every ``k`` gives a cost–quality curve. Reported per group, with 95% bootstrap
intervals (rows resampled):

* **APGR**: area under the performance-gap-recovered curve over the strong-call share
  (RouteLLM, arXiv 2406.18665; random routing has 0.5 by construction);
* **cost saved at 95%**: ``1 - cost / cost(always strong)`` at the cheapest point whose mean
  quality reaches 95% of the strong model's, and the **strong-call share** there;
* the same for always-strong, always-cheap, random mix (expected value) and the oracle.

Cost of a row on a model = (prompt characters / 4 + :data:`OUTPUT_TOKENS`) x the model's
blended USD per million tokens (:func:`routers.routing_data.prices_for`). By default only
held-out rows (:func:`routers.routing_data.held_out`) are scored; ``--all`` scores every row
(for files never seen in development). Rows marked ``contaminated`` are always excluded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import orjson
import typer

from routers.learned import DEFAULT_ARTIFACT, Scorer
from routers.routing_data import data_files, held_out, pick_pair, prices_for, read_rows, unseen_subject

OUTPUT_TOKENS = 256
TARGET = 0.95


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


def curve(order: np.ndarray, g: Group, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean quality and total cost when the first ``k`` rows of ``order`` go to the strong
    model, for k = 0..n (arrays of length n+1). ``idx`` selects rows (a bootstrap sample)."""
    qs, qc, cs, cc = (g.qs, g.qc, g.cs, g.cc) if idx is None else (g.qs[idx], g.qc[idx], g.cs[idx], g.cc[idx])
    qs, qc, cs, cc = qs[order], qc[order], cs[order], cc[order]
    n = len(qs)
    zero = np.zeros(1)
    quality = (
        np.concatenate([zero, np.cumsum(qs)]) + np.concatenate([[qc.sum()], qc.sum() - np.cumsum(qc)])
    ) / n
    cost = np.concatenate([zero, np.cumsum(cs)]) + np.concatenate([[cc.sum()], cc.sum() - np.cumsum(cc)])
    return quality, cost


def summarise(quality: np.ndarray, cost: np.ndarray) -> dict[str, float]:
    """APGR, cost saved at 95% of strong quality and the strong-call share there, from a curve
    whose last point is always-strong and first always-cheap."""
    n = len(quality) - 1
    q_strong, q_cheap, c_strong = quality[-1], quality[0], cost[-1]
    gap = q_strong - q_cheap
    share = np.arange(n + 1) / n
    pgr = (quality - q_cheap) / gap if gap > 0 else np.ones_like(quality)
    apgr = float(np.sum((pgr[1:] + pgr[:-1]) / 2 * np.diff(share)))
    ok = np.nonzero(quality >= TARGET * q_strong - 1e-12)[0]
    best = int(ok[np.argmin(cost[ok])])
    return {
        "apgr": apgr,
        "cost_saved_at_95": float(1 - cost[best] / c_strong),
        "strong_share_at_95": best / n,
        "quality_at_95": float(quality[best]),
    }


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


def evaluate_group(g: Group, *, boots: int = 200, seed: int = 0) -> dict[str, Any]:
    """Router, baselines and bootstrap intervals for one group (see module docstring)."""
    n = len(g.p)
    router = summarise(*curve(np.argsort(-g.p, kind="stable"), g))
    oracle = summarise(*curve(np.lexsort((g.cs, -(g.qs - g.qc))), g))
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {"apgr": [], "cost_saved_at_95": []}
    for _ in range(boots):
        idx = rng.integers(0, n, n)
        if g.qs[idx].mean() <= g.qc[idx].mean():
            continue
        s = summarise(*curve(np.argsort(-g.p[idx], kind="stable"), g, idx))
        for k in samples:
            samples[k].append(s[k])
    ci = {
        k: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] if v else None
        for k, v in samples.items()
    }
    q_strong, q_cheap = float(g.qs.mean()), float(g.qc.mean())
    return {
        "group": g.name,
        "rows": n,
        "strong": g.strong,
        "cheap": g.cheap,
        "quality_strong": q_strong,
        "quality_cheap": q_cheap,
        "router": {**router, "ci95": ci},
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


def load_groups(data: Path, scorer: Scorer, *, all_rows: bool = False) -> list[Group]:
    """Score every eligible row under ``data`` and split into groups (an extra
    ``mmlu-unseen-subjects`` group holds MMLU rows whose whole subject was held out)."""
    buckets: dict[str, list[tuple[float, float, float, float, float]]] = {}
    pairs: dict[str, tuple[str, str]] = {}
    for path in data_files(data):
        rows = list(read_rows(path))
        prices = prices_for(path)
        strong, cheap = pick_pair(rows, prices)
        ps, pc = prices.get(strong, 1.0), prices.get(cheap, 1.0)
        for r in rows:
            if r.contaminated or strong not in r.scores or cheap not in r.scores:
                continue
            if not all_rows and not held_out(r):
                continue
            tokens = len(r.text()) / 4 + OUTPUT_TOKENS
            item = (
                scorer.score(r.text()),
                r.scores[strong],
                r.scores[cheap],
                tokens * ps / 1e6,
                tokens * pc / 1e6,
            )
            names = [r.group if r.group != "all" else (path.parent.name or path.stem)]
            if unseen_subject(r):
                names.append("mmlu-unseen-subjects")
            for name in names:
                buckets.setdefault(name, []).append(item)
                pairs[name] = (strong, cheap)
    out = []
    for name, items in buckets.items():
        a = np.array(items, dtype=float)
        out.append(Group(name, *pairs[name], a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4]))
    return out


def plot(groups: list[Group], results: list[dict[str, Any]], path: Path) -> None:
    """Cost (share of always-strong) against quality per group: router, random, oracle,
    always-strong/cheap points, and the 95% line. Writes a PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.8), squeeze=False)
    for ax, g, res in zip(axes[0], groups, results, strict=True):
        for label, order, style in (
            ("router", np.argsort(-g.p, kind="stable"), "-"),
            ("oracle", np.lexsort((g.cs, -(g.qs - g.qc))), ":"),
        ):
            q, c = curve(order, g)
            ax.plot(c / c[-1], q, style, label=label)
        ax.plot([g.cc.sum() / g.cs.sum(), 1], [g.qc.mean(), g.qs.mean()], "--", label="random")
        ax.axhline(TARGET * g.qs.mean(), color="grey", lw=0.6)
        ax.scatter([1, g.cc.sum() / g.cs.sum()], [g.qs.mean(), g.qc.mean()], c="k", s=12)
        ax.set_title(f"{g.name} (n={len(g.p)}), APGR {res['router']['apgr']:.2f}")
        ax.set_xlabel("cost / always-strong")
        ax.set_ylabel("mean quality")
    axes[0][0].legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: Published reference points (RouteLLM paper): cost saved at 95% of GPT-4 quality.
ROUTELLM = {"mmlu": 0.45, "gsm8k": 0.35, "mt_bench": 0.85}


def route_eval(
    data: Annotated[Path, typer.Argument(help="Routing JSONL file or a directory of them.")],
    json: Annotated[
        bool, typer.Option("--json", help="Print machine-readable JSON instead of a table.")
    ] = False,
    plot_path: Annotated[
        Path | None, typer.Option("--plot", help="Write the cost–quality plot (PNG).")
    ] = None,
    scorer_path: Annotated[Path, typer.Option("--scorer", help="Scorer artifact.")] = DEFAULT_ARTIFACT,
    all_rows: Annotated[
        bool,
        typer.Option(
            "--all", help="Score every row, not only held-out ones (for data never used in development)."
        ),
    ] = False,
    boots: Annotated[int, typer.Option(min=0, help="Bootstrap resamples for the intervals.")] = 200,
) -> None:
    """Evaluate the learned router: cost–quality curve, APGR, cost saved at 95% of strong
    quality and strong-call share, against always-strong, always-cheap, random and oracle."""
    if not data.exists():
        typer.echo(f"{data}: no such file or directory", err=True)
        raise typer.Exit(2)
    if plot_path is not None and not plot_path.parent.is_dir():
        typer.echo(f"--plot {plot_path}: folder {plot_path.parent} does not exist", err=True)
        raise typer.Exit(2)
    try:
        scorer = Scorer.load(scorer_path)
    except (OSError, ValueError, KeyError, TypeError) as err:
        typer.echo(f"--scorer {scorer_path}: not a readable scorer artifact ({err})", err=True)
        raise typer.Exit(2) from err
    try:
        groups = load_groups(data, scorer, all_rows=all_rows)
    except ValueError as err:  # names the data file and line
        typer.echo(str(err), err=True)
        raise typer.Exit(2) from err
    if not groups:
        typer.echo(f"{data}: no evaluable rows", err=True)
        raise typer.Exit(2)
    results = [evaluate_group(g, boots=boots) for g in groups]
    if plot_path is not None:
        plot(groups, results, plot_path)
    if json:
        typer.echo(orjson.dumps({"results": results, "routellm_published": ROUTELLM}).decode())
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"route-eval {data} ({'all rows' if all_rows else 'held-out rows'}; 95% bootstrap CI)"
    )
    for col in (
        "group",
        "rows",
        "strong / cheap quality",
        "policy",
        "APGR",
        "cost saved @95%",
        "strong share",
        "RouteLLM",
    ):
        table.add_column(col)
    for r in results:
        ci = r["router"]["ci95"]
        for name in ("router", "random", "oracle", "always_cheap", "always_strong"):
            m = r[name]
            apgr = f"{m['apgr']:.3f}"
            saved = f"{m['cost_saved_at_95']:.1%}"
            if name == "router" and ci["apgr"]:
                apgr += f" [{ci['apgr'][0]:.3f}, {ci['apgr'][1]:.3f}]"
                saved += f" [{ci['cost_saved_at_95'][0]:.1%}, {ci['cost_saved_at_95'][1]:.1%}]"
            if name == "always_cheap" and not m["reaches_95"]:
                saved = "below 95%"
            ref = ROUTELLM.get(r["group"])
            table.add_row(
                r["group"] if name == "router" else "",
                str(r["rows"]) if name == "router" else "",
                f"{r['quality_strong']:.3f} / {r['quality_cheap']:.3f}" if name == "router" else "",
                name,
                apgr,
                saved,
                f"{m['strong_share_at_95']:.1%}",
                f"{ref:.0%}" if name == "router" and ref is not None else "",
            )
    Console(width=160).print(table)
    if plot_path is not None:
        typer.echo(f"plot written to {plot_path}")
