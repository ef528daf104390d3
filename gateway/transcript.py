"""The transcript: every turn appended to the embedded SQLite store (or, for several instances,
one PostgreSQL database: :mod:`gateway.transcript_pg`), in the internal schema.

Writes are off the event loop: :class:`TranscriptWriter` puts records on a bounded queue and
one background task writes them in batches, each batch in one transaction (a turn is one row,
so no turn is ever half-written). A turn's answer is released only once its row is committed
(group commit: :meth:`TranscriptWriter.try_commit`), so a turn a client received survives
``kill -9``. A full queue makes callers wait (back-pressure), bounded in time;
``close()`` drains the queue before returning, so nothing is lost on shutdown.

What is stored is the internal schema (``gateway.schema``) as JSON, never provider JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import orjson
import structlog
from pydantic import BaseModel

from gateway.store_thread import StoreThread
from gateway.transcript_cut import bounded, unstorable
from gateway.wal_checkpoint import Checkpointer

log = structlog.get_logger("turnstile.transcript")

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS turns (
    request_id      TEXT PRIMARY KEY,
    ts              REAL NOT NULL,
    client_dialect  TEXT NOT NULL,
    requested_model TEXT,
    deployment      TEXT,
    api             TEXT,
    stream          INTEGER NOT NULL,
    status          INTEGER NOT NULL,
    stop            TEXT,
    input_tokens    INTEGER,
    output_tokens   INTEGER,
    cache_read_tokens  INTEGER,
    cache_write_tokens INTEGER,
    reasoning_tokens   INTEGER,
    usage_estimated INTEGER,
    cost_usd        REAL,
    latency_ms      REAL,
    guard_outcome   TEXT,
    repairs         TEXT,
    withheld        TEXT,
    attempts        TEXT,
    error           TEXT,
    request         TEXT,
    response        TEXT,
    key_id          TEXT,
    team_id         TEXT,
    session_id      TEXT
);
CREATE INDEX IF NOT EXISTS turns_ts ON turns (ts);
"""

ADDED_COLUMNS = (("key_id", "TEXT"), ("team_id", "TEXT"), ("session_id", "TEXT"))
"""Columns added to ``turns`` after its first release, in order: a transcript made before
them gets them (``ALTER TABLE ... ADD COLUMN``, NULL in the old rows) when it is opened.
Only ever appended to, never edited."""

ADDED_INDEXES = (
    # the console's session page and its request-log filter: only session-bound rows are indexed
    "CREATE INDEX IF NOT EXISTS turns_session ON turns (session_id, ts) WHERE session_id IS NOT NULL",
)
"""Indexes made after :data:`ADDED_COLUMNS` (they may name those columns), in SQL both SQLite
and PostgreSQL read; ``IF NOT EXISTS``, so opening a transcript again makes none twice."""

COLUMNS = (
    "request_id",
    "ts",
    "client_dialect",
    "requested_model",
    "deployment",
    "api",
    "stream",
    "status",
    "stop",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "usage_estimated",
    "cost_usd",
    "latency_ms",
    "guard_outcome",
    "repairs",
    "withheld",
    "attempts",
    "error",
    "request",
    "response",
    "key_id",
    "team_id",
    "session_id",
)


STORED_JSON_BYTES = 1024 * 1024
"""Default bytes of request and of response JSON one row keeps (``server.transcript_max_json_bytes``)."""

MAX_ROWS_PER_STATEMENT = 256
"""Rows per ``INSERT`` (27 parameters each: well below SQLite's 32,766-parameter limit)."""

_INSERT_HEAD = f"INSERT INTO turns ({', '.join(COLUMNS)}) VALUES "


def insert_sql(rows: int, mark: str = "?") -> str:
    """One ``INSERT`` of ``rows`` rows (multi-row ``VALUES``, :data:`COLUMNS` order) with
    parameter marker ``mark`` (``?`` SQLite, ``%s`` psycopg): the whole batch is one
    statement, one step of SQLite's VM."""
    row_marks = "(" + ",".join([mark] * len(COLUMNS)) + ")"
    return _INSERT_HEAD + ",".join([row_marks] * rows)


