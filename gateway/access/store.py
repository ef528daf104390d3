"""The access store: virtual keys, teams and the access audit, over SQL.

:class:`AccessStore` is the interface (async); :class:`SqlAccessStore` implements it once over
a DB-API connection; :mod:`gateway.access.sqlite` and :mod:`gateway.access.postgres` supply
the connection and the parameter style. As in the session store, each operation is one
transaction in a worker thread, so the event loop never waits on the database, and one store
serialises its own transactions.

Every change to a key or a team writes its audit event in the same transaction (an audit line
exists exactly when the change does). Keys are never deleted: a revoked key keeps its row (and
its id on transcript rows); a deleted team is marked deleted, and only when no live key
(not revoked) belongs to it.
"""

from __future__ import annotations

import abc
import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson
from pydantic import ValidationError

from gateway.access.keygen import digest, new_id, new_secret, prefix
from gateway.access.migrations import MIGRATIONS, MIGRATIONS_TABLE
from gateway.access.model import AuditEvent, Key, Limits, Team
from gateway.errors import ConfigError, InvalidRequest, TurnstileError

T = TypeVar("T")


class AccessNotFound(TurnstileError):
    """No key or team with that id (HTTP 404)."""

    status = 404
    kind = "not_found"


class AccessConflict(TurnstileError):
    """The change contradicts what is stored (HTTP 409): a team name already used, a team
    that still has live keys, a change to a revoked key."""

    status = 409
    kind = "invalid_request"


_LIMIT_FIELDS = ("models", "mcp", "budgets", "rate_limits", "metadata")
KEY_FIELDS = frozenset({"name", "team_id", "expires_at", "enabled", *_LIMIT_FIELDS})
"""What a key update may change."""
TEAM_FIELDS = frozenset({"name", *_LIMIT_FIELDS})
"""What a team update may change."""

_TEAM_COLS = "id, name, models, mcp, budgets, rate_limits, metadata, created_at, updated_at"
_KEY_COLS = (
    "id, name, prefix, hash, team_id, models, mcp, budgets, rate_limits, metadata, "
    "expires_at, enabled, created_at, updated_at, revoked_at"
)


def _js(value: Any) -> str:
    return orjson.dumps(value).decode()


def _invalid(err: ValidationError, what: str) -> InvalidRequest:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or what
    return InvalidRequest(f"{what}: {loc}: {first['msg']}", param=loc)


class AccessStore(abc.ABC):
    """What the gateway needs from an access store. Methods raise :class:`AccessNotFound`,
    :class:`AccessConflict` or :class:`InvalidRequest` (a field that does not validate,
    naming it); ``actor`` is who makes the change, for the audit (``admin-api``, ``cli``)."""

    url: str

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and apply pending migrations."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the connection."""

    @abc.abstractmethod
    async def create_key(
        self, name: str, *, actor: str, team_id: str | None = None, **fields: Any
    ) -> tuple[Key, str]:
        """A new key named ``name`` (``fields``: any of :data:`KEY_FIELDS`) and its secret,
        which is never stored and never shown again."""

    @abc.abstractmethod
    async def get_key(self, key_id: str) -> Key:
        """The key with ``key_id``."""

    @abc.abstractmethod
    async def list_keys(self, team_id: str | None = None) -> list[Key]:
        """Every key (of ``team_id``, when given), oldest first, revoked ones included."""

    @abc.abstractmethod
    async def update_key(self, key_id: str, changes: dict[str, Any], *, actor: str) -> Key:
        """The key with ``changes`` (:data:`KEY_FIELDS`) applied."""

    @abc.abstractmethod
    async def revoke_key(self, key_id: str, *, actor: str) -> Key:
        """Revoke the key for good (again: unchanged)."""

    @abc.abstractmethod
    async def rotate_key(self, key_id: str, *, actor: str) -> tuple[Key, str]:
        """A new secret for the key (same id, limits and team); the old secret stops working."""

    @abc.abstractmethod
    async def lookup(self, key_hash: str) -> tuple[Key, Team | None] | None:
        """The key whose secret hashes to ``key_hash`` and its team, or None."""

    @abc.abstractmethod
    async def create_team(self, name: str, *, actor: str, **fields: Any) -> Team:
        """A new team (``fields``: any of :data:`TEAM_FIELDS` but ``name``)."""

    @abc.abstractmethod
    async def get_team(self, team_id: str) -> Team:
        """The (not deleted) team with ``team_id`` or, failing that, that name."""

    @abc.abstractmethod
    async def list_teams(self) -> list[Team]:
        """Every team not deleted, oldest first."""

    @abc.abstractmethod
    async def update_team(self, team_id: str, changes: dict[str, Any], *, actor: str) -> Team:
        """The team with ``changes`` (:data:`TEAM_FIELDS`) applied."""

    @abc.abstractmethod
    async def delete_team(self, team_id: str, *, actor: str) -> Team:
        """Delete the team; refused (:class:`AccessConflict`) while a live key belongs to it."""

    @abc.abstractmethod
    async def audit(self, event: AuditEvent) -> None:
        """Append ``event`` to the audit (denials; changes write theirs themselves)."""

    @abc.abstractmethod
    async def audit_events(self, limit: int = 100) -> list[AuditEvent]:
        """The ``limit`` most recent audit events, newest first."""


