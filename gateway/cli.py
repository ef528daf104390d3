"""The ``turnstile`` command."""

from __future__ import annotations

import os
import secrets
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import structlog
import typer
from rich.console import Console

from gateway.config import GatewayConfig, Settings, default_config_path, load_config
from gateway.errors import ConfigError

app = typer.Typer(
    help="Turnstile: one endpoint for OpenAI and Anthropic clients, with tool-call guards and routing.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()


class LogLevel(StrEnum):
    """Log levels ``turnstile serve`` accepts."""

    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


@app.command()
def serve(
    config: Annotated[
        Path | None,
        typer.Option(
            help="YAML configuration file (deployments, model aliases, guard policies). "
            "Default: the embedded config/default.yaml, which serves the keyless demo deployment."
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option(help="Address to listen on. Default: server.host of the config (127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="TCP port to listen on. Default: server.port of the config (4000).")
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes; use one per CPU core to scale. "
            "Each worker holds its own connection pool; they count limits together "
            "(a SQLite file per run, or Redis with redis.url).",
        ),
    ] = 1,
    log_level: Annotated[
        LogLevel | None,
        typer.Option(help="How much the server logs. Default: TURNSTILE_LOG_LEVEL, else info."),
    ] = None,
    allow_anonymous: Annotated[
        bool,
        typer.Option(
            "--allow-anonymous",
            help="Serve on a non-loopback --host although clients need no key (access.auth set to "
            "optional or off; required, the default off loopback, needs no flag): anyone who can "
            "reach it spends the provider keys. Also server.allow_anonymous, TURNSTILE_ALLOW_ANONYMOUS.",
        ),
    ] = False,
) -> None:
    """Run the gateway (OpenAI /v1/chat/completions, Anthropic /v1/messages, /v1/models).
    Runs in the foreground until Ctrl-C (or SIGTERM) stops it."""
    import uvicorn

    from gateway import exposure
    from gateway.logs import configure

    settings = Settings()
    path = (config or settings.config or default_config_path()).resolve()
    try:
        cfg = load_config(path)
    except ConfigError as err:
        console.print(f"[red]configuration error[/red]\n{err.message}")
        raise typer.Exit(2) from err
    bind = host or settings.host or cfg.server.host
    problem = exposure.unusable_host(bind, resolve=False)
    if problem is None:  # a non-loopback host is refused before it is looked up
        try:
            exposure.check_listen_address(bind, cfg, settings, flag=allow_anonymous)
        except ConfigError as err:
            problem = err.message
    problem = problem or exposure.unusable_host(bind)
    if problem is not None:
        typer.echo(f"turnstile: {problem}", err=True)
        raise typer.Exit(2)
    level = log_level.value if log_level is not None else settings.log_level.lower()
    if level not in LogLevel.__members__:
        level = LogLevel.info.value
    configure(level, json=settings.log_json)
    os.environ["TURNSTILE_CONFIG"] = str(path)
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Every worker keeps its metric values in files there; /metrics adds them up
        # (gateway.metrics). A fresh directory per run: old workers' files must not count.
        import tempfile

        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="turnstile-metrics-")
    if workers > 1 and not os.environ.get("TURNSTILE_WORKERS_STATE"):
        # the workers share limit counters (without redis.url), the admin-key throttle and the
        # one-time login through one SQLite file (gateway.config.workers_state_path). A fresh
        # one per run: counters are seeded from the ledger, as one process's memory is.
        import tempfile

        shared = Path(tempfile.mkdtemp(prefix="turnstile-workers-")) / "workers.db"
        os.environ["TURNSTILE_WORKERS_STATE"] = str(shared)
    os.environ["TURNSTILE_WORKERS"] = str(workers)
    os.environ["TURNSTILE_LOG_LEVEL"] = level  # the app factory (in each worker) logs at this level
    os.environ["TURNSTILE_HOST"] = bind  # the factory judges (and tells MCP) the address served
    if allow_anonymous:
        os.environ["TURNSTILE_ALLOW_ANONYMOUS"] = "1"
    listen_port = port or settings.port or cfg.server.port
    link = _console_link(cfg, settings, bind, listen_port)
    if link is not None:
        typer.echo(f"Console: open this one-time login link (it works once): {link}")
    from gateway.serving import raise_fd_limit, uvicorn_options

    soft, hard = raise_fd_limit()  # every client connection, upstream call and store holds one
    structlog.get_logger("turnstile.cli").info("fd_limit", soft=soft, hard=hard)
    if workers > 1 and not cfg.redis.url:
        structlog.get_logger("turnstile.cli").info(
            "limits_shared_by_workers",
            workers=workers,
            file=os.environ.get("TURNSTILE_WORKERS_STATE"),
            hint="the workers count budgets and rate limits once, in one SQLite file (docs/limits.md); "
            "several machines need redis.url",
        )
    uvicorn.run(
        "gateway.server:create_app",
        factory=True,
        host=bind,
        port=listen_port,
        workers=workers,
        access_log=False,
        log_level=level,
        lifespan="on",
        # SIGTERM: open turns get this long, then are cut (recorded as aborted; gateway.shutdown)
        timeout_graceful_shutdown=cfg.server.shutdown_timeout_s,
        **uvicorn_options(cfg.server),
    )


def _console_link(cfg: GatewayConfig, settings: Settings, bind: str, port: int) -> str | None:
    """With the console on, on a loopback ``bind`` and without an admin key: a fresh random
    one-time login token handed to the app (``TURNSTILE_CONSOLE_TOKEN``) and the link that
    uses it, ``http://<bind>:<port>/ui/login?token=<token>``; else None (the console takes
    the admin key, or is closed: :mod:`gateway.console.auth`)."""
    from gateway import exposure

    admin = settings.read_key(cfg.access.admin_key_env) if cfg.access.admin_key_env else None
    if not cfg.console.enabled or admin or not exposure.is_loopback(bind):
        os.environ.pop("TURNSTILE_CONSOLE_TOKEN", None)
        return None
    token = secrets.token_urlsafe(32)
    os.environ["TURNSTILE_CONSOLE_TOKEN"] = token  # every worker process reads it (Settings)
    where = f"[{bind.strip('[]')}]" if ":" in bind else bind
    return f"http://{where}:{port}/ui/login?token={token}"


@app.command()
def logs(
    db: Annotated[
        Path | None, typer.Option(help="SQLite transcript file. Default: server.db_path of the config.")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="Configuration file to read db_path from.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="How many recent turns to show.")] = 20,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per turn instead of a table.")
    ] = False,
) -> None:
    """Show recent turns from the transcript as a table (read-only)."""
    import sqlite3

    import orjson

    from gateway.transcript import recent

    settings = Settings()
    if db is None:
        try:
            cfg = load_config(config or settings.config or default_config_path())
        except ConfigError as err:
            console.print(f"[red]configuration error[/red]\n{err.message}")
            raise typer.Exit(2) from err
        db = settings.db_path or Path(cfg.server.db_path)
    if not db.exists():
        console.print(f"no transcript at {db} yet")
        raise typer.Exit(0)
    try:
        rows = recent(db, limit)
    except sqlite3.DatabaseError as err:
        console.print(f"[red]{db} is not a Turnstile transcript:[/red] {err}")
        raise typer.Exit(2) from err
    if as_json:
        for row in rows:
            typer.echo(orjson.dumps(row).decode())
        return
    from gateway.turns_table import render_turns

    console.print(render_turns(rows, str(db), console))


from gateway.access.cli import keys_app as _keys_app  # noqa: E402
from gateway.access.cli import spend as _spend  # noqa: E402
from gateway.access.cli import teams_app as _teams_app  # noqa: E402
from gateway.sessions.cli import app as _sessions_app  # noqa: E402

app.add_typer(_keys_app, name="keys")
app.add_typer(_teams_app, name="teams")
app.command("spend")(_spend)

app.add_typer(_sessions_app, name="sessions")

from routers.eval import route_eval as _route_eval  # noqa: E402
from routers.train import route_train as _route_train  # noqa: E402

app.command("route-eval")(_route_eval)
app.command("route-train")(_route_train)


from mcp_servers.cli import app as _mcp_app  # noqa: E402

app.add_typer(_mcp_app, name="mcp")


from gateway.replay.cli import replay as _replay  # noqa: E402

app.command("replay")(_replay)


def main() -> None:
    """Entry point."""
    app()


if __name__ == "__main__":
    main()
