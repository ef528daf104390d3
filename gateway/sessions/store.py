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
  append that moves it (same transaction); triggers reject any other UPDATE of a session row,
  DELETE of sessions, and ``INSERT OR REPLACE`` / upserts over existing rows.

Concurrent turns on one session (one gateway or several sharing the database). A turn reads
the leaf once, then appends every entry of its own under the entry it appended last (its
*turn leaf*), never under "whatever the leaf is now": a turn's user message and its answer
stay parent and child. Its question and tool-loop steps never move the session leaf
(:data:`KEEP_LEAF`); its answer moves it by compare-and-set against the leaf the turn read,
inside the append's transaction, with the session row locked (``SELECT ... FOR UPDATE`` on
PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite)::

    UPDATE sessions SET leaf_id = <new> WHERE id = <session> AND leaf_id IS <expected>

When another turn's answer moved the leaf meanwhile, the UPDATE matches no row: the turn's
entries stay in the session as a branch (readable with ``path(session, leaf)``) and the leaf
stays where the other turn put it. The database decides, so this holds across gateway
instances. Turns are deliberately not serialised: that would hold a lock across upstream
model calls. (The rule a turn follows is :mod:`gateway.sessions.turns`'.)

A fork is a new session whose leaf is an entry of another session; nothing is copied. Paths
follow ``parent_id`` across sessions, so the fork sees its source's history up to the fork
point and nothing the source appends later.
"""

from __future__ import annotations

import abc
import asyncio
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from gateway.errors import ConfigError, InvalidRequest, TurnstileError
from gateway.sessions.migrations import MIGRATIONS, MIGRATIONS_TABLE, Migration
from gateway.sessions.model import ANONYMOUS, Entry, Owner, SessionInfo, encode_payload, validate_payload

T = TypeVar("T")

LEAF = "__leaf__"
"""Sentinel ``parent_id`` for :meth:`SessionStore.append`: attach to the session's current leaf."""

ANY_LEAF = "__any_leaf__"
"""Sentinel ``expect_leaf``: move the session leaf whatever it is (no compare-and-set)."""

KEEP_LEAF = "__keep_leaf__"
"""Sentinel ``expect_leaf``: never move the session leaf (a turn's question and tool-loop steps,
which stay a branch until its answer moves the leaf)."""

ANY_OWNER = "__any_owner__"
"""Sentinel of :meth:`SessionStore.list_sessions`' ``key_id`` / ``team_id``: no filter."""

SESSION_ID_PATTERN = r"[A-Za-z0-9._:-]{1,200}"
"""Session ids the store creates: 1-200 of ``A-Z a-z 0-9 . _ : -`` (not ``.`` or ``..``), so
that every id is addressable as one path segment of ``/v1/sessions/{id}``."""
_SESSION_ID = re.compile(SESSION_ID_PATTERN)


class StoreMissing(TurnstileError):
    """A read-only open found no session store at the URL (no file / no tables yet)."""

    status = 404
    kind = "not_found"


def check_session_id(session_id: object, param: str = "session") -> str:
    """``session_id`` if it is a valid id to create (see :data:`SESSION_ID_PATTERN`), else raises
    :class:`InvalidRequest` naming ``param``."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id) or session_id in (".", ".."):
        shown = (
            repr(session_id)
            if not isinstance(session_id, str) or len(session_id) <= 60
            else (f"{session_id[:60]!r}... ({len(session_id)} characters)")
        )
        raise InvalidRequest(
            f"invalid session id {shown}: a session id is 1-200 characters of A-Z, a-z, 0-9, "
            "'.', '_', ':' and '-' (not '.' or '..')",
            param=param,
        )
    return session_id


_ENTRY_COLS = "e.seq, e.id, e.session_id, e.parent_id, e.type, e.created_at, e.payload"
_SESSION_COLS = (
    "s.id, s.created_at, s.leaf_id, s.forked_from_session, s.forked_from_entry, s.title, "
    "(SELECT COUNT(*) FROM session_entries c WHERE c.session_id = s.id), s.owner_key, s.owner_team"
)
_SESSION_COLS_BEFORE_OWNERS = _SESSION_COLS.replace("s.owner_key, s.owner_team", "NULL, NULL")
"""The columns read from a store opened read-only before its migration 3 (no owners yet)."""


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
    async def create_session(
        self, session_id: str | None = None, *, title: str | None = None, owner: Owner = ANONYMOUS
    ) -> SessionInfo:
        """Create an empty session owned by ``owner`` (id generated when None); an existing id
        is returned as is, with its own owner (the caller compares)."""

    @abc.abstractmethod
    async def get_session(self, session_id: str) -> SessionInfo:
        """The session row. Raises :class:`SessionNotFound`."""

    @abc.abstractmethod
    async def list_sessions(
        self,
        limit: int = 50,
        offset: int = 0,
        *,
        key_id: str | None = ANY_OWNER,
        team_id: str | None = ANY_OWNER,
    ) -> list[SessionInfo]:
        """Sessions, newest first; only those whose owner key is ``key_id`` (None: anonymous
        callers' sessions) and owner team ``team_id``, unless :data:`ANY_OWNER`."""

    @abc.abstractmethod
    async def append_at(
        self,
        session_id: str,
        items: Sequence[tuple[str, BaseModel | dict[str, Any]]],
        *,
        parent_id: str | None = LEAF,
        expect_leaf: str | None = ANY_LEAF,
        create: bool = True,
    ) -> tuple[list[Entry], bool]:
        """Append ``(type, payload)`` items as a chain in one transaction: the first item's
        parent is ``parent_id`` (default: the current leaf), each next item's parent is the
        previous one. The session leaf moves to the last item when ``expect_leaf`` is
        :data:`ANY_LEAF` or equals the leaf at commit time (compare-and-set; None = no leaf);
        otherwise (and always with :data:`KEEP_LEAF`) the items stay as a branch. Returns
        ``(entries, leaf_moved)``. ``create`` makes a missing session. Raises
        :class:`SessionNotFound`, :class:`InvalidRequest` (bad id, parent not on the session's
        tree) and ``ValueError`` (bad payload)."""

    async def append_many(
        self,
        session_id: str,
        items: Sequence[tuple[str, BaseModel | dict[str, Any]]],
        *,
        parent_id: str | None = LEAF,
        expect_leaf: str | None = ANY_LEAF,
        create: bool = True,
    ) -> list[Entry]:
        """:meth:`append_at` without the ``leaf_moved`` flag."""
        entries, _ = await self.append_at(
            session_id, items, parent_id=parent_id, expect_leaf=expect_leaf, create=create
        )
        return entries

    async def append(
        self,
        session_id: str,
        entry_type: str,
        payload: BaseModel | dict[str, Any],
        *,
        parent_id: str | None = LEAF,
        expect_leaf: str | None = ANY_LEAF,
        create: bool = True,
    ) -> Entry:
        """Append one entry (see :meth:`append_at`)."""
        entries = await self.append_many(
            session_id, [(entry_type, payload)], parent_id=parent_id, expect_leaf=expect_leaf, create=create
        )
        return entries[0]

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
        owner: Owner = ANONYMOUS,
    ) -> SessionInfo:
        """A new session owned by ``owner`` whose leaf is ``entry_id`` (default: the source's
        leaf)."""

    @abc.abstractmethod
    async def label(self, session_id: str, entry_id: str, label: str | None) -> Entry:
        """Append a ``label`` entry naming ``entry_id``, which must be on the session's tree
        (its own entries or, for a fork, its source's up to the fork point). Raises
        :class:`SessionNotFound` naming the session or the entry."""


class SqlSessionStore(SessionStore):
    """:class:`SessionStore` over a DB-API connection; subclasses provide the connection."""

    dialect: str = "sqlite"
    placeholder: str = "?"
    null_safe_eq: str = "IS"
    """SQL operator comparing two values with NULL equal to NULL."""

    def __init__(self, url: str, *, readonly: bool = False) -> None:
        self.url = url
        self.readonly = readonly
        self._conn: Any = None
        self._lock = threading.Lock()
        self._session_cols = _SESSION_COLS

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
        migration's checksum differs from the code's). A ``readonly`` store applies nothing:
        it raises :class:`StoreMissing` when the database holds no session tables."""
        self._conn = await asyncio.to_thread(self._connect)
        try:
            await self._run(self._check_schema if self.readonly else self._migrate)
        except BaseException:
            await self.close()
            raise

    def _has_table(self, cur: Any, name: str) -> bool:
        return bool(self._q(cur, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))

    def _check_schema(self, cur: Any) -> None:
        if not (self._has_table(cur, "schema_migrations") and self._has_table(cur, "sessions")):
            raise StoreMissing(f"no sessions at {self.url} yet")
        applied = {int(v): c for v, c in self._q(cur, "SELECT version, checksum FROM schema_migrations")}
        for m in MIGRATIONS[self.dialect]:
            if m.version in applied and applied[m.version] != m.checksum:
                raise ConfigError(
                    f"session store {self.url}: migration {m.version} ({m.name}) was rewritten after it "
                    "was applied; migrations may only be added"
                )
        cur.execute("SELECT * FROM sessions WHERE 1 = 0")
        if "owner_key" not in {d[0] for d in cur.description}:  # read-only: not migrated here
            self._session_cols = _SESSION_COLS_BEFORE_OWNERS

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
        sid, created, leaf, f_s, f_e, title, count, owner_key, owner_team = row
        return SessionInfo(
            id=sid,
            created_at=float(created),
            leaf_id=leaf,
            forked_from_session=f_s,
            forked_from_entry=f_e,
            title=title,
            entry_count=int(count),
            owner_key=owner_key,
            owner_team=owner_team,
        )

    def _get_session(self, cur: Any, session_id: str) -> SessionInfo:
        rows = self._q(cur, f"SELECT {self._session_cols} FROM sessions s WHERE s.id = ?", (session_id,))
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

    async def list_sessions(
        self,
        limit: int = 50,
        offset: int = 0,
        *,
        key_id: str | None = ANY_OWNER,
        team_id: str | None = ANY_OWNER,
    ) -> list[SessionInfo]:
        """Sessions, newest first, of one owner unless :data:`ANY_OWNER` (see the interface).
        Raises :class:`InvalidRequest` unless ``1 <= limit <=`` :data:`MAX_LIST_LIMIT` and
        ``0 <= offset <=`` :data:`MAX_LIST_OFFSET`."""
        check_range("limit", limit, 1, MAX_LIST_LIMIT)
        check_range("offset", offset, 0, MAX_LIST_OFFSET)
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("owner_key", key_id), ("owner_team", team_id)):
            if value == ANY_OWNER:
                continue
            if value is None:
                where.append(f"s.{column} IS NULL")
            else:
                where.append(f"s.{column} = ?")
                params.append(value)
        cond = f"WHERE {' AND '.join(where)} " if where else ""

        def go(cur: Any) -> list[SessionInfo]:
            rows = self._q(
                cur,
                f"SELECT {self._session_cols} FROM sessions s {cond}"
                "ORDER BY s.created_at DESC, s.id LIMIT ? OFFSET ?",
                (*params, int(limit), int(offset)),
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

    async def forks(self, session_id: str, limit: int = 200) -> list[SessionInfo]:
        """The sessions forked from ``session_id`` (``forked_from_session``), oldest first, at
        most ``limit`` (read-only: the console's session tree)."""
        check_range("limit", limit, 1, MAX_LIST_LIMIT)

        def go(cur: Any) -> list[SessionInfo]:
            rows = self._q(
                cur,
                f"SELECT {_SESSION_COLS} FROM sessions s WHERE s.forked_from_session = ? "
                "ORDER BY s.created_at, s.id LIMIT ?",
                (session_id, int(limit)),
            )
            return [self._session(r) for r in rows]

        return await self._run(go)

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
        owner: Owner = ANONYMOUS,
    ) -> None:
        """Insert the session row unless it exists (an existing row keeps its owner).
        ``WHERE NOT EXISTS`` keeps SQLite's no-replace trigger quiet; ``ON CONFLICT DO
        NOTHING`` covers PostgreSQL's concurrent creators (the SELECT needs its WHERE for
        SQLite to parse the upsert clause)."""
        self._q(
            cur,
            "INSERT INTO sessions (id, created_at, leaf_id, forked_from_session, forked_from_entry, title, "
            "owner_key, owner_team) "
            "SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = ?) "
            "ON CONFLICT (id) DO NOTHING",
            (session_id, time.time(), leaf, f_s, f_e, title, owner.key_id, owner.team_id, session_id),
        )

    async def create_session(
        self, session_id: str | None = None, *, title: str | None = None, owner: Owner = ANONYMOUS
    ) -> SessionInfo:
        sid = check_session_id(session_id) if session_id is not None else new_id()

        def go(cur: Any) -> SessionInfo:
            self._create(cur, sid, title, owner=owner)
            return self._get_session(cur, sid)

        return await self._run(go)

    async def append_at(
        self,
        session_id: str,
        items: Sequence[tuple[str, BaseModel | dict[str, Any]]],
        *,
        parent_id: str | None = LEAF,
        expect_leaf: str | None = ANY_LEAF,
        create: bool = True,
    ) -> tuple[list[Entry], bool]:
        checked = [(t, encode_payload(validate_payload(t, p))) for t, p in items]
        if create:
            check_session_id(session_id)

        def go(cur: Any) -> tuple[list[Entry], bool]:
            if create:
                self._create(cur, session_id, None)
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
            if not out or expect_leaf == KEEP_LEAF:
                return out, False
            if expect_leaf == ANY_LEAF:
                self._q(cur, "UPDATE sessions SET leaf_id = ? WHERE id = ?", (parent, session_id))
                return out, True
            # compare-and-set: the row is locked, but the condition is what makes it safe for
            # any writer (another instance, a hand-written UPDATE)
            cur.execute(
                self._sql(f"UPDATE sessions SET leaf_id = ? WHERE id = ? AND leaf_id {self.null_safe_eq} ?"),
                (parent, session_id, expect_leaf),
            )
            return out, cur.rowcount == 1

        return await self._run(go)

    async def label(self, session_id: str, entry_id: str, label: str | None) -> Entry:
        payload = encode_payload(validate_payload("label", {"target_id": entry_id, "label": label}))

        def go(cur: Any) -> Entry:
            self._lock_session(cur, session_id)
            session = self._get_session(cur, session_id)
            try:
                on_tree = self._on_tree(cur, session, entry_id)
            except SessionNotFound:
                on_tree = False
            if not on_tree:
                raise SessionNotFound(f"no entry {entry_id!r} in session {session_id!r}", param="entry")
            eid = new_id()
            self._q(
                cur,
                "INSERT INTO session_entries (id, session_id, parent_id, type, created_at, payload) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (eid, session_id, session.leaf_id, "label", time.time(), payload),
            )
            self._q(cur, "UPDATE sessions SET leaf_id = ? WHERE id = ?", (eid, session_id))
            return self._get_entry(cur, eid)

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
        owner: Owner = ANONYMOUS,
    ) -> SessionInfo:
        sid = check_session_id(new_session_id) if new_session_id is not None else new_id()

        def go(cur: Any) -> SessionInfo:
            source = self._get_session(cur, session_id)
            at = entry_id or source.leaf_id
            if at is not None and not self._on_tree(cur, source, at):
                raise InvalidRequest(f"entry {at!r} is not in session {session_id!r}", param="entry")
            if self._q(cur, "SELECT id FROM sessions WHERE id = ?", (sid,)):
                raise InvalidRequest(f"session {sid!r} already exists", param="session")
            self._create(cur, sid, title, leaf=at, f_s=session_id, f_e=at, owner=owner)
            return self._get_session(cur, sid)

        return await self._run(go)


MAX_LIST_LIMIT = 1000
MAX_LIST_OFFSET = 2**31 - 1


def check_range(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is an int in ``[low, high]``, else raises :class:`InvalidRequest` naming
    ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidRequest(f"{name} must be an integer from {low} to {high}", param=name)
    return value