class SqlAccessStore(AccessStore):
    """:class:`AccessStore` over a DB-API connection; subclasses provide the connection."""

    dialect: str = "sqlite"
    placeholder: str = "?"

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: Any = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ backend hooks

    @abc.abstractmethod
    def _connect(self) -> Any:
        """Open the DB-API connection (autocommit mode; transactions are explicit)."""

    @abc.abstractmethod
    def _begin(self, cur: Any) -> None:
        """Start a write transaction."""

    def _lock_migrations(self, cur: Any) -> None:
        """Serialise concurrent migrators (PostgreSQL's advisory lock; SQLite's write lock)."""

    def _bool(self, value: bool) -> Any:
        return int(value) if self.dialect == "sqlite" else value

    # ------------------------------------------------------------------ plumbing

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _tx(self, fn: Callable[[Any], T]) -> T:
        with self._lock:
            if self._conn is None:
                raise TurnstileError("access store is not open")
            cur = self._conn.cursor()
            self._begin(cur)
            try:
                result = fn(cur)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")
            return result

    async def _run(self, fn: Callable[[Any], T]) -> T:
        return await asyncio.to_thread(self._tx, fn)

    def _q(self, cur: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur.execute(self._sql(sql), tuple(params))
        return list(cur.fetchall()) if cur.description is not None else []

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Connect and apply pending migrations (raises :class:`ConfigError` when an applied
        migration's checksum differs from the code's)."""
        self._conn = await asyncio.to_thread(self._connect)
        try:
            await self._run(self._migrate)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.to_thread(conn.close)

    def _migrate(self, cur: Any) -> None:
        self._lock_migrations(cur)
        cur.execute(MIGRATIONS_TABLE[self.dialect])
        applied = {int(v): c for v, c in self._q(cur, "SELECT version, checksum FROM access_migrations")}
        for m in MIGRATIONS[self.dialect]:
            recorded = applied.get(m.version)
            if recorded is not None:
                if recorded != m.checksum:
                    raise ConfigError(
                        f"access store {self.url}: migration {m.version} ({m.name}) was rewritten "
                        "after it was applied; migrations may only be added"
                    )
                continue
            for stmt in m.statements:
                cur.execute(stmt)
            self._q(
                cur,
                "INSERT INTO access_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                (m.version, m.name, m.checksum, time.time()),
            )

    # ------------------------------------------------------------------ rows

    def _team(self, row: Sequence[Any]) -> Team:
        return Team(
            id=row[0],
            name=row[1],
            models=orjson.loads(row[2]),
            mcp=orjson.loads(row[3]),
            budgets=orjson.loads(row[4]),
            rate_limits=orjson.loads(row[5]),
            metadata=orjson.loads(row[6]),
            created_at=row[7],
            updated_at=row[8],
        )

    def _key(self, row: Sequence[Any]) -> Key:
        return Key(
            id=row[0],
            name=row[1],
            prefix=row[2],
            hash=row[3],
            team_id=row[4],
            models=orjson.loads(row[5]),
            mcp=orjson.loads(row[6]),
            budgets=orjson.loads(row[7]),
            rate_limits=orjson.loads(row[8]),
            metadata=orjson.loads(row[9]),
            expires_at=row[10],
            enabled=bool(row[11]),
            created_at=row[12],
            updated_at=row[13],
            revoked_at=row[14],
        )

    @staticmethod
    def _limits(obj: Limits) -> tuple[str, str, str, str, str]:
        d = obj.model_dump(mode="json")
        return (_js(d["models"]), _js(d["mcp"]), _js(d["budgets"]), _js(d["rate_limits"]), _js(d["metadata"]))

    def _get_team(self, cur: Any, team_id: str) -> Team:
        rows = self._q(
            cur, f"SELECT {_TEAM_COLS} FROM access_teams WHERE id = ? AND deleted_at IS NULL", (team_id,)
        )
        if not rows:
            rows = self._q(
                cur,
                f"SELECT {_TEAM_COLS} FROM access_teams WHERE name = ? AND deleted_at IS NULL",
                (team_id,),
            )
        if not rows:
            raise AccessNotFound(f"no team {team_id!r}", param="team")
        return self._team(rows[0])

    def _get_key(self, cur: Any, key_id: str) -> Key:
        rows = self._q(cur, f"SELECT {_KEY_COLS} FROM access_keys WHERE id = ?", (key_id,))
        if not rows:
            raise AccessNotFound(f"no key {key_id!r}", param="key")
        return self._key(rows[0])

    def _audit(self, cur: Any, event: AuditEvent) -> None:
        self._q(
            cur,
            "INSERT INTO access_audit (ts, action, actor, target, reason, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (event.ts, event.action, event.actor, event.target, event.reason, _js(event.detail)),
        )

    def _name_free(self, cur: Any, name: str, but: str | None = None) -> None:
        rows = self._q(cur, "SELECT id FROM access_teams WHERE name = ? AND deleted_at IS NULL", (name,))
        if rows and rows[0][0] != but:
            raise AccessConflict(f"a team named {name!r} exists already ({rows[0][0]})", param="name")

    # ------------------------------------------------------------------ keys

    def _write_key(self, cur: Any, key: Key, *, insert: bool) -> None:
        values = (
            key.name,
            key.prefix,
            key.hash,
            key.team_id,
            *self._limits(key),
            key.expires_at,
            self._bool(key.enabled),
            key.created_at,
            key.updated_at,
            key.revoked_at,
        )
        if insert:
            self._q(
                cur,
                f"INSERT INTO access_keys ({_KEY_COLS}) VALUES ({', '.join('?' * 15)})",
                (key.id, *values),
            )
        else:
            cols = _KEY_COLS.split(", ")[1:]
            sets = ", ".join(f"{c} = ?" for c in cols)
            self._q(cur, f"UPDATE access_keys SET {sets} WHERE id = ?", (*values, key.id))

    async def create_key(
        self, name: str, *, actor: str, team_id: str | None = None, **fields: Any
    ) -> tuple[Key, str]:
        unknown = set(fields) - KEY_FIELDS
        if unknown:
            raise InvalidRequest(
                f"unknown key field(s): {', '.join(sorted(unknown))}", param=sorted(unknown)[0]
            )
        secret = new_secret()
        now = time.time()
        try:
            key = Key(
                id=new_id("key"),
                name=name,
                prefix=prefix(secret),
                hash=digest(secret),
                team_id=team_id,
                created_at=now,
                updated_at=now,
                **fields,
            )
        except ValidationError as err:
            raise _invalid(err, "key") from err

        def go(cur: Any) -> Key:
            if key.team_id is not None:
                key.team_id = self._get_team(cur, key.team_id).id  # a name is accepted too
            self._write_key(cur, key, insert=True)
            self._audit(
                cur,
                AuditEvent(ts=now, action="key.created", actor=actor, target=key.id, detail=_shown(key)),
            )
            return key

        return await self._run(go), secret

    async def get_key(self, key_id: str) -> Key:
        return await self._run(lambda cur: self._get_key(cur, key_id))

    async def list_keys(self, team_id: str | None = None) -> list[Key]:
        def go(cur: Any) -> list[Key]:
            if team_id is None:
                rows = self._q(cur, f"SELECT {_KEY_COLS} FROM access_keys ORDER BY created_at, id")
            else:
                tid = self._get_team(cur, team_id).id
                rows = self._q(
                    cur,
                    f"SELECT {_KEY_COLS} FROM access_keys WHERE team_id = ? ORDER BY created_at, id",
                    (tid,),
                )
            return [self._key(r) for r in rows]

        return await self._run(go)

    async def update_key(self, key_id: str, changes: dict[str, Any], *, actor: str) -> Key:
        unknown = set(changes) - KEY_FIELDS
        if unknown:
            raise InvalidRequest(
                f"unknown or read-only key field(s): {', '.join(sorted(unknown))}", param=sorted(unknown)[0]
            )

        def go(cur: Any) -> Key:
            old = self._get_key(cur, key_id)
            if old.revoked_at is not None:
                raise AccessConflict(f"key {key_id!r} is revoked; it cannot change", param="key")
            try:
                new = Key.model_validate({**old.model_dump(), **changes, "updated_at": time.time()})
            except ValidationError as err:
                raise _invalid(err, "key") from err
            if new.team_id is not None and new.team_id != old.team_id:
                new.team_id = self._get_team(cur, new.team_id).id
            self._write_key(cur, new, insert=False)
            self._audit(
                cur,
                AuditEvent(
                    ts=new.updated_at,
                    action="key.changed",
                    actor=actor,
                    target=key_id,
                    detail=_diff(old, new),
                ),
            )
            return new

        return await self._run(go)

    async def revoke_key(self, key_id: str, *, actor: str) -> Key:
        def go(cur: Any) -> Key:
            key = self._get_key(cur, key_id)
            if key.revoked_at is not None:
                return key
            now = time.time()
            key = key.model_copy(update={"revoked_at": now, "updated_at": now})
            self._write_key(cur, key, insert=False)
            self._audit(cur, AuditEvent(ts=now, action="key.revoked", actor=actor, target=key_id))
            return key

        return await self._run(go)

    async def rotate_key(self, key_id: str, *, actor: str) -> tuple[Key, str]:
        secret = new_secret()

        def go(cur: Any) -> Key:
            key = self._get_key(cur, key_id)
            if key.revoked_at is not None:
                raise AccessConflict(f"key {key_id!r} is revoked; it cannot be rotated", param="key")
            now = time.time()
            old_prefix = key.prefix
            key = key.model_copy(update={"prefix": prefix(secret), "hash": digest(secret), "updated_at": now})
            self._write_key(cur, key, insert=False)
            self._audit(
                cur,
                AuditEvent(
                    ts=now,
                    action="key.rotated",
                    actor=actor,
                    target=key_id,
                    detail={"old_prefix": old_prefix, "prefix": key.prefix},
                ),
            )
            return key

        return await self._run(go), secret

    async def lookup(self, key_hash: str) -> tuple[Key, Team | None] | None:
        def go(cur: Any) -> tuple[Key, Team | None] | None:
            rows = self._q(cur, f"SELECT {_KEY_COLS} FROM access_keys WHERE hash = ?", (key_hash,))
            if not rows:
                return None
            key = self._key(rows[0])
            if key.team_id is None:
                return key, None
            teams = self._q(cur, f"SELECT {_TEAM_COLS} FROM access_teams WHERE id = ?", (key.team_id,))
            return key, (self._team(teams[0]) if teams else None)

        return await self._run(go)

    # ------------------------------------------------------------------ teams

    def _write_team(self, cur: Any, team: Team, *, insert: bool) -> None:
        values = (team.name, *self._limits(team), team.created_at, team.updated_at)
        if insert:
            self._q(
                cur,
                f"INSERT INTO access_teams ({_TEAM_COLS}) VALUES ({', '.join('?' * 9)})",
                (team.id, *values),
            )
        else:
            cols = _TEAM_COLS.split(", ")[1:]
            sets = ", ".join(f"{c} = ?" for c in cols)
            self._q(cur, f"UPDATE access_teams SET {sets} WHERE id = ?", (*values, team.id))

    async def create_team(self, name: str, *, actor: str, **fields: Any) -> Team:
        unknown = set(fields) - (TEAM_FIELDS - {"name"})
        if unknown:
            raise InvalidRequest(
                f"unknown team field(s): {', '.join(sorted(unknown))}", param=sorted(unknown)[0]
            )
        now = time.time()
        try:
            team = Team(id=new_id("team"), name=name, created_at=now, updated_at=now, **fields)
        except ValidationError as err:
            raise _invalid(err, "team") from err

        def go(cur: Any) -> Team:
            self._name_free(cur, team.name)
            self._write_team(cur, team, insert=True)
            self._audit(
                cur,
                AuditEvent(ts=now, action="team.created", actor=actor, target=team.id, detail=_shown(team)),
            )
            return team

        return await self._run(go)

    async def get_team(self, team_id: str) -> Team:
        return await self._run(lambda cur: self._get_team(cur, team_id))

    async def list_teams(self) -> list[Team]:
        def go(cur: Any) -> list[Team]:
            rows = self._q(
                cur, f"SELECT {_TEAM_COLS} FROM access_teams WHERE deleted_at IS NULL ORDER BY created_at, id"
            )
            return [self._team(r) for r in rows]

        return await self._run(go)

    async def update_team(self, team_id: str, changes: dict[str, Any], *, actor: str) -> Team:
        unknown = set(changes) - TEAM_FIELDS
        if unknown:
            raise InvalidRequest(
                f"unknown or read-only team field(s): {', '.join(sorted(unknown))}", param=sorted(unknown)[0]
            )

        def go(cur: Any) -> Team:
            old = self._get_team(cur, team_id)
            try:
                new = Team.model_validate({**old.model_dump(), **changes, "updated_at": time.time()})
            except ValidationError as err:
                raise _invalid(err, "team") from err
            if new.name != old.name:
                self._name_free(cur, new.name, but=old.id)
            self._write_team(cur, new, insert=False)
            self._audit(
                cur,
                AuditEvent(
                    ts=new.updated_at,
                    action="team.changed",
                    actor=actor,
                    target=old.id,
                    detail=_diff(old, new),
                ),
            )
            return new

        return await self._run(go)

    async def delete_team(self, team_id: str, *, actor: str) -> Team:
        def go(cur: Any) -> Team:
            team = self._get_team(cur, team_id)
            live = self._q(
                cur,
                "SELECT id FROM access_keys WHERE team_id = ? AND revoked_at IS NULL ORDER BY id",
                (team.id,),
            )
            if live:
                raise AccessConflict(
                    f"team {team.id!r} still has {len(live)} live key(s) "
                    f"({', '.join(r[0] for r in live[:5])}); revoke them or move them to another team first",
                    param="team",
                )
            now = time.time()
            self._q(
                cur,
                "UPDATE access_teams SET deleted_at = ?, updated_at = ? WHERE id = ?",
                (now, now, team.id),
            )
            self._audit(cur, AuditEvent(ts=now, action="team.deleted", actor=actor, target=team.id))
            return team

        return await self._run(go)

    # ------------------------------------------------------------------ audit

    async def audit(self, event: AuditEvent) -> None:
        await self._run(lambda cur: self._audit(cur, event))

    async def audit_events(self, limit: int = 100) -> list[AuditEvent]:
        def go(cur: Any) -> list[AuditEvent]:
            rows = self._q(
                cur,
                "SELECT seq, ts, action, actor, target, reason, detail FROM access_audit "
                "ORDER BY seq DESC LIMIT ?",
                (int(limit),),
            )
            return [
                AuditEvent(
                    seq=r[0],
                    ts=r[1],
                    action=r[2],
                    actor=r[3],
                    target=r[4],
                    reason=r[5],
                    detail=orjson.loads(r[6]),
                )
                for r in rows
            ]

        return await self._run(go)


def _shown(obj: Key | Team) -> dict[str, Any]:
    """What the audit records of a new key or team: its fields without the hash."""
    return obj.model_dump(mode="json", exclude={"hash", "created_at", "updated_at"})


def _diff(old: Key | Team, new: Key | Team) -> dict[str, Any]:
    """``{field: {"from": old, "to": new}}`` for every field that changed (not the hash)."""
    a = old.model_dump(mode="json", exclude={"hash", "updated_at"})
    b = new.model_dump(mode="json", exclude={"hash", "updated_at"})
    return {k: {"from": a[k], "to": b[k]} for k in b if a.get(k) != b[k]}