def insert_statements(rows: list[tuple[Any, ...]], mark: str = "?") -> list[tuple[str, list[Any]]]:
    """``(sql, parameters)`` pairs inserting ``rows`` (:meth:`TurnRecord.row` tuples), at most
    :data:`MAX_ROWS_PER_STATEMENT` rows each."""
    out = []
    for i in range(0, len(rows), MAX_ROWS_PER_STATEMENT):
        part = rows[i : i + MAX_ROWS_PER_STATEMENT]
        out.append((insert_sql(len(part), mark), list(chain.from_iterable(part))))
    return out


def _stored_json(value: Any, max_json_bytes: int, *, exclude_none: bool) -> str | None:
    """The JSON text a row stores for a request or response ``value`` (a dict, a ``schema``
    model, or None): cut to ``max_json_bytes`` (:func:`bounded`), or a note when it cannot be
    encoded at all (:func:`unstorable`: orjson and pydantic refuse, e.g. nesting too deep)."""
    if value is None:
        return None
    try:
        if type(value) is dict:
            raw = orjson.dumps(value, default=str)
        else:
            raw = value.__pydantic_serializer__.to_json(value, exclude_none=exclude_none)
    except (ValueError, TypeError, RecursionError) as err:
        return unstorable(err)
    return raw.decode() if len(raw) <= max_json_bytes else bounded(raw, max_json_bytes)


@dataclass
class TurnRecord:
    """One turn as stored. ``request``/``response`` are internal-schema dicts, or the
    ``schema.Request``/``schema.Response`` objects themselves (dumped by the writer thread, off
    the request path: the pipeline never changes a model after the turn); ``usage`` and the
    ``withheld`` items likewise a dict or a ``schema`` model; ``latency_ms`` in milliseconds;
    ``cost_usd`` in USD; ``guard_outcome`` is ``ok``, ``repaired`` or ``rejected``;
    ``principal`` the caller's virtual key (:class:`gateway.access.model.Principal`: its
    ``key_id`` and ``team_id`` are stored) or None; ``session_id`` the session the turn is
    bound to (``x-turnstile-session``, a stored response, a message thread) or None."""

    request_id: str
    ts: float
    client_dialect: str
    requested_model: str | None
    stream: bool
    status: int
    deployment: str | None = None
    api: str | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | BaseModel = field(default_factory=dict)
    cost_usd: float | None = None
    latency_ms: float | None = None
    guard_outcome: str = "ok"
    repairs: list[dict[str, Any]] = field(default_factory=list)
    withheld: list[Any] = field(default_factory=list)  # dicts or schema.WithheldToolCall
    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    request: dict[str, Any] | BaseModel | None = None
    response: dict[str, Any] | BaseModel | None = None
    principal: Any = None
    session_id: str | None = None

    def row(self, max_json_bytes: int = STORED_JSON_BYTES) -> tuple[Any, ...]:
        """The record as a row tuple in :data:`COLUMNS` order (models dumped here: the request
        as JSON without nulls, the response as JSON, usage and withheld calls as Python).
        Request and response JSON longer than ``max_json_bytes`` are stored cut, and one that
        cannot be encoded at all as a note saying why (:mod:`gateway.transcript_cut`): the row
        is always made."""
        # ``type(x) is dict``, not ``isinstance(x, BaseModel)``: the latter is a Python-level
        # ABCMeta check for every model (this runs on the event loop, once per turn).
        usage = self.usage
        # The models' own serialisers, called directly: what model_dump / model_dump_json run,
        # without their Python wrappers. The request as JSON without nulls.
        u = usage if type(usage) is dict else usage.__pydantic_serializer__.to_python(usage)  # type: ignore[union-attr]
        withheld = [w if type(w) is dict else w.model_dump() for w in self.withheld]

        def js(v: Any) -> str | None:  # a value that is not JSON-ready is stored as its text
            return None if v is None else orjson.dumps(v, default=str).decode()

        request_json = _stored_json(self.request, max_json_bytes, exclude_none=True)
        response_json = _stored_json(self.response, max_json_bytes, exclude_none=False)
        who = self.principal

        return (
            self.request_id,
            self.ts,
            self.client_dialect,
            self.requested_model,
            self.deployment,
            self.api,
            int(self.stream),
            self.status,
            self.stop_reason,
            u.get("input_tokens"),
            u.get("output_tokens"),
            u.get("cache_read_tokens"),
            u.get("cache_write_tokens"),
            u.get("reasoning_tokens"),
            int(bool(u.get("estimated"))),
            self.cost_usd,
            self.latency_ms,
            self.guard_outcome,
            js(self.repairs),
            js(withheld),
            js(self.attempts),
            self.error,
            request_json,
            response_json,
            who.key_id if who is not None else None,
            who.team_id if who is not None else None,
            self.session_id,
        )


