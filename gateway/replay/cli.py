"""``turnstile replay PATH... [--json] [--html FILE]``: the report of a replay, for people or
machines, and as one self-contained page (:mod:`gateway.replay.html`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table


def _table(title: str, cols: tuple[str, ...], rows: list[tuple[Any, ...]]) -> Table:
    t = Table(title=title, title_justify="left")
    for c in cols:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(str(x) for x in r))
    return t


def print_report(d: dict[str, Any], console: Console, seconds: float, *, details: int = 20) -> None:
    """Render the report dict (:meth:`Report.as_dict`) as rich tables."""
    console.print(_table("Totals", ("what", "count"), [(k, v) for k, v in d["totals"].items()]))
    console.print(
        _table(
            "Findings in the input (reported, not failures)",
            ("kind", "count"),
            list(d["findings_by_kind"].items()),
        )
    )
    if d["findings"]:
        console.print(
            _table(
                f"First {details} findings",
                ("kind", "file", "where", "id", "message"),
                [
                    (f["kind"], f["file"], f["where"], f["id"] or "", f["message"][:120])
                    for f in d["findings"][:details]
                ],
            )
        )
    console.print(
        _table(
            "Conversion limits of target APIs (explained, not losses)",
            ("target:facet", "count", "why"),
            [(k, v["count"], v["why"]) for k, v in d["limits"].items()],
        )
    )
    c = d["cost"]
    rows = [
        (m, v["turns"], f"{v['recorded_usd']:.4f}", f"{v['estimated_usd']:.4f}")
        for m, v in c["by_model"].items()
    ]
    rows.append(
        (
            "all turns with recorded cost",
            c["turns_compared"],
            f"{c['recorded_usd']:.4f}",
            f"{c['estimated_usd']:.4f}",
        )
    )
    if c["conversations_compared"]:
        rows.append(
            (
                "whole conversations (recorded total only)",
                c["conversations_compared"],
                f"{c['conversation_recorded_usd']:.4f}",
                f"{c['conversation_estimated_usd']:.4f}",
            )
        )
    console.print(
        _table(
            "Cost: recorded vs Turnstile's estimate (USD)", ("model", "turns", "recorded", "estimated"), rows
        )
    )
    console.print(
        f"turns priced from estimated tokens (no recorded usage): {c['turns_estimated_tokens']}; "
        f"turns of models without a catalog price: {c['unpriced_turns']}"
    )
    print_routing(d.get("routing"), console)
    unsupported: dict[str, int] = {}
    for u in d["unsupported"]:
        unsupported[u["reason"]] = unsupported.get(u["reason"], 0) + 1
    console.print(
        _table(
            "Unsupported formats (skipped, not failures)",
            ("reason", "count"),
            sorted(unsupported.items(), key=lambda kv: -kv[1]),
        )
    )
    if d["issues"]:
        console.print(
            _table(
                "Unreadable input (skipped)",
                ("file", "line", "message"),
                [(i["file"], i["line"] or "", i["message"]) for i in d["issues"][:details]],
            )
        )
    if d["losses"]:
        console.print(
            _table(
                "LOSSES (Turnstile dropped information)",
                ("file", "where", "target", "facet", "recorded", "after"),
                [
                    (x["file"], x["where"], x["target"], x["facet"], x["before"], x["after"])
                    for x in d["losses"][:details]
                ],
            )
        )
    if d["crashes"]:
        console.print(
            _table(
                "CRASHES",
                ("file", "where", "error"),
                [(x["file"], x["where"], x["error"]) for x in d["crashes"][:details]],
            )
        )
    verdict = "[green]ok[/green]" if d["ok"] else "[red]FAILED[/red]"
    console.print(
        f"{verdict}: {len(d['losses'])} losses, {len(d['crashes'])} crashes, "
        f"{sum(d['findings_by_kind'].values())} findings in {seconds:.1f} s"
    )


def _usd(x: float) -> str:
    return f"{x:.4f}"


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def print_routing(r: dict[str, Any] | None, console: Console) -> None:
    """Render the routing estimate (``Report.as_dict()["routing"]``): one row per routed
    conversation and the total."""
    if not r or not r["totals"]["conversations"]:
        return
    tiers = sorted(r["totals"]["by_tier"])
    cols = (
        "file",
        "conversation",
        "alias",
        *tiers,
        "switches",
        "recorded",
        "routed (net of lost cache)",
        "of it lost cache",
        "always strong",
        "saving",
    )

    def row(file: str, name: str, alias: str, d: dict[str, Any], sav: float | None) -> tuple[Any, ...]:
        return (
            file,
            name,
            alias,
            *(d["by_tier"].get(t, 0) for t in tiers),
            d["switches"],
            _usd(d["recorded_usd"]),
            _usd(d["routed_usd"]),
            _usd(d.get("cache_loss_usd", 0.0)),
            _usd(d["strong_usd"]),
            _pct(sav),
        )

    rows = [row(c["file"], c["conversation"], c["alias"], c, c["saving"]) for c in r["conversations"]]
    t = r["totals"]
    rows.append(row("TOTAL", f"{t['conversations']} conversations", "", t, t["saving_vs_recorded"]))
    console.print(
        _table("Routing estimate: turns per tier and cost (USD) as recorded / as routed", cols, rows)
    )
    console.print(
        f"routing saves {_pct(t['saving_vs_recorded'])} of the recorded cost and "
        f"{_pct(t['saving_vs_strong'])} of always-strong over {t['priced_turns']} priced turns, net of "
        f"{_usd(t.get('cache_loss_usd', 0.0))} of prompt cache lost on {t['switches']} switches "
        f"({t['unpriced_turns']} routed turns of unpriced models left out); cost only — quality is "
        "estimated offline by `turnstile route-eval`"
    )


def stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (then the progress bar shows; else progress lines
    go to stderr)."""
    return sys.stdout.isatty()


