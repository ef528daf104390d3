"""``turnstile keys create|list|show|revoke|rotate`` and ``turnstile teams
create|list|show|update|delete``: virtual keys and teams from the command line, on the access
store of the configuration (``storage.url``, else the SQLite file ``server.db_path``).

Every command takes ``--config`` and ``--json`` (one JSON object per key or team). A new or
rotated key's secret is printed once and never again. Exit codes: 0 done, 1 a store error
(an unknown id, a conflict, an unreachable database), 2 a configuration error or a bad value.
Changes are audited with the actor ``cli``.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

keys_app = typer.Typer(help="Virtual keys (tsk-...) of the gateway's clients.", no_args_is_help=True)
teams_app = typer.Typer(help="Teams: limits and allow lists that bound their keys.", no_args_is_help=True)
console = Console()
ACTOR = "cli"

ConfigOpt = Annotated[
    Path | None,
    typer.Option(help="Configuration file whose store to use (storage.url, else server.db_path)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (one object per line).")]
ModelOpt = Annotated[
    list[str] | None, typer.Option("--model", help="An allowed model or alias (repeat; none: all).")
]
McpOpt = Annotated[
    list[str] | None,
    typer.Option("--mcp", help="An allowed MCP server id or server.tool name (repeat; none: all)."),
]
BudgetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--budget",
        help="A budget PERIOD:USD[:soft] with PERIOD day, week, month or total (repeat), e.g. month:100.",
    ),
]
RpmOpt = Annotated[int | None, typer.Option(min=1, help="Requests per minute at most.")]
TpmOpt = Annotated[int | None, typer.Option(min=1, help="Tokens (input + output) per minute at most.")]
ConcurrentOpt = Annotated[int | None, typer.Option(min=1, help="Turns running at once at most.")]
MetaOpt = Annotated[list[str] | None, typer.Option("--meta", help="Metadata KEY=VALUE (repeat).")]


def _fail(message: str, code: int) -> typer.Exit:
    console.print(message, style="red", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _config(config: Path | None) -> Any:
    from gateway.config import Settings, default_config_path, load_config
    from gateway.errors import ConfigError

    settings = Settings()
    try:
        return settings, load_config(config or settings.config or default_config_path())
    except ConfigError as err:
        raise _fail(err.message, 2) from err


def _url(config: Path | None) -> str:
    settings, cfg = _config(config)
    return cfg.storage.url or str(settings.db_path or cfg.server.db_path)


def _run(config: Path | None, fn: Any, *, change: str | None = None) -> Any:
    """``await fn(store)`` on the (opened, migrated) access store of ``config``; ``change``
    (what changed, e.g. ``keys revoke``): with ``redis.url``, every running instance is told to
    forget its cached key lookups (:mod:`gateway.fleet.bus`), so the change is in force at once."""
    from gateway.access.open import access_store
    from gateway.errors import ConfigError, InvalidRequest, TurnstileError

    async def go() -> Any:
        store = access_store(_url(config))
        await store.open()
        try:
            out = await fn(store)
        finally:
            await store.close()
        if change is not None:
            from gateway.fleet.bus import announce

            await announce(_config(config)[1].redis, "access", what=change)
        return out

    try:
        return asyncio.run(go())
    except (ConfigError, InvalidRequest) as err:
        raise _fail(err.message, 2) from err
    except TurnstileError as err:
        raise _fail(err.message, 1) from err


def _budgets(values: list[str] | None) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    out = []
    for v in values:
        parts = v.split(":")
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("soft", "hard")):
            raise _fail(f"--budget {v!r}: expected PERIOD:USD or PERIOD:USD:soft (e.g. month:100)", 2)
        try:
            usd = float(parts[1])
        except ValueError as err:
            raise _fail(f"--budget {v!r}: {parts[1]!r} is not a number of USD", 2) from err
        out.append({"period": parts[0], "usd": usd, "hard": len(parts) == 2 or parts[2] == "hard"})
    return out


def _meta(values: list[str] | None) -> dict[str, str] | None:
    if values is None:
        return None
    out = {}
    for v in values:
        k, sep, val = v.partition("=")
        if not sep or not k:
            raise _fail(f"--meta {v!r}: expected KEY=VALUE", 2)
        out[k] = val
    return out


def _fields(
    *,
    model: list[str] | None,
    mcp: list[str] | None,
    budget: list[str] | None,
    rpm: int | None,
    tpm: int | None,
    concurrent: int | None,
    meta: list[str] | None,
    old_limits: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The fields the options set (an option not given changes nothing)."""
    out: dict[str, Any] = {}
    if model is not None:
        out["models"] = model
    if mcp is not None:
        out["mcp"] = mcp
    budgets = _budgets(budget)
    if budgets is not None:
        out["budgets"] = budgets
    if (rpm, tpm, concurrent) != (None, None, None):
        limits = dict(old_limits or {})
        limits.update(
            {k: v for k, v in (("rpm", rpm), ("tpm", tpm), ("concurrent", concurrent)) if v is not None}
        )
        out["rate_limits"] = limits
    metadata = _meta(meta)
    if metadata is not None:
        out["metadata"] = metadata
    return out