def connect(path: Path | str) -> sqlite3.Connection:
    """Open (creating if needed) the store at ``path`` with WAL journaling."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA_SQL)
    migrate(conn)
    return conn


class SqliteTranscript:
    """The embedded store: one SQLite connection (WAL) holding the ``turns`` table.

    ``write`` runs a batch's statements in one transaction; a primary-key clash raises
    :attr:`duplicate`, a value SQLite cannot hold one of :attr:`unwritable`."""

    marks = "?"
    duplicate: tuple[type[BaseException], ...] = (sqlite3.IntegrityError,)
    unwritable: tuple[type[BaseException], ...] = (
        sqlite3.IntegrityError,
        OverflowError,
        sqlite3.InterfaceError,
    )

    def __init__(self, path: Path | str) -> None:
        self.conn = connect(path)
        self.checkpoints = Checkpointer(path, self.conn)  # checkpoints off the commit path

    def write(self, statements: list[tuple[str, list[Any]]]) -> None:
        """Run ``statements`` in one transaction. ``executemany`` would release and retake the
        GIL around every row; each time this thread takes it back it stalls the event loop,
        which under load cost more than the writing itself."""
        if len(statements) == 1:  # autocommit: one statement is one transaction
            self.conn.execute(*statements[0])
            self.checkpoints.committed()
            return
        self.conn.execute("BEGIN")
        try:
            for sql, params in statements:
                self.conn.execute(sql, params)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self.checkpoints.committed()

    def close(self) -> None:
        """Stop checkpointing (after a last one), then close the connection."""
        self.checkpoints.close()
        self.conn.close()


def open_target(location: Path | str) -> SqliteTranscript | Any:
    """The store a transcript location names: :class:`gateway.transcript_pg.PostgresTranscript`
    for a ``postgresql://`` URL, else :class:`SqliteTranscript` at that file path. Raises
    ``sqlite3.Error`` / ``psycopg.Error`` when it cannot be opened."""
    from gateway.transcript_pg import PostgresTranscript, is_postgres_url

    if is_postgres_url(location):
        return PostgresTranscript(str(location), ADDED_COLUMNS, ADDED_INDEXES)
    return SqliteTranscript(location)


def migrate(conn: sqlite3.Connection) -> None:
    """Add the :data:`ADDED_COLUMNS` a transcript made before them lacks, then the
    :data:`ADDED_INDEXES` (adds only)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(turns)")}
    for name, kind in ADDED_COLUMNS:
        if name not in have:
            try:
                conn.execute(f"ALTER TABLE turns ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as err:  # another process added it meanwhile
                if "duplicate column" not in str(err):
                    raise
    for sql in ADDED_INDEXES:
        conn.execute(sql)


@dataclass(eq=False, slots=True)
class _Group:
    """The records queued between two writer cycles (one transaction), and the futures of those
    whose callers wait for the commit. ``created`` is ``time.monotonic()`` seconds."""

    created: float
    records: list[TurnRecord] = field(default_factory=list)
    waiters: list[asyncio.Future[bool]] = field(default_factory=list)


class TranscriptWriter:
    """Group-committing, bounded, lossless writer of :class:`TurnRecord` rows.

    Group commit: a caller that must not answer before its row is on disk queues the row with
    :meth:`try_commit` (or :meth:`commit`) and awaits the future it gets; every time the writer
    wakes it takes *everything* queued and writes it in one transaction (one multi-row
    ``INSERT`` per :data:`MAX_ROWS_PER_STATEMENT` rows), then resolves those futures. Nothing
    waits for a batch to fill: a lone turn is written at once, and under load the rows queued
    while one write is in flight form the next batch, so the number of transactions follows
    the load, not the turn rate. Batches commit in queue order, so when a row's future resolves
    every row queued before it is committed too (a turn's tool-loop step rows before its own).
    A commit in WAL mode with ``synchronous=NORMAL`` survives a process kill (``kill -9``); an
    operating-system crash may lose the last transactions, which only ``synchronous=FULL``
    (an fsync per commit) would keep.

    Bounded waits: a commit that has not happened ``commit_timeout_s`` seconds after its row was
    queued (the store failing: disk full, locked by another process) resolves the waiters'
    futures with False and is logged as an error (``transcript_commit_overdue``, with the
    request ids) — the answer is then released without its row committed; the rows stay queued
    and the writer keeps retrying them.

    Admission control, not dropped rows: ``maxsize`` bounds the rows waiting to be written by
    refusing new *turns*, never the rows of turns already running. :attr:`accepting` is False
    while ``maxsize`` rows are queued or a commit is overdue; the server then waits for room at
    most ``commit_timeout_s`` (:meth:`admit`) and answers 503 before anything goes upstream.
    A turn that was admitted always gets its row queued, so the queue holds at most ``maxsize``
    rows plus those of the turns in flight (bounded by the connection limit). Only a row that
    arrives after :meth:`close` is lost (logged as ``transcript_row_dropped``, counted in
    :attr:`dropped`).

    ``max_json_bytes`` bounds the request and the response JSON of a row (:meth:`TurnRecord.row`).
    """

    def __init__(
        self,
        path: Path | str,
        maxsize: int = 10_000,
        commit_timeout_s: float = 5.0,
        max_json_bytes: int = STORED_JSON_BYTES,
    ) -> None:
        self.path = path
        self.max_json_bytes = max_json_bytes
        self._maxsize = maxsize
        self.commit_timeout_s = commit_timeout_s
        self._queue: deque[_Group] = deque()  # oldest first; the last may be _open
        self._open: _Group | None = None  # the group new records join
        self._flight: list[_Group] = []  # the groups being written
        self._size = 0  # records queued (not yet taken by the writer)
        self._conn: Any = None  # SqliteTranscript | PostgresTranscript, once started
        self._store: StoreThread | None = None  # runs the store's blocking calls
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watch: asyncio.TimerHandle | None = None  # the overdue-commit check, when armed
        self._wake = asyncio.Event()  # set to wake the writer parked on an empty queue
        self._room = asyncio.Event()  # set when the writer has made room (back-pressure)
        self._idle = asyncio.Event()  # set after each written batch (flush)
        self._parked = False
        self._in_flight = False
        self._closing = False
        self._closed = False
        self._stalled = False  # a commit is overdue: the store is not accepting writes
        self.written = 0
        self.dropped = 0  # rows that arrived after close (shutdown): never written

    async def start(self) -> None:
        """Open the store and start the background writer task."""
        self._loop = asyncio.get_running_loop()
        self._store = StoreThread(self._loop, name="transcript-store")
        self._conn = await self._store.run(open_target, self.path)
        self._task = asyncio.create_task(self._run(), name="transcript-writer")

    def _group(self) -> _Group:
        """The open group, or a new one (which arms the overdue check)."""
        group = self._open = _Group(time.monotonic())
        self._queue.append(group)
        if self._watch is None:
            loop = self._loop or asyncio.get_running_loop()
            self._watch = loop.call_later(self.commit_timeout_s, self._check_overdue)
        return group

    @property
    def accepting(self) -> bool:
        """Whether a new turn may start: fewer than ``maxsize`` rows queued and no commit
        overdue (see the class docstring: admission control)."""
        return self._size < self._maxsize and not self._stalled

    async def admit(self) -> bool:
        """Wait until :attr:`accepting`, at most ``commit_timeout_s`` seconds; False when the
        store did not catch up (the caller refuses the turn before anything goes upstream)."""
        deadline = time.monotonic() + self.commit_timeout_s
        while not self.accepting:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._closed or self._task is None or self._task.done():
                return False
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), remaining)
        return True

    def try_append(self, record: TurnRecord) -> bool:
        """Queue one turn without waiting (nor waiting for its commit); False only when the
        writer is closed. The queue is bounded by admission (:meth:`admit`), not here."""
        if self._closed:
            return False
        (self._open or self._group()).records.append(record)
        self._size += 1
        if self._parked:
            self._parked = False
            self._wake.set()
        return True

    def try_commit(self, record: TurnRecord) -> asyncio.Future[bool] | None:
        """Queue one turn without waiting; the future resolves True once the transaction
        holding its row has committed (a row that can never be stored, e.g. a duplicate
        request id, is logged and skipped: True too), or False when that did not happen
        within ``commit_timeout_s`` (logged). None when the writer is closed. Cancelling the
        future abandons the wait, not the row."""
        if self._closed:
            return None
        group = self._open or self._group()
        group.records.append(record)
        self._size += 1
        waiter = (self._loop or asyncio.get_running_loop()).create_future()
        group.waiters.append(waiter)
        if self._parked:
            self._parked = False
            self._wake.set()
        return waiter

    async def append(self, record: TurnRecord) -> None:
        """Queue one turn (its row is written whatever the queue holds: see admission control
        in the class docstring); a row that arrives after :meth:`close` is logged and lost."""
        if not self.try_append(record):
            self._lost(record)

    async def commit(self, record: TurnRecord) -> bool:
        """Queue one turn and wait until its row is committed (:meth:`try_commit`). True when
        committed; False when the commit is overdue (logged; the row stays queued) or the
        writer is closed (logged; the row is lost)."""
        waiter = self.try_commit(record)
        if waiter is None:
            self._lost(record)
            return False
        return await waiter

    def _lost(self, record: TurnRecord) -> None:
        self.dropped += 1
        log.error(
            "transcript_row_dropped",
            request_id=record.request_id,
            reason="the transcript is closed (the gateway is shutting down)",
        )

    def _check_overdue(self) -> None:
        """Resolve, with False, the waiters of every group queued ``commit_timeout_s`` ago or
        more and still not committed (logged once per group); re-arm for the next one."""
        self._watch = None
        now = time.monotonic()
        bound = self.commit_timeout_s
        next_due: float | None = None
        for group in (*self._flight, *self._queue):
            pending = [w for w in group.waiters if not w.done()]
            if not pending:
                continue
            if now - group.created < bound:
                due = group.created + bound
                next_due = due if next_due is None else min(next_due, due)
                continue
            for w in pending:
                w.set_result(False)
            self._stalled = True  # new turns wait for room, then are refused (admission control)
            if self._open is group:
                self._open = None  # later records get a bound of their own
            log.error(
                "transcript_commit_overdue",
                rows=len(group.records),
                waited_s=round(now - group.created, 3),
                request_ids=[r.request_id for r in group.records[:50]],
                consequence="answers released before their transcript rows were committed; "
                "the rows stay queued and are written when the store accepts writes again",
            )
        if next_due is not None and self._loop is not None and not self._closed:
            self._watch = self._loop.call_later(max(0.0, next_due - now), self._check_overdue)

    async def flush(self) -> None:
        """Wait until every queued record is written (used by tests and shutdown)."""
        while self._queue or self._in_flight:
            if self._task is None or self._task.done():
                return  # no writer: nothing will be written (see close)
            self._idle.clear()
            await self._idle.wait()

    async def close(self) -> None:
        """Write everything still queued, then stop the writer and close the store."""
        if self._task is not None:
            self._closing = True
            self._parked = False
            self._wake.set()
            await self._task
            self._task = None
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._store is not None:
            self._store.stop()
            self._store = None

    def _write(self, statements: list[tuple[str, list[Any]]]) -> None:
        """Run the ``(sql, parameters)`` inserts of :func:`insert_statements` in one
        transaction of the store."""
        assert self._conn is not None
        with self._lock:
            self._conn.write(statements)

    async def _write_until_done(self, records: list[TurnRecord]) -> None:
        """Write ``records``; a failure (e.g. the file locked by another process) is logged and
        retried with backoff up to 5 s apart — turns are never dropped. A row whose request id
        is already stored (a primary-key clash) is logged and skipped, the others are kept.

        The rows are made here, on the event loop (a few µs per turn: the models' JSON), and
        only SQLite runs in a thread: Python work in a second thread contends with the event
        loop for the GIL, which under load cost far more than the work itself.

        A row that can never be stored (a value SQLite or JSON cannot hold, e.g. an integer
        past 64 bits) is logged and skipped like a duplicate; retrying it would stop the writer
        for good, and with it every later turn and the shutdown."""
        rows = []
        for record in records:
            try:
                rows.append(record.row(self.max_json_bytes))
            except Exception:
                log.exception("transcript_row_unwritable", request_id=record.request_id)
                records = [r for r in records if r is not record]
        if not rows:
            return
        statements = insert_statements(rows, self._conn.marks)
        delay = 0.05
        while True:
            try:
                assert self._store is not None
                await self._store.run(self._write, statements)
                self.written += len(records)
                return
            except self._conn.unwritable as err:
                if len(records) == 1:
                    rid = records[0].request_id
                    if isinstance(err, self._conn.duplicate):
                        log.error("transcript_duplicate_request_id", request_id=rid)
                    else:
                        log.error("transcript_row_unwritable", request_id=rid, error=str(err))
                    return
                for record in records:  # find the offending row; keep the rest
                    await self._write_until_done([record])
                return
            except Exception:
                log.exception("transcript_write_failed_retrying", rows=len(records), retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _run(self) -> None:
        queue = self._queue
        while True:
            if not queue:
                if self._closing:
                    return
                self._parked = True
                self._wake.clear()
                await self._wake.wait()
                continue
            # Everything queued now is one batch: no waiting for more (group commit).
            groups = list(queue)
            queue.clear()
            self._open = None
            self._size = 0
            records = groups[0].records if len(groups) == 1 else [r for g in groups for r in g.records]
            self._room.set()
            self._flight = groups
            self._in_flight = True
            committed = False
            try:
                await self._write_until_done(records)
                committed = True
                if self._stalled:  # the store accepts writes again: admit new turns
                    self._stalled = False
                    self._room.set()
            except Exception:  # a bug, not a storage failure (those are retried): keep writing
                log.exception("transcript_batch_lost", rows=len(records))
            finally:
                self._in_flight = False
                self._flight = []
                for group in groups:
                    for waiter in group.waiters:
                        if not waiter.done():
                            waiter.set_result(committed)
                self._idle.set()


def recent(path: Path | str, limit: int = 20) -> list[dict[str, Any]]:
    """The ``limit`` most recent turns (newest first) as dicts of :data:`COLUMNS`, from the
    SQLite file at ``path`` (opened read-only) or the PostgreSQL database a ``postgresql://``
    URL names. Raises ``sqlite3.DatabaseError`` when the file is not a transcript,
    ``psycopg.Error`` when the database is unreachable or holds none."""
    from gateway import transcript_pg

    if transcript_pg.is_postgres_url(path):
        return transcript_pg.recent(str(path), limit)
    conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT * FROM turns ORDER BY ts DESC LIMIT ?", (limit,)).fetchall()
        return [dict(r) for r in rows]
    finally:
        conn.close()
