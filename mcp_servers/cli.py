"""``turnstile mcp ...`` commands.

``turnstile mcp status`` asks a running gateway (``GET /health``) for the state of every
registered MCP server and prints one row per server: state and why (``degraded: tool 'x' did not
answer within 60 s``), tools exposed/available, restarts, when it last answered, failures in a
row, what its stdout did wrong (junk lines, refused messages) and the last error, then a line per
server with tools pending an admin's review. Exit code 0
when every enabled server is ready, 1 when one is not, 2 when the gateway cannot be reached.

``turnstile mcp add FILE`` registers a server with a running gateway (``POST
/admin/mcp/servers``, the admin key from ``access.admin_key_env``): FILE is an official
``server.json`` (its package run at the pinned version, or its remote:
:mod:`mcp_servers.official`) or a gateway spec. Exit code 0 when registered, 1 when the file
cannot be used or the gateway refused it (its message printed), 2 when the gateway cannot be
reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="The MCP registry of a running gateway.", no_args_is_help=True)
console = Console()


def _loaded(config: Path | None) -> tuple[Any, Any]:
    from gateway.config import Settings, default_config_path, load_config
    from gateway.errors import ConfigError

    settings = Settings()
    try:
        cfg = load_config(config or settings.config or default_config_path())
    except ConfigError as err:
        typer.echo(f"configuration error\n{err.message}", err=True)
        raise typer.Exit(2) from err
    return settings, cfg


def _base_url(config: Path | None) -> str:
    settings, cfg = _loaded(config)
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


def _pairs(items: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            typer.echo(f"{option}: expected NAME=VALUE, got {item!r}", err=True)
            raise typer.Exit(1)
        out[key] = value
    return out


def spec_from_file(
    path: Path,
    *,
    sid: str | None = None,
    remote: bool = False,
    index: int | None = None,
    values: dict[str, str] | None = None,
    header_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The gateway spec (JSON-ready) of ``path``: an official ``server.json`` converted
    (:func:`mcp_servers.official.spec_from_server_json`) or a gateway spec as it is. Raises
    ``ValueError`` (:class:`mcp_servers.official.ServerJsonError`, pydantic's) naming the
    problem, ``OSError`` when the file cannot be read."""
    import json

    from mcp_servers.config import McpServerSpec
    from mcp_servers.official import is_server_json, spec_from_server_json

    doc = json.loads(path.read_text(encoding="utf-8"))
    if is_server_json(doc):
        spec = spec_from_server_json(
            doc,
            sid=sid,
            prefer="remote" if remote else "package",
            index=index,
            values=values,
            header_env=header_env,
        )
    else:
        spec = McpServerSpec.model_validate({**doc, **({"id": sid} if sid else {})})
    return spec.model_dump(mode="json", exclude_none=True)


@app.command()
def add(
    file: Annotated[Path, typer.Argument(help="An official server.json, or a gateway server spec (JSON).")],
    id: Annotated[
        str | None, typer.Option("--id", help="Server id (default: the name's last segment).")
    ] = None,
    remote: Annotated[
        bool, typer.Option(help="Use the server.json's remote rather than its package.")
    ] = False,
    index: Annotated[
        int | None, typer.Option(help="Which package (or remote, with --remote), from 0.")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="NAME=VALUE for an argument or {variable} without a value."),
    ] = None,
    header_env: Annotated[
        list[str] | None, typer.Option(help="HEADER=ENV: the environment variable holding a remote's header.")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the spec; register nothing.")] = False,
    url: Annotated[
        str | None, typer.Option(help="Gateway base URL. Default: server.host/port of the config.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="Configuration file (host, port, admin key variable).")
    ] = None,
    wait_s: Annotated[
        float, typer.Option(help="Seconds to wait for the server to be ready (at most 60).")
    ] = 10.0,
) -> None:
    """Register an MCP server with a running gateway, from an official server.json (version pinned)."""
    import json
    import urllib.error
    import urllib.request

    try:
        spec = spec_from_file(
            file,
            sid=id,
            remote=remote,
            index=index,
            values=_pairs(set_ or [], "--set"),
            header_env=_pairs(header_env or [], "--header-env"),
        )
    except (OSError, ValueError) as err:
        typer.echo(f"cannot register {file}: {err}", err=True)
        raise typer.Exit(1) from err
    if dry_run:
        typer.echo(json.dumps(spec, indent=2))
        return
    settings, cfg = _loaded(config)
    base = url or _base_url(config)
    env = cfg.access.admin_key_env
    key = settings.read_key(env) if env else None
    if not key:
        typer.echo(
            f"no admin key: set the environment variable {env or 'named by access.admin_key_env'}", err=True
        )
        raise typer.Exit(1)
    request = urllib.request.Request(
        f"{base}/admin/mcp/servers?wait_s={min(60.0, max(0.0, wait_s)):g}",
        data=json.dumps(spec).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=wait_s + 30) as resp:
            body = json.loads(resp.read())
            created = resp.status == 201
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")
        typer.echo(f"the gateway refused {spec['id']!r} (HTTP {err.code}): {detail}", err=True)
        raise typer.Exit(1) from err
    except (OSError, ValueError) as err:
        typer.echo(f"cannot reach the gateway at {base}: {err}", err=True)
        raise typer.Exit(2) from err
    state = (body.get("status") or {}).get("state", "?")
    verb = "added" if created else "replaced"
    console.print(f"{verb} MCP server {spec['id']!r} ({spec['transport']['type']}): {state}")
