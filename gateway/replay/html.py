"""``turnstile replay --html report.html``: the replay's report as one self-contained page.

One HTML file with its CSS inline and its charts as inline SVG (:mod:`gateway.charts`): no
script, no font, no image or style sheet to fetch, so it opens the same offline, attached to an
issue or from a CI artifact. Its Content-Security-Policy (a ``<meta>``) forbids every request
the page could make, so nothing in a recorded prompt can make it reach out either.

What it shows is what ``turnstile replay`` prints (:meth:`gateway.replay.report.Report.as_dict`):

* **what was caught**: guard outcomes of the turns run through the pipeline, findings in the
  input by kind and the first :data:`MAX_ROWS` of them;
* **what a conversion would lose**: the conversion limits of each target API (explained,
  with an example), and Turnstile's own losses and crashes (which fail the run);
* **cost as recorded vs routed**: recorded cost against Turnstile's estimate per model, and
  the routing estimate (as recorded, as routed, always the strong tier; turns per tier; each
  conversation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from gateway.charts import Series, bar_list, column_chart

MAX_ROWS = 500
"""Rows of any one table written at most (the rest are counted, not listed)."""

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'"
"""The page's own Content-Security-Policy: inline CSS only, nothing fetched."""


def usd(value: float | None) -> str:
    """USD with 4 decimals (6 below a cent); ``–`` for None."""
    if value is None:
        return "–"
    return f"${value:.6f}" if 0 < abs(value) < 0.01 else f"${value:.4f}"


def pct(value: float | None) -> str:
    """A fraction as a percentage with one decimal; ``–`` for None."""
    return "–" if value is None else f"{100 * value:.1f}%"


def charts(d: dict[str, Any]) -> dict[str, Any]:
    """The report's charts (inline SVG) for the report dict ``d``."""
    out: dict[str, Any] = {}
    if d["guard_outcomes"]:
        out["guards"] = bar_list(
            "guards",
            "Guard outcomes of the turns run through the pipeline",
            list(d["guard_outcomes"].items()),
        )
    if d["findings_by_kind"]:
        items = sorted(d["findings_by_kind"].items(), key=lambda kv: -kv[1])
        out["findings"] = bar_list("findings", "Findings in the input, by kind", items)
    if d["limits"]:
        items = sorted(((k, v["count"]) for k, v in d["limits"].items()), key=lambda kv: -kv[1])
        out["limits"] = bar_list(
            "limits", "Conversion limits by target API and facet", items, label_width=300
        )
    by_model = d["cost"]["by_model"]
    if by_model:
        models = list(by_model)
        out["cost"] = column_chart(
            "cost",
            "Cost per model: as recorded and as Turnstile estimates it (USD)",
            models,
            [
                Series("recorded", [by_model[m]["recorded_usd"] for m in models]),
                Series("estimated", [by_model[m]["estimated_usd"] for m in models]),
            ],
            unit="USD",
            fmt=usd,
        )
    totals = d["routing"]["totals"]
    if totals["conversations"]:
        out["routing"] = column_chart(
            "routing",
            "Routing estimate: cost as recorded, as routed, always the strong tier (USD)",
            ["as recorded", "as routed", "always strong"],
            [Series("cost", [totals["recorded_usd"], totals["routed_usd"], totals["strong_usd"]])],
            unit="USD",
            fmt=usd,
            description=f"as recorded {usd(totals['recorded_usd'])}, as routed {usd(totals['routed_usd'])}, "
            f"always strong {usd(totals['strong_usd'])}: routing saves {pct(totals['saving_vs_recorded'])} "
            "of the recorded cost",
        )
        if totals["by_tier"]:
            out["tiers"] = bar_list("tiers", "Routed turns per tier", sorted(totals["by_tier"].items()))
    return out


def render(d: dict[str, Any], *, seconds: float, inputs: list[str]) -> str:
    """The page for the report dict ``d`` (:meth:`Report.as_dict`, with ``routing.config``),
    made in ``seconds`` from the paths ``inputs``."""
    env = Environment(
        loader=PackageLoader("gateway.replay", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(usd=usd, pct=pct)
    unsupported: dict[str, int] = {}
    for u in d["unsupported"]:
        unsupported[u["reason"]] = unsupported.get(u["reason"], 0) + 1
    return env.get_template("report.html").render(
        d=d,
        csp=CSP,
        seconds=seconds,
        inputs=inputs,
        charts=charts(d),
        max_rows=MAX_ROWS,
        unsupported=sorted(unsupported.items(), key=lambda kv: -kv[1]),
        tiers=sorted(d["routing"]["totals"]["by_tier"]),
    )


def write(path: Path, d: dict[str, Any], *, seconds: float, inputs: list[str]) -> None:
    """Write the page (:func:`render`) to ``path`` (UTF-8). Raises ``OSError`` when it cannot."""
    path.write_text(render(d, seconds=seconds, inputs=inputs), encoding="utf-8")
