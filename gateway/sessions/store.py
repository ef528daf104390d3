"""The session store: interface and the SQL logic both backends share.

:class:`SessionStore` is the interface the gateway uses (async). :class:`SqlSessionStore`
implements it once over a DB-API connection; :mod:`gateway.sessions.sqlite` and
:mod:`gateway.sessions.postgres` supply the connection, the parameter style and the row
locking. Each operation runs as one transaction in a worker thread (``asyncio.to_thread``), so
the event loop never blocks on the database; one store serialises its own transactions.

Invariants kept here and in the database:

* entries are only INSERTed (triggers reject UPDATE/DELETE, see :mod:`.migrations`);
* an entry's parent exists before it (foreign key), so a path from a leaf to the root is finite;
* the leaf pointer of a session is the only value that changes, and only together with the
  append that moves it (same transaction).

A fork is a new session whose leaf is an entry of another session; nothing is copied. Paths
follow ``parent_id`` across sessions, so the fork sees its source's history up to the fork
point and nothing the source appends later.
"""

from __future__ import annotations

import abc
import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from gateway.errors import ConfigError, InvalidRequest, TurnstileError
from gateway.sessions.migrations import MIGRATIONS, MIGRATIONS_TABLE, Migration
from gateway.sessions.model import Entry, SessionInfo, encode_payload, validate_payload

T = TypeVar("T")

LEAF = "__leaf__"
"""Sentinel ``parent_id`` for :meth:`SessionStore.append`: attach to the session's current leaf."""

_ENTRY_COLS = "e.seq, e.id, e.session_id, e.parent_id, e.type, e.created_at, e.payload"
_SESSION_COLS = (
    "s.id, s.created_at, s.leaf_id, s.forked_from_session, s.forked_from_entry, s.title, "
    "(SELECT COUNT(*) FROM session_entries c WHERE c.session_id = s.id)"
)


class SessionNotFound(TurnstileError):
    """A session or entry id that the store does not hold (HTTP 404)."""

    status = 404
    kind = "not_found"


def new_id() -> str:
    """A fresh entry / session id: 32 hex characters (uuid4)."""
    return uuid.uuid4().hex