def _ts(t: float | None) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M") if t is not None else ""


def _state(key: Any) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if not key.enabled:
        return "disabled"
    if key.expires_at is not None and key.expires_at <= time.time():
        return "expired"
    return "active"


def _echo_json(obj: Any) -> None:
    typer.echo(orjson.dumps(obj).decode())


def _key_table(keys: list[Any]) -> Table:
    table = Table(title="keys")
    for col in ("id", "name", "prefix", "team", "state", "models", "mcp", "expires (UTC)", "created (UTC)"):
        table.add_column(col)
    for k in keys:
        table.add_row(
            k.id,
            k.name,
            k.prefix + "...",
            k.team_id or "",
            _state(k),
            ", ".join(k.models) or "all",
            ", ".join(k.mcp) or "all",
            _ts(k.expires_at),
            _ts(k.created_at),
        )
    return table


def _show_secret(key: Any, secret: str, as_json: bool) -> None:
    if as_json:
        _echo_json({"key": key.public(), "secret": secret})
        return
    console.print(f"key {key.id} ({key.name})", markup=False, highlight=False)
    typer.echo(secret)
    console.print("This is the only time the key is shown: store it now.", style="yellow")


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option(help="A name for the key (who or what uses it).")],
    team: Annotated[str | None, typer.Option(help="The team (id or name) the key belongs to.")] = None,
    model: ModelOpt = None,
    mcp: McpOpt = None,
    budget: BudgetOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    concurrent: ConcurrentOpt = None,
    meta: MetaOpt = None,
    expires_in_days: Annotated[
        float | None, typer.Option(min=0, help="Days until the key expires (none: never).")
    ] = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create it disabled.")] = False,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a key; its secret (tsk-...) is printed once."""
    fields = _fields(model=model, mcp=mcp, budget=budget, rpm=rpm, tpm=tpm, concurrent=concurrent, meta=meta)
    if expires_in_days is not None:
        fields["expires_at"] = time.time() + expires_in_days * 86400
    if disabled:
        fields["enabled"] = False
    key, secret = _run(
        config, lambda s: s.create_key(name, actor=ACTOR, team_id=team, **fields), change="keys create"
    )
    _show_secret(key, secret, as_json)


