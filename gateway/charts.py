"""Charts as inline SVG, rendered on the server: no script, no chart library, no external request.

Used by the admin console's pages (:mod:`gateway.console`) and by the self-contained report of
``turnstile replay --html`` (:mod:`gateway.replay.html`). Every chart is one ``<svg>`` element
that shrinks with its container (``viewBox``), is announced to assistive
technology as an image with a title and a one-sentence description (``role="img"``,
``aria-labelledby``), and draws with presentation attributes only (``fill``, ``stroke``): no
``style`` attribute, so a strict Content-Security-Policy (``style-src 'self'``) holds. The
numbers themselves belong in a table next to the chart; a chart is only the picture. Its
``width`` and ``height`` are its natural size in CSS pixels (text 12 px); a page shrinks it to
a narrower container with ``max-width: 100%; height: auto`` (the ``viewBox`` keeps it whole).

Colours (:data:`PALETTE`) have a contrast of at least 3:1 against white, the WCAG 2.2 minimum
for graphical objects (SC 1.4.11); text is drawn in :data:`INK` (at least 4.5:1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

PALETTE = ("#1d4ed8", "#b45309", "#047857", "#7c3aed", "#be123c", "#0e7490")
"""Series colours, in order: blue, amber, green, violet, rose, cyan (each >= 4.5:1 on white)."""

INK = "#1f2937"
"""Axis and label text colour (gray-800: 14.7:1 on white)."""

GRID = "#9ca3af"
"""Grid line colour (gray-400)."""

Format = Callable[[float], str]


@dataclass(frozen=True)
class Series:
    """One named row of values (None: no value at that position, drawn as a gap)."""

    name: str
    values: Sequence[float | None]


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= ``value`` (1 for 0 or less):
    the top of a y axis."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * power * (1 + 1e-9):
            return step * power
    return 10.0 * power


def plain(value: float) -> str:
    """A number in at most 4 significant digits, without a trailing ``.0``."""
    if value == 0:
        return "0"
    text = f"{value:.4g}"
    return text[:-2] if text.endswith(".0") else text


def _label_indexes(n: int, wanted: int = 4) -> list[int]:
    """Up to ``wanted`` evenly spread positions of ``n`` that get an x-axis label (first and last
    always)."""
    if n <= wanted:
        return list(range(n))
    step = (n - 1) / (wanted - 1)
    return sorted({round(i * step) for i in range(wanted)})


def _x_label(x: float, y: float, text: str, i: int, n: int) -> str:
    """An x-axis label: the first one starts at its position, the last one ends there (neither
    runs off the chart), the others are centred."""
    anchor = "start" if i == 0 and n > 1 else "end" if i == n - 1 and n > 1 else "middle"
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="12" fill="{INK}">'
        f"{escape(text)}</text>"
    )


def _frame(chart_id: str, title: str, description: str, width: int, height: int, body: list[str]) -> Markup:
    return Markup(
        f'<svg class="chart" id="{escape(chart_id)}" role="img" '
        f'aria-labelledby="{escape(chart_id)}-t {escape(chart_id)}-d" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" preserveAspectRatio="xMidYMid meet" '
        f'xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{escape(chart_id)}-t">{escape(title)}</title>'
        f'<desc id="{escape(chart_id)}-d">{escape(description)}</desc>' + "".join(body) + "</svg>"
    )


def _axes(
    top: float, fmt: Format, left: int, right: int, plot_top: int, plot_bottom: int, unit: str
) -> list[str]:
    """The y axis: grid lines and labels at 0, half and ``top``; the unit above the axis."""
    out = []
    for frac in (0.0, 0.5, 1.0):
        y = plot_bottom - frac * (plot_bottom - plot_top)
        out.append(
            f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}" '
            f'stroke-width="{1 if frac == 0 else 0.5}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="12" fill="{INK}">'
            f"{escape(fmt(top * frac))}</text>"
        )
    if unit:
        out.append(
            f'<text x="{left}" y="{plot_top - 8}" text-anchor="start" font-size="12" fill="{INK}">'
            f"{escape(unit)}</text>"
        )
    return out


def _legend(series: Sequence[Series], x: int, y: int) -> list[str]:
    if len(series) < 2:
        return []
    out = []
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        cx = x + i * 150
        out.append(
            f'<rect x="{cx}" y="{y - 10}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{cx + 18}" y="{y}" font-size="12" fill="{INK}">{escape(s.name)}</text>'
        )
    return out


def column_chart(
    chart_id: str,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str = "",
    fmt: Format = plain,
    description: str | None = None,
    width: int = 640,
    height: int = 240,
) -> Markup:
    """Vertical bars: one group per label, one bar per series in each group (grouped, not
    stacked), on a y axis from 0 to :func:`nice_ceiling` of the largest value. ``labels``
    name the positions (x axis, a few of them written); ``fmt`` writes a value (axis labels
    and the description); ``description`` defaults to the largest value of each series.
    Negative values are drawn as 0."""
    left, right, plot_top, plot_bottom = 64, width - 12, 36, height - 44
    values = [v for s in series for v in s.values if v is not None]
    top = nice_ceiling(max(values, default=0.0))
    n = max(len(labels), 1)
    slot = (right - left) / n
    gap = slot * 0.15 if slot > 6 else 0.0
    bar = (slot - gap) / max(len(series), 1)
    body = _axes(top, fmt, left, right, plot_top, plot_bottom, unit)
    for si, s in enumerate(series):
        colour = PALETTE[si % len(PALETTE)]
        for i, v in enumerate(s.values):
            if v is None or v <= 0:
                continue
            h = (plot_bottom - plot_top) * min(v / top, 1.0)
            x = left + i * slot + gap / 2 + si * bar
            body.append(
                f'<rect x="{x:.2f}" y="{plot_bottom - h:.2f}" width="{max(bar, 0.5):.2f}" '
                f'height="{h:.2f}" fill="{colour}"/>'
            )
    for i in _label_indexes(len(labels)):
        x = left + (i + 0.5) * slot
        body.append(_x_label(x, plot_bottom + 18, labels[i], i, len(labels)))
    body += _legend(series, left, height - 6)
    if description is None:
        description = "; ".join(
            f"{s.name}: largest {fmt(max((v for v in s.values if v is not None), default=0.0))}"
            for s in series
        )
    return _frame(chart_id, title, description, width, height, body)


def line_chart(
    chart_id: str,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str = "",
    fmt: Format = plain,
    description: str | None = None,
    top: float | None = None,
    width: int = 640,
    height: int = 240,
) -> Markup:
    """Lines with a dot at each value, one per series, on a y axis from 0 to ``top`` (default
    :func:`nice_ceiling` of the largest value); a None value breaks the line. Arguments as
    :func:`column_chart`."""
    left, right, plot_top, plot_bottom = 64, width - 12, 36, height - 44
    values = [v for s in series for v in s.values if v is not None]
    top = top or nice_ceiling(max(values, default=0.0))
    n = max(len(labels), 1)
    step = (right - left) / max(n - 1, 1)
    body = _axes(top, fmt, left, right, plot_top, plot_bottom, unit)
    for si, s in enumerate(series):
        colour = PALETTE[si % len(PALETTE)]
        runs: list[list[str]] = [[]]
        dots = []
        for i, v in enumerate(s.values):
            if v is None:
                runs.append([])
                continue
            x = left + i * step if n > 1 else (left + right) / 2
            y = plot_bottom - (plot_bottom - plot_top) * min(max(v, 0.0) / top, 1.0)
            runs[-1].append(f"{x:.2f},{y:.2f}")
            if n <= 120:
                dots.append(f'<circle cx="{x:.2f}" cy="{y:.2f}" r="2.5" fill="{colour}"/>')
        for run in runs:
            if len(run) > 1:
                body.append(
                    f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" stroke-width="2"/>'
                )
        body += dots
    for i in _label_indexes(len(labels)):
        x = left + i * step if n > 1 else (left + right) / 2
        body.append(_x_label(x, plot_bottom + 18, labels[i], i, len(labels)))
    body += _legend(series, left, height - 6)
    if description is None:
        description = "; ".join(
            f"{s.name}: largest {fmt(max((v for v in s.values if v is not None), default=0.0))}"
            for s in series
        )
    return _frame(chart_id, title, description, width, height, body)


def bar_list(
    chart_id: str,
    title: str,
    items: Sequence[tuple[str, float]],
    *,
    fmt: Format = plain,
    width: int = 640,
    row: int = 24,
    label_width: int = 220,
) -> Markup:
    """Horizontal bars, one row per ``(label, value)`` in the order given, each with its value
    written after it; for counts by category (findings by kind, turns per tier). Labels longer
    than fit are shortened with an ellipsis (the full label is in the row's ``<title>``)."""
    height = max(len(items), 1) * row + 8
    top = nice_ceiling(max((v for _, v in items), default=0.0))
    span = width - label_width - 80
    chars = max(label_width // 7, 4)
    body = []
    for i, (label, value) in enumerate(items):
        y = 4 + i * row
        w = span * min(max(value, 0.0) / top, 1.0)
        shown = label if len(label) <= chars else label[: chars - 1] + "…"
        colour = PALETTE[0]
        body.append(
            f"<g><title>{escape(label)}: {escape(fmt(value))}</title>"
            f'<text x="{label_width - 8}" y="{y + row * 0.65:.1f}" text-anchor="end" font-size="12" '
            f'fill="{INK}">{escape(shown)}</text>'
            f'<rect x="{label_width}" y="{y + 3}" width="{max(w, 1.0):.2f}" height="{row - 8}" '
            f'fill="{colour}"/>'
            f'<text x="{label_width + w + 6:.1f}" y="{y + row * 0.65:.1f}" font-size="12" '
            f'fill="{INK}">{escape(fmt(value))}</text></g>'
        )
    description = ", ".join(f"{label}: {fmt(value)}" for label, value in items[:12])
    if len(items) > 12:
        description += f", and {len(items) - 12} more"
    return _frame(chart_id, title, description or "nothing to show", width, height, body)
