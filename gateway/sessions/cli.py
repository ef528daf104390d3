"""``turnstile sessions list|show``: read the session store from the command line."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="Read sessions (append-only entry trees) from the session store.", no_args_is_help=True
)
console = Console()


def _config_error(message: str) -> None:
    console.print("configuration error", style="red")
    console.print(message, markup=False, highlight=False, soft_wrap=True)  # YAML excerpts contain [brackets]


def _url(url: str | None, config: Path | None) -> str:
    """The store URL: ``--url``, else from the configuration. A configuration error is printed
    (no traceback) and exits 2, as ``turnstile serve`` does."""
    if url:
        return url
    from gateway.config import Settings, default_config_path, load_config
    from gateway.errors import ConfigError

    settings = Settings()
    try:
        cfg = load_config(config or settings.config or default_config_path())
    except ConfigError as err:
        _config_error(err.message)
        raise typer.Exit(2) from err
    return cfg.sessions.url or cfg.storage.url or str(settings.db_path or cfg.server.db_path)


def _ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


async def _with_store(url: str, fn: Any) -> Any:
    from gateway.sessions.open import open_store

    store = await open_store(url, readonly=True)  # a read command never creates or migrates
    try:
        return await fn(store)
    finally:
        await store.close()


def _read(url: str, fn: Any) -> Any:
    """Run ``fn(store)`` on the store at ``url`` opened read-only. A missing store prints
    "no sessions at ... yet" and exits 0; a bad URL (unknown scheme) prints the error and
    exits 2; any other store error (unknown session, unreachable server) exits 1."""
    from gateway.errors import ConfigError, TurnstileError
    from gateway.sessions.store import StoreMissing

    try:
        return asyncio.run(_with_store(url, fn))
    except StoreMissing as err:
        console.print(err.message, markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(0) from err
    except ConfigError as err:
        _config_error(err.message)
        raise typer.Exit(2) from err
    except TurnstileError as err:
        console.print(err.message, style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from err


UrlOpt = Annotated[
    str | None,
    typer.Option(
        help="Store URL (postgresql://host:port/db, sqlite:///absolute/path or a file path). "
        "Default: sessions.url of the config, else its storage.url, else its server.db_path."
    ),
]
ConfigOpt = Annotated[Path | None, typer.Option(help="Configuration file to read the store URL from.")]


@app.command("list")
def list_cmd(
    url: UrlOpt = None,
    config: ConfigOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many sessions.")] = 50,
) -> None:
    """List sessions, newest first."""
    sessions = _read(_url(url, config), lambda s: s.list_sessions(limit))
    table = Table(title="sessions")
    for col in ("created (UTC)", "id", "entries", "leaf", "forked from"):
        table.add_column(col)
    for s in sessions:
        fork = f"{s.forked_from_session}@{(s.forked_from_entry or '')[:8]}" if s.forked_from_session else ""
        table.add_row(_ts(s.created_at), s.id, str(s.entry_count), (s.leaf_id or "")[:12], fork)
    console.print(table)


def _describe(e: Any) -> str:
    p = e.payload
    if e.type == "message":
        m = p["message"]
        bits = []
        for part in m.get("content", []):
            if part.get("type") == "text":
                bits.append(part["text"])
            elif part.get("type") == "tool_call":
                bits.append(f"call {part['id']} {part['name']}({part.get('raw_arguments', '')})")
        head = m["role"] + (f" [{m['tool_call_id']}]" if m["role"] == "tool" else "")
        return f"{head}: " + " | ".join(bits)
    if e.type == "compaction":
        return (
            f"compaction ({p.get('reason')}, {p.get('tokens_before')}→{p.get('tokens_after')} tokens, "
            f"first kept {str(p.get('first_kept_entry_id'))[:12]}): {p['summary']}"
        )
    return f"{e.type}: {orjson.dumps(p).decode()}"


@app.command("show")
def show_cmd(
    session_id: str,
    url: UrlOpt = None,
    config: ConfigOpt = None,
    json: Annotated[bool, typer.Option("--json", help="Print the entries as JSON lines.")] = False,
    width: Annotated[int, typer.Option(help="Characters of each entry to show.")] = 160,
) -> None:
    """Show a session's path from the root to its leaf."""

    async def go(store: Any) -> Any:
        return await store.get_session(session_id), await store.path(session_id)

    info, path = _read(_url(url, config), go)
    if json:
        for e in path:
            typer.echo(orjson.dumps(e.public()).decode())
        return
    console.print(f"session {info.id}: {info.entry_count} own entries, leaf {info.leaf_id}")
    for e in path:
        text = _describe(e).replace("\n", " ")
        console.print(f"{e.id[:12]} {_ts(e.created_at)} {text[:width]}", markup=False, highlight=False)
