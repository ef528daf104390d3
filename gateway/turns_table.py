"""``turnstile logs`` for people: recent transcript rows as a table that fits the terminal.

A terminal wide enough for every column in full (about 180 columns for typical rows) gets
them all. A narrower one (80 columns is the reference) gets a compact table with one-space
gaps: the title on a line of its own, the date in it when every turn is from one day, request
ids cut to :data:`SHORT_ID` characters (enough to find the turn in ``turnstile logs --json``;
a tool-loop step keeps its ``.stepN`` suffix), no client dialect, the model and the deployment
that served it in one column (``default→demo``; just the deployment when its name contains the
model's), the stop reason and the status in one (``tool_use``, or ``404 ↓`` for a failure),
token counts and costs written compactly, and the guards column only when a guard repaired or
rejected something.

In both, nothing is cut: a name longer than its column folds onto the next line, and an error
message, which no column could hold, is listed in full under the table, keyed by request id.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

SHORT_ID = 8
"""Characters of a request id in the compact table (12 in the wide one)."""

GUARDS = {"repaired": "repair", "rejected": "reject"}


def compact_count(n: int) -> str:
    """A token count in at most 5 characters: ``950``, ``12.3k``, ``123k``, ``1.2M``."""
    if n < 1000:
        return str(n)
    if n < 100_000:
        return f"{n / 1000:.1f}".removesuffix(".0") + "k"
    if n < 1_000_000:
        return f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}".removesuffix(".0") + "M"


def compact_usd(x: float | None) -> str:
    """A cost in USD in at most 8 characters: ``0.000123``, ``0.0123``, ``1.2346``, ``123``;
    empty when unknown."""
    if x is None:
        return ""
    if x == 0:
        return "0"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 0.01:
        return f"{x:.4f}".rstrip("0").rstrip(".")
    return f"{x:.6f}".rstrip("0").rstrip(".") or "0"


def model_and_deployment(model: str, deployment: str) -> str:
    """One cell for the requested model and the deployment that served it: the deployment
    alone when it is the model or its name contains the model's, else ``model→deployment``
    (just the model when no deployment was reached)."""
    if not deployment:
        return model
    if not model or model == deployment or model in deployment:
        return deployment
    return f"{model}→{deployment}"


def render_turns(rows: list[dict[str, Any]], source: str, console: Console) -> RenderableType:
    """The rows of :func:`gateway.transcript.recent` (newest first) as a table for
    ``console`` (its width in columns decides: the full table when it fits without folding,
    else the compact one), followed by the error messages of failed turns in full."""
    table = _wide(rows, source)
    natural = console.measure(table, options=console.options.update_width(10_000)).maximum
    wide = natural <= console.width
    if not wide:
        table = _compact(rows, source)
    parts: list[RenderableType] = [table]
    if not wide:  # the title on a line of its own: a narrow table would fold it
        parts.insert(0, Text(str(table.title), style="italic"))
        table.title = None
    errors = [r for r in rows if r["error"] and not r["stop"]]
    if errors:
        keep = 12 if wide else SHORT_ID
        parts.append(Text("errors (↓ in the table):", style="bold"))
        parts += [Text(f"{short_id(r['request_id'], keep)} {r['status']}: {r['error']}") for r in errors]
    return parts[0] if len(parts) == 1 else Group(*parts)


def short_id(request_id: str | None, keep: int) -> str:
    """The first ``keep`` characters of a request id, and its suffix after a ``.`` if any (the
    rows the server-side tool loop writes per step: ``c86065ec.step1``), so that the rows of one
    turn do not look like duplicates."""
    rid = request_id or ""
    head, dot, suffix = rid.partition(".")
    return head[:keep] + dot + suffix


def outcome(row: dict[str, Any]) -> str:
    """The compact table's outcome cell: the stop reason of an answered turn (status 200),
    else the status, with ``↓`` when its error message is listed under the table."""
    if row["status"] == 200:
        return row["stop"] or ""
    return f"{row['status']}{' ↓' if row['error'] else ''}{' ' + row['stop'] if row['stop'] else ''}"


def _stop(row: dict[str, Any]) -> str:
    return row["stop"] or ("error ↓" if row["error"] else "")


def _wide(rows: list[dict[str, Any]], source: str) -> Table:
    table = Table(title=f"recent turns in {source} (newest first)")
    for name in ("time (UTC)", "request id", "dialect", "model", "deployment", "status", "stop"):
        table.add_column(name, overflow="fold")
    for name in ("in/out tok", "cost USD"):
        table.add_column(name, no_wrap=True)
    table.add_column("ms", no_wrap=True, justify="right")
    table.add_column("guards", no_wrap=True)
    for row in rows:
        tokens = f"{row['input_tokens'] or 0}/{row['output_tokens'] or 0}"
        if row["usage_estimated"]:
            tokens += " (est.)"
        table.add_row(
            datetime.fromtimestamp(row["ts"], UTC).strftime("%Y-%m-%d %H:%M:%S"),
            short_id(row["request_id"], 12),
            row["client_dialect"] or "",
            row["requested_model"] or "",
            row["deployment"] or "",
            str(row["status"]),
            _stop(row),
            tokens,
            "" if row["cost_usd"] is None else f"{row['cost_usd']:.6f}",
            "" if row["latency_ms"] is None else f"{row['latency_ms']:.1f}",
            row["guard_outcome"] or "",
        )
    return table


def _compact(rows: list[dict[str, Any]], source: str) -> Table:
    stamps = [datetime.fromtimestamp(r["ts"], UTC) for r in rows]
    days = {t.date() for t in stamps}
    one_day = len(days) == 1
    title = f"recent turns in {source} (UTC" + (f" {next(iter(days)).isoformat()}" if one_day else "")
    guards = any((r["guard_outcome"] or "ok") != "ok" for r in rows)
    table = Table(
        title=title + ", newest first)",
        caption="model→deployment that served it; tokens in/out, * estimated",
        box=box.SIMPLE_HEAD,
        padding=(0, 0),
        show_edge=False,
    )
    table.add_column("time", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("model", overflow="fold", ratio=1)
    table.add_column("outcome", overflow="fold", max_width=14)
    table.add_column("tokens", no_wrap=True)
    table.add_column("USD", no_wrap=True, justify="right")
    table.add_column("ms", no_wrap=True, justify="right")
    if guards:
        table.add_column("guard", no_wrap=True)
    for row, when in zip(rows, stamps, strict=True):
        tokens = f"{compact_count(row['input_tokens'] or 0)}/{compact_count(row['output_tokens'] or 0)}"
        latency = row["latency_ms"]
        cells = [
            when.strftime("%H:%M:%S" if one_day else "%m-%d %H:%M"),
            short_id(row["request_id"], SHORT_ID),
            model_and_deployment(row["requested_model"] or "", row["deployment"] or ""),
            outcome(row),
            tokens + ("*" if row["usage_estimated"] else ""),
            compact_usd(row["cost_usd"]),
            "" if latency is None else f"{latency:.0f}",
        ]
        if guards:
            guard = row["guard_outcome"] or "ok"
            cells.append(GUARDS.get(guard, guard))
        table.add_row(*cells)
    return table