class SessionStore(abc.ABC):
    """What the gateway needs from a session store. All methods may raise
    :class:`SessionNotFound` (unknown session or entry) or :class:`InvalidRequest`."""

    url: str

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and apply pending migrations."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the connection."""

    @abc.abstractmethod
    async def create_session(self, session_id: str | None = None, *, title: str | None = None) -> SessionInfo:
        """Create an empty session (id generated when None); an existing id is returned as is."""

    @abc.abstractmethod
    async def get_session(self, session_id: str) -> SessionInfo:
        """The session row. Raises :class:`SessionNotFound`."""

    @abc.abstractmethod
    async def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Sessions, newest first."""

    @abc.abstractmethod
    async def append_many(
        self,
        session_id: str,
        items: Sequence[tuple[str, BaseModel | dict[str, Any]]],
        *,
        parent_id: str | None = LEAF,
        create: bool = True,
    ) -> list[Entry]:
        """Append ``(type, payload)`` items as a chain in one transaction: the first item's
        parent is ``parent_id`` (default: the current leaf), each next item's parent is the
        previous one; the leaf moves to the last. ``create`` makes a missing session."""

    async def append(
        self,
        session_id: str,
        entry_type: str,
        payload: BaseModel | dict[str, Any],
        *,
        parent_id: str | None = LEAF,
        create: bool = True,
    ) -> Entry:
        """Append one entry (see :meth:`append_many`)."""
        return (
            await self.append_many(session_id, [(entry_type, payload)], parent_id=parent_id, create=create)
        )[0]

    @abc.abstractmethod
    async def entries(self, session_id: str) -> list[Entry]:
        """Entries stored in this session (not inherited through a fork), in append order."""

    @abc.abstractmethod
    async def get_entry(self, entry_id: str) -> Entry:
        """One entry. Raises :class:`SessionNotFound`."""

    @abc.abstractmethod
    async def path(self, session_id: str, leaf_id: str | None = None) -> list[Entry]:
        """Entries from the root to ``leaf_id`` (default: the session's leaf), root first."""

    @abc.abstractmethod
    async def set_leaf(self, session_id: str, entry_id: str) -> SessionInfo:
        """Move the leaf to an entry already on this session's tree (branching in place)."""

    @abc.abstractmethod
    async def fork(
        self,
        session_id: str,
        entry_id: str | None = None,
        *,
        new_session_id: str | None = None,
        title: str | None = None,
    ) -> SessionInfo:
        """A new session whose leaf is ``entry_id`` (default: the source's leaf)."""

    async def label(self, session_id: str, entry_id: str, label: str | None) -> Entry:
        """Append a ``label`` entry naming ``entry_id`` (which must exist)."""
        await self.get_entry(entry_id)
        return await self.append(session_id, "label", {"target_id": entry_id, "label": label}, create=False)


class SqlSessionStore(SessionStore):
    """:class:`SessionStore` over a DB-API connection; subclasses provide the connection."""

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

    def _lock_session(self, cur: Any, session_id: str) -> None:
        """Lock the session row for the rest of the transaction (PostgreSQL); SQLite's
        ``BEGIN IMMEDIATE`` already holds the write lock."""

    def _is_constraint_error(self, err: Exception) -> bool:
        return False

    # ------------------------------------------------------------------ plumbing

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _tx(self, fn: Callable[[Any], T]) -> T:
        with self._lock:
            if self._conn is None:
                raise TurnstileError("session store is not open")
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
        """Connect and apply pending migrations (raises :class:`ConfigError` if an applied
        migration's checksum differs from the code's)."""
        self._conn = await asyncio.to_thread(self._connect)
        await self._run(self._migrate)

    async def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.to_thread(conn.close)

    def _migrate(self, cur: Any) -> None:
        cur.execute(MIGRATIONS_TABLE[self.dialect])
        applied = {int(v): c for v, c in self._q(cur, "SELECT version, checksum FROM schema_migrations")}
        for m in MIGRATIONS[self.dialect]:
            self._apply(cur, m, applied.get(m.version))

    def _apply(self, cur: Any, m: Migration, recorded: str | None) -> None:
        if recorded is not None:
            if recorded != m.checksum:
                raise ConfigError(
                    f"session store {self.url}: migration {m.version} ({m.name}) was rewritten after it "
                    "was applied; migrations may only be added"
                )
            return
        for stmt in m.statements:
            cur.execute(stmt)
        self._q(
            cur,
            "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
            (m.version, m.name, m.checksum, time.time()),
        )

    # ------------------------------------------------------------------ reads

    @staticmethod
    def _entry(row: Sequence[Any]) -> Entry:
        import orjson

        seq, eid, sid, parent, etype, created, payload = row
        return Entry(
            id=eid,
            session_id=sid,
            parent_id=parent,
            type=etype,
            created_at=float(created),
            payload=orjson.loads(payload),
            seq=int(seq),
        )

    @staticmethod
    def _session(row: Sequence[Any]) -> SessionInfo:
        sid, created, leaf, f_s, f_e, title, count = row
        return SessionInfo(
            id=sid,
            created_at=float(created),
            leaf_id=leaf,
            forked_from_session=f_s,
            forked_from_entry=f_e,
            title=title,
            entry_count=int(count),
        )

    def _get_session(self, cur: Any, session_id: str) -> SessionInfo:
        rows = self._q(cur, f"SELECT {_SESSION_COLS} FROM sessions s WHERE s.id = ?", (session_id,))
        if not rows:
            raise SessionNotFound(f"no session {session_id!r}", param="session")
        return self._session(rows[0])

    def _get_entry(self, cur: Any, entry_id: str) -> Entry:
        rows = self._q(cur, f"SELECT {_ENTRY_COLS} FROM session_entries e WHERE e.id = ?", (entry_id,))
        if not rows:
            raise SessionNotFound(f"no entry {entry_id!r}", param="entry")
        return self._entry(rows[0])

    def _path(self, cur: Any, leaf_id: str) -> list[Entry]:
        rows = self._q(
            cur,
            f"""
            WITH RECURSIVE p(id, parent_id, depth) AS (
                SELECT id, parent_id, 0 FROM session_entries WHERE id = ?
                UNION ALL
                SELECT e.id, e.parent_id, p.depth + 1 FROM session_entries e JOIN p ON e.id = p.parent_id
            )
            SELECT {_ENTRY_COLS} FROM session_entries e JOIN p ON e.id = p.id ORDER BY p.depth DESC""",
            (leaf_id,),
        )
        return [self._entry(r) for r in rows]

    def _on_tree(self, cur: Any, session: SessionInfo, entry_id: str) -> bool:
        entry = self._get_entry(cur, entry_id)
        if entry.session_id == session.id:
            return True
        if session.forked_from_entry is None:
            return False
        return any(e.id == entry_id for e in self._path(cur, session.forked_from_entry))

    async def get_session(self, session_id: str) -> SessionInfo:
        return await self._run(lambda cur: self._get_session(cur, session_id))

    async def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        def go(cur: Any) -> list[SessionInfo]:
            rows = self._q(
                cur,
                f"SELECT {_SESSION_COLS} FROM sessions s ORDER BY s.created_at DESC, s.id LIMIT ? OFFSET ?",
                (int(limit), int(offset)),
            )
            return [self._session(r) for r in rows]

        return await self._run(go)

    async def entries(self, session_id: str) -> list[Entry]:
        def go(cur: Any) -> list[Entry]:
            self._get_session(cur, session_id)
            rows = self._q(
                cur,
                f"SELECT {_ENTRY_COLS} FROM session_entries e WHERE e.session_id = ? ORDER BY e.seq",
                (session_id,),
            )
            return [self._entry(r) for r in rows]

        return await self._run(go)

    async def get_entry(self, entry_id: str) -> Entry:
        return await self._run(lambda cur: self._get_entry(cur, entry_id))

    async def path(self, session_id: str, leaf_id: str | None = None) -> list[Entry]:
        def go(cur: Any) -> list[Entry]:
            session = self._get_session(cur, session_id)
            leaf = leaf_id or session.leaf_id
            if leaf is None:
                return []
            if leaf_id is not None and not self._on_tree(cur, session, leaf_id):
                raise InvalidRequest(f"entry {leaf_id!r} is not in session {session_id!r}", param="entry")
            return self._path(cur, leaf)

        return await self._run(go)

    # ------------------------------------------------------------------ writes

    def _create(
        self,
        cur: Any,
        session_id: str,
        title: str | None,
        leaf: str | None = None,
        f_s: str | None = None,
        f_e: str | None = None,
    ) -> None:
        self._q(
            cur,
            "INSERT INTO sessions (id, created_at, leaf_id, forked_from_session, forked_from_entry, "
            "title) VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, time.time(), leaf, f_s, f_e, title),
        )

    async def create_session(self, session_id: str | None = None, *, title: str | None = None) -> SessionInfo:
        sid = session_id or new_id()

        def go(cur: Any) -> SessionInfo:
            rows = self._q(cur, "SELECT id FROM sessions WHERE id = ?", (sid,))
            if not rows:
                self._create(cur, sid, title)
            return self._get_session(cur, sid)

        return await self._run(go)

    async def append_many(
        self,
        session_id: str,
        items: Sequence[tuple[str, BaseModel | dict[str, Any]]],
        *,
        parent_id: str | None = LEAF,
        create: bool = True,
    ) -> list[Entry]:
        checked = [(t, encode_payload(validate_payload(t, p))) for t, p in items]
        _check_session_id(session_id)

        def go(cur: Any) -> list[Entry]:
            if create:
                self._q(
                    cur,
                    "INSERT INTO sessions (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                    (session_id, time.time()),
                )
            self._lock_session(cur, session_id)
            rows = self._q(cur, "SELECT leaf_id FROM sessions WHERE id = ?", (session_id,))
            if not rows:
                raise SessionNotFound(f"no session {session_id!r}", param="session")
            leaf = rows[0][0]
            parent = leaf if parent_id == LEAF else parent_id
            if parent is not None and parent != leaf:
                session = self._get_session(cur, session_id)
                if not self._on_tree(cur, session, parent):
                    raise InvalidRequest(
                        f"entry {parent!r} is not in session {session_id!r}", param="parent_id"
                    )
            out: list[Entry] = []
            now = time.time()
            for etype, payload in checked:
                eid = new_id()
                self._q(
                    cur,
                    "INSERT INTO session_entries (id, session_id, parent_id, type, created_at, payload) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (eid, session_id, parent, etype, now, payload),
                )
                out.append(self._get_entry(cur, eid))
                parent = eid
            if out:
                self._q(cur, "UPDATE sessions SET leaf_id = ? WHERE id = ?", (parent, session_id))
            return out

        return await self._run(go)

    async def set_leaf(self, session_id: str, entry_id: str) -> SessionInfo:
        def go(cur: Any) -> SessionInfo:
            self._lock_session(cur, session_id)
            session = self._get_session(cur, session_id)
            if not self._on_tree(cur, session, entry_id):
                raise InvalidRequest(f"entry {entry_id!r} is not in session {session_id!r}", param="entry")
            self._q(cur, "UPDATE sessions SET leaf_id = ? WHERE id = ?", (entry_id, session_id))
            return self._get_session(cur, session_id)

        return await self._run(go)

    async def fork(
        self,
        session_id: str,
        entry_id: str | None = None,
        *,
        new_session_id: str | None = None,
        title: str | None = None,
    ) -> SessionInfo:
        sid = new_session_id or new_id()
        _check_session_id(sid)

        def go(cur: Any) -> SessionInfo:
            source = self._get_session(cur, session_id)
            at = entry_id or source.leaf_id
            if at is not None and not self._on_tree(cur, source, at):
                raise InvalidRequest(f"entry {at!r} is not in session {session_id!r}", param="entry")
            if self._q(cur, "SELECT id FROM sessions WHERE id = ?", (sid,)):
                raise InvalidRequest(f"session {sid!r} already exists", param="session")
            self._create(cur, sid, title, leaf=at, f_s=session_id, f_e=at)
            return self._get_session(cur, sid)

        return await self._run(go)


def _check_session_id(session_id: str) -> None:
    if not session_id or len(session_id) > 200 or not session_id.isprintable():
        raise InvalidRequest("a session id is 1-200 printable characters", param="session")


def open_store_sync_url(url: str) -> SqlSessionStore:
    """A store object (not yet opened) for ``url``: ``postgresql://...``/``postgres://...`` for
    PostgreSQL, ``sqlite:///path``, ``sqlite://:memory:`` or a plain file path for SQLite."""
    if url.startswith(("postgresql://", "postgres://")):
        from gateway.sessions.postgres import PostgresSessionStore

        return PostgresSessionStore(url)
    from gateway.sessions.sqlite import SqliteSessionStore

    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SqliteSessionStore(path or ":memory:")


async def open_store(url: str) -> SqlSessionStore:
    """Open (and migrate) the store at ``url`` (see :func:`open_store_sync_url`)."""
    store = open_store_sync_url(url)
    await store.open()
    return store