def replay(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files or directories of recorded agent sessions and "
            "provider traffic (e.g. ../shared/corpus)."
        ),
    ],
    json: Annotated[bool, typer.Option("--json", help="Print the report as JSON instead of tables.")] = False,
    jobs: Annotated[int | None, typer.Option(min=1, help="Worker processes. Default: one per CPU.")] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(help="Directory names to skip. Default: routing (the routing data set is not traffic)."),
    ] = None,
    routing_config: Annotated[
        Path | None,
        typer.Option(
            "--routing-config",
            help="Routing configuration for the routing estimate (aliases named after the "
            "recorded dialect: anthropic_messages, openai_chat). Default: gateway/replay/routing.yaml.",
        ),
    ] = None,
    no_routing: Annotated[bool, typer.Option("--no-routing", help="Skip the routing estimate.")] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write the report as one self-contained HTML page (inline CSS and SVG charts, "
            "nothing fetched) to this file.",
        ),
    ] = None,
) -> None:
    """Replay recorded conversations and provider traffic through the whole pipeline and report
    what the guards catch, what conversions lose and what it would cost. Progress shows from
    the start: a bar on a terminal, else a line on stderr every few seconds ("errors": crashes
    and losses so far). Exit status 1 only when Turnstile itself crashed or lost information."""
    for p in paths:
        if not p.exists():
            typer.echo(f"no such file or directory: {p}", err=True)
            raise typer.Exit(2)
    if html is not None and not html.parent.is_dir():
        typer.echo(f"--html {html}: folder {html.parent} does not exist", err=True)
        raise typer.Exit(2)
    from gateway.replay.progress import make_progress

    tty = stdout_is_terminal()
    console = Console(stderr=json, force_terminal=True if tty and not json else None)
    started = time.perf_counter()
    progress = make_progress(tty and console.is_terminal, console, sys.stderr)  # shown from the start
    try:
        progress.phase("starting: loading the pipeline")
        from gateway.errors import ConfigError
        from gateway.replay.discover import DEFAULT_EXCLUDE
        from gateway.replay.routing import DEFAULT_ROUTING_PATH, load_routing
        from gateway.replay.runner import run

        if not no_routing:
            try:
                load_routing(routing_config)
            except ConfigError as err:
                progress.close()
                typer.echo(str(err), err=True)
                raise typer.Exit(2) from err
        progress.phase("finding files")
        report = run(
            paths,
            jobs=jobs,
            exclude=tuple(exclude) if exclude else DEFAULT_EXCLUDE,
            on_start=progress.start,
            on_file=progress.file_done,
            routing_config=routing_config,
            route=not no_routing,
        )
    finally:
        progress.close()
    data = report.as_dict()
    data["routing"]["config"] = None if no_routing else str(routing_config or DEFAULT_ROUTING_PATH)
    seconds = time.perf_counter() - started
    if json:
        sys.stdout.write(
            orjson.dumps({**data, "seconds": round(seconds, 2)}, option=orjson.OPT_INDENT_2).decode()
        )
        sys.stdout.write("\n")
    else:
        print_report(data, console, seconds)
    if html is not None:
        from gateway.replay.html import write

        try:
            write(html, data, seconds=seconds, inputs=[str(p) for p in paths])
        except OSError as err:
            typer.echo(f"--html {html}: cannot write the report: {err}", err=True)
            raise typer.Exit(2) from err
        typer.echo(f"report written to {html}", err=True)
    raise typer.Exit(1 if report.failed else 0)
