"""``turnstile mcp ...`` commands.

``turnstile mcp status`` asks a running gateway (``GET /health``) for the state of every
registered MCP server and prints one row per server: state and why (``degraded: tool 'x' did not
answer within 60 s``), tools exposed/available, restarts, when it last answered, failures in a
row, what its stdout did wrong (junk lines, refused messages) and the last error, then a line per
server with tools pending an admin's review. Exit code 0
when every enabled server is ready, 1 when one is not, 2 when the gateway cannot be reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="The MCP registry of a running gateway.", no_args_is_help=True)
console = Console()


def _base_url(config: Path | None) -> str:
    from gateway.config import Settings, default_config_path, load_config
    from gateway.errors import ConfigError

    settings = Settings()
    try:
        cfg = load_config(config or settings.config or default_config_path())
    except ConfigError as err:
        typer.echo(f"configuration error\n{err.message}", err=True)
        raise typer.Exit(2) from err
    host = settings.host or cfg.server.host
    port = settings.port or cfg.server.port
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"


def _ago(then: float | None, now: float) -> str:
    if then is None:
        return "never"
    age = max(0.0, now - then)
    return (
        f"{age:.0f} s ago"
        if age < 120
        else f"{age / 60:.0f} min ago"
        if age < 7200
        else f"{age / 3600:.0f} h ago"
    )


def _wire(wire: dict[str, Any] | None) -> str:
    if not wire:
        return ""
    bad = [
        f"{wire[k]} {label}"
        for k, label in (("junk_lines", "junk"), ("oversize_messages", "refused"))
        if wire.get(k)
    ]
    return ", ".join(bad)


def render_status(servers: list[dict[str, Any]], now: float | None = None) -> Table:
    """A table of server states (``/health``'s ``mcp.servers``); ``now`` (epoch seconds) for
    the ages of the last answers."""
    import time

    now = time.time() if now is None else now
    table = Table(title="MCP servers")
    cols = (
        "server",
        "transport",
        "state",
        "tools (available/exposed)",
        "restarts",
        "last answer",
        "failures",
    )
    for col in (*cols, "stdout faults", "last error"):
        table.add_column(col)
    for s in servers:
        state = s["state"] + (f": {s['reason']}" if s.get("reason") else "")
        table.add_row(
            s["id"],
            s.get("transport", ""),
            state[:120],
            f"{s.get('available_tools', 0)}/{s.get('exposed_tools', 0)}",
            str(s.get("restarts", 0)),
            _ago(s.get("last_ok"), now),
            str(s.get("consecutive_failures", 0)),
            _wire(s.get("wire")),
            (s.get("last_error") or "")[:80] + ("; " + "; ".join(s["problems"]) if s.get("problems") else ""),
        )
    return table


def pending_lines(servers: list[dict[str, Any]]) -> list[str]:
    """One line per server with tools awaiting an admin's review (``/health``'s
    ``pending_tools``), and how to accept them."""
    out = []
    for s in servers:
        pending = s.get("pending_tools") or []
        if pending:
            names = ", ".join(f"{p['tool']} ({p['change']})" for p in pending)
            out.append(
                f"{s['id']}: pending admin review, asked before every call: {names}; accept with "
                f"POST /admin/mcp/servers/{s['id']}/tools/accept"
            )
    return out


@app.command()
def status(
    url: Annotated[
        str | None, typer.Option(help="Gateway base URL. Default: server.host/port of the config.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="Configuration file to read host and port from.")
    ] = None,
) -> None:
    """Show every registered MCP server of a running gateway and its state."""
    import json
    import urllib.request

    base = url or _base_url(config)
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=10) as resp:
            body = json.loads(resp.read())
    except (OSError, ValueError) as err:
        console.print(f"[red]cannot reach the gateway at {base}[/red]: {err}")
        raise typer.Exit(2) from err
    servers = (body.get("mcp") or {}).get("servers", [])
    if not servers:
        console.print("no MCP servers registered")
        raise typer.Exit(0)
    console.print(render_status(servers))
    for line in pending_lines(servers):
        console.print(line)
    bad = [s["id"] for s in servers if s.get("enabled", True) and s["state"] != "ready"]
    if bad:
        console.print(f"[yellow]not ready:[/yellow] {', '.join(bad)}")
        raise typer.Exit(1)
