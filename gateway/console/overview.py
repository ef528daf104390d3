"""``GET /ui``: the overview: turns per second, error rate, spend and routing savings over the
last hour, day or week (``?window=1h|24h|7d``, default 24h), as charts and as tables, and the
busiest deployments of the window (:mod:`gateway.console.overview_query`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.charts import Series, column_chart, line_chart
from gateway.console.overview_query import WINDOWS, Overview, overview, strongest_prices
from gateway.console.render import pct, usd
from gateway.console.web import render, state
from gateway.errors import InvalidRequest

WIDTH, HEIGHT = 480, 220
"""The charts' natural size (CSS pixels): half a laptop screen; a phone shrinks them to fit."""


def charts(ov: Overview) -> dict[str, object]:
    """The overview's four charts (inline SVG) for ``ov``."""
    labels = ov.labels()
    span = ov.window.bucket_s
    per_s = [b.turns / span for b in ov.buckets]
    errors = [(b.errors / b.turns) if b.turns else None for b in ov.buckets]
    return {
        "rate": line_chart(
            "chart-rate",
            "Turns per second",
            labels,
            [Series("turns/s", per_s)],
            unit="turns/s",
            description=f"{ov.turns} turns in the window; busiest bucket {max(per_s, default=0):.3g} turns/s",
            width=WIDTH,
            height=HEIGHT,
        ),
        "errors": line_chart(
            "chart-errors",
            "Error rate",
            labels,
            [Series("error rate", errors)],
            unit="% of turns",
            top=1.0,
            fmt=lambda v: f"{100 * v:.0f}%",
            description=f"{ov.errors} of {ov.turns} turns answered with an error "
            f"({pct(ov.errors / ov.turns if ov.turns else None)})",
            width=WIDTH,
            height=HEIGHT,
        ),
        "spend": column_chart(
            "chart-spend",
            "Spend",
            labels,
            [Series("spend", [b.spend_usd for b in ov.buckets])],
            unit="USD",
            fmt=usd,
            description=f"{usd(ov.spend_usd)} spent in the window",
            width=WIDTH,
            height=HEIGHT,
        ),
        "savings": column_chart(
            "chart-savings",
            "Routing savings (estimated)",
            labels,
            [Series("saved", [b.saving_usd for b in ov.buckets])],
            unit="USD",
            fmt=usd,
            description=f"{usd(ov.saving_usd)} saved against the strongest tier over "
            f"{ov.routed_turns} routed turns",
            width=WIDTH,
            height=HEIGHT,
        ),
    }


async def overview_page(request: Request) -> Response:
    """``GET /ui``."""
    name = request.query_params.get("window", "24h")
    window = WINDOWS.get(name)
    if window is None:
        raise InvalidRequest(f"window: one of {', '.join(WINDOWS)}", param="window")
    gw = request.app.state.gateway
    st = state(request)
    ov = await overview(st.reader, window, strongest_prices(st.config, gw.table.prices))
    return render(
        request,
        "overview.html",
        title="Overview",
        section="overview",
        ov=ov,
        charts=charts(ov),
        windows=WINDOWS,
        labels=ov.labels(),
    )