@keys_app.command("list")
def keys_list(
    team: Annotated[str | None, typer.Option(help="Only the keys of this team (id or name).")] = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List keys (never their secrets), oldest first."""
    keys = _run(config, lambda s: s.list_keys(team))
    if as_json:
        for k in keys:
            _echo_json(k.public())
        return
    console.print(_key_table(keys))


@keys_app.command("show")
def keys_show(key_id: str, config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Show one key."""
    key = _run(config, lambda s: s.get_key(key_id))
    if as_json:
        _echo_json(key.public())
        return
    console.print(_key_table([key]))
    for field in ("budgets", "rate_limits", "metadata"):
        console.print(f"{field}: {orjson.dumps(key.public()[field]).decode()}", markup=False, highlight=False)


@keys_app.command("revoke")
def keys_revoke(key_id: str, config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Revoke a key for good (every instance refuses it within access.cache_ttl_s)."""
    key = _run(config, lambda s: s.revoke_key(key_id, actor=ACTOR), change="keys revoke")
    if as_json:
        _echo_json(key.public())
        return
    console.print(f"key {key.id} revoked at {_ts(key.revoked_at)} UTC", markup=False, highlight=False)


@keys_app.command("rotate")
def keys_rotate(key_id: str, config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Give a key a new secret (printed once); the old one stops working."""
    key, secret = _run(config, lambda s: s.rotate_key(key_id, actor=ACTOR), change="keys rotate")
    _show_secret(key, secret, as_json)


def _team_out(teams: list[Any], as_json: bool) -> None:
    if as_json:
        for t in teams:
            _echo_json(t.model_dump(mode="json"))
        return
    table = Table(title="teams")
    for col in ("id", "name", "models", "mcp", "budgets", "rate limits", "created (UTC)"):
        table.add_column(col)
    for t in teams:
        d = t.model_dump(mode="json")
        table.add_row(
            t.id,
            t.name,
            ", ".join(t.models) or "all",
            ", ".join(t.mcp) or "all",
            orjson.dumps(d["budgets"]).decode(),
            orjson.dumps({k: v for k, v in d["rate_limits"].items() if v is not None}).decode(),
            _ts(t.created_at),
        )
    console.print(table)


@teams_app.command("create")
def teams_create(
    name: str,
    model: ModelOpt = None,
    mcp: McpOpt = None,
    budget: BudgetOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    concurrent: ConcurrentOpt = None,
    meta: MetaOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a team."""
    fields = _fields(model=model, mcp=mcp, budget=budget, rpm=rpm, tpm=tpm, concurrent=concurrent, meta=meta)
    team = _run(config, lambda s: s.create_team(name, actor=ACTOR, **fields), change="teams create")
    _team_out([team], as_json)


@teams_app.command("list")
def teams_list(config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """List teams, oldest first."""
    _team_out(_run(config, lambda s: s.list_teams()), as_json)


@teams_app.command("show")
def teams_show(team_id: str, config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Show one team (by id or name)."""
    _team_out([_run(config, lambda s: s.get_team(team_id))], as_json)


@teams_app.command("update")
def teams_update(
    team_id: str,
    name: Annotated[str | None, typer.Option(help="A new name.")] = None,
    model: ModelOpt = None,
    mcp: McpOpt = None,
    budget: BudgetOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    concurrent: ConcurrentOpt = None,
    meta: MetaOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a team: each option given replaces that field (rate limits: the ones given)."""

    async def go(store: Any) -> Any:
        old = await store.get_team(team_id)
        fields = _fields(
            model=model,
            mcp=mcp,
            budget=budget,
            rpm=rpm,
            tpm=tpm,
            concurrent=concurrent,
            meta=meta,
            old_limits=old.rate_limits.model_dump(),
        )
        if name is not None:
            fields["name"] = name
        return await store.update_team(old.id, fields, actor=ACTOR)

    _team_out([_run(config, go, change="teams update")], as_json)


@teams_app.command("delete")
def teams_delete(team_id: str, config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Delete a team that has no live keys."""
    team = _run(config, lambda s: s.delete_team(team_id, actor=ACTOR), change="teams delete")
    if as_json:
        _echo_json({"id": team.id, "deleted": True})
        return
    console.print(f"team {team.id} ({team.name}) deleted", markup=False, highlight=False)


def spend(
    group_by: Annotated[str, typer.Option("--group-by", help="key, team, model or deployment.")] = "key",
    days: Annotated[
        float | None, typer.Option(min=0, help="Only the last DAYS days (default: everything).")
    ] = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Spend from the transcript (the ledger), grouped, dearest first: turns, errors, tokens, USD."""
    from gateway.config import Settings, default_config_path, load_config
    from gateway.errors import ConfigError
    from gateway.ledger import GROUP_COLUMNS, spend_report, transcript_location

    if group_by not in GROUP_COLUMNS:
        raise _fail(f"--group-by must be one of {', '.join(GROUP_COLUMNS)}", 2)
    settings = Settings()
    try:
        cfg = load_config(config or settings.config or default_config_path())
    except ConfigError as err:
        raise _fail(err.message, 2) from err
    if settings.db_path is not None:
        cfg.server.db_path = str(settings.db_path)
    since = time.time() - days * 86400 if days is not None else None
    rows = spend_report(transcript_location(cfg), group_by, since)  # type: ignore[arg-type]
    if as_json:
        for r in rows:
            _echo_json(r)
        return
    table = Table(title=f"spend by {group_by}" + (f", last {days:g} days" if days is not None else ""))
    for col in (group_by, "turns", "errors", "input", "output", "cache read", "USD"):
        table.add_column(col, justify="left" if col == group_by else "right")
    for r in rows:
        table.add_row(
            str(r["group"] if r["group"] is not None else "(none)"),
            str(r["turns"]),
            str(r["errors"]),
            str(r["input_tokens"]),
            str(r["output_tokens"]),
            str(r["cache_read_tokens"]),
            f"{r['cost_usd']:.6f}",
        )
    console.print(table)
