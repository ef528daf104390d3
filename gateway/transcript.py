"""The transcript: every turn appended to the embedded SQLite store, in the internal schema.

Writes are off the request path: :class:`TranscriptWriter` puts records on a bounded queue
and one background task writes them in batches, each batch in one transaction (a turn is one
row, so no turn is ever half-written). A full queue makes callers wait (back-pressure) rather
than drop turns; ``close()`` drains the queue before returning, so nothing is lost on shutdown.

What is stored is the internal schema (``gateway.schema``) as JSON, never provider JSON.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections import deque
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import orjson
import structlog
from pydantic import BaseModel

from gateway.transcript_cut import bounded, unstorable

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
    response        TEXT
);
CREATE INDEX IF NOT EXISTS turns_ts ON turns (ts);
"""

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
)


STORED_JSON_BYTES = 1024 * 1024
"""Default bytes of request and of response JSON one row keeps (``server.transcript_max_json_bytes``)."""

MAX_ROWS_PER_STATEMENT = 256
"""Rows per ``INSERT`` (24 parameters each: well below SQLite's 32,766-parameter limit)."""

_ROW_MARKS = "(" + ",".join("?" * len(COLUMNS)) + ")"
_INSERT_HEAD = f"INSERT INTO turns ({', '.join(COLUMNS)}) VALUES "


def insert_sql(rows: int) -> str:
    """One ``INSERT`` of ``rows`` rows (multi-row ``VALUES``, :data:`COLUMNS` order): the
    whole batch is one statement, one step of SQLite's VM."""
    return _INSERT_HEAD + ",".join([_ROW_MARKS] * rows)


def insert_statements(rows: list[tuple[Any, ...]]) -> list[tuple[str, list[Any]]]:
    """``(sql, parameters)`` pairs inserting ``rows`` (:meth:`TurnRecord.row` tuples), at most
    :data:`MAX_ROWS_PER_STATEMENT` rows each."""
    out = []
    for i in range(0, len(rows), MAX_ROWS_PER_STATEMENT):
        part = rows[i : i + MAX_ROWS_PER_STATEMENT]
        out.append((insert_sql(len(part)), list(chain.from_iterable(part))))
    return out


@dataclass
class TurnRecord:
    """One turn as stored. ``request``/``response`` are internal-schema dicts, or the
    ``schema.Request``/``schema.Response`` objects themselves (dumped by the writer thread, off
    the request path: the pipeline never changes a model after the turn); ``usage`` and the
    ``withheld`` items likewise a dict or a ``schema`` model; ``latency_ms`` in milliseconds;
    ``cost_usd`` in USD; ``guard_outcome`` is ``ok``, ``repaired`` or ``rejected``."""

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

        request = self.request
        request_json: str | None = None
        try:
            if request is None:
                pass
            elif type(request) is dict:
                raw = orjson.dumps(request, default=str)
                request_json = raw.decode() if len(raw) <= max_json_bytes else bounded(raw, max_json_bytes)
            else:
                raw = request.__pydantic_serializer__.to_json(request, exclude_none=True)  # type: ignore[union-attr]
                request_json = raw.decode() if len(raw) <= max_json_bytes else bounded(raw, max_json_bytes)
        except (ValueError, TypeError, RecursionError) as err:  # orjson and pydantic refuse, e.g. too deep
            request_json = unstorable(err)
        response = self.response
        response_json: str | None = None
        try:
            if response is None:
                pass
            elif type(response) is dict:
                raw = orjson.dumps(response, default=str)
                response_json = raw.decode() if len(raw) <= max_json_bytes else bounded(raw, max_json_bytes)
            else:
                raw = response.__pydantic_serializer__.to_json(response)  # type: ignore[union-attr]
                response_json = raw.decode() if len(raw) <= max_json_bytes else bounded(raw, max_json_bytes)
        except (ValueError, TypeError, RecursionError) as err:
            response_json = unstorable(err)

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
        )


def connect(path: Path | str) -> sqlite3.Connection:
    """Open (creating if needed) the store at ``path`` with WAL journaling."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA_SQL)
    return conn


class TranscriptWriter:
    """Batched, bounded, lossless writer of :class:`TurnRecord` rows.

    ``maxsize`` bounds the queue (records); ``batch`` is the most rows per transaction. The
    queue is a plain deque and the writer task is woken only when it waits for work, so
    queueing a turn costs a few bytecodes on the request path. ``max_json_bytes`` bounds the
    request and the response JSON of a row (:meth:`TurnRecord.row`).
    """

    def __init__(
        self,
        path: Path | str,
        maxsize: int = 10_000,
        batch: int = 256,
        max_json_bytes: int = STORED_JSON_BYTES,
    ) -> None:
        self.path = path
        self.max_json_bytes = max_json_bytes
        self._maxsize = maxsize
        self._batch = batch
        self._items: deque[TurnRecord] = deque()
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()  # set to wake the writer parked on an empty queue
        self._room = asyncio.Event()  # set when the writer has made room (back-pressure)
        self._idle = asyncio.Event()  # set after each written batch (flush)
        self._parked = False
        self._in_flight = False
        self._closing = False
        self.linger_s = 0.01  # seconds the writer waits after a first record for more to batch
        self.written = 0

    async def start(self) -> None:
        """Open the store and start the background writer task."""
        self._conn = await asyncio.to_thread(connect, self.path)
        self._task = asyncio.create_task(self._run(), name="transcript-writer")

    def try_append(self, record: TurnRecord) -> bool:
        """Queue one turn without waiting; False when the queue is full (then :meth:`append`
        waits for room)."""
        if len(self._items) >= self._maxsize:
            return False
        self._items.append(record)
        if self._parked:
            self._parked = False
            self._wake.set()
        return True

    async def append(self, record: TurnRecord) -> None:
        """Queue one turn; waits only when the queue is full."""
        while not self.try_append(record):
            self._room.clear()
            await self._room.wait()

    async def flush(self) -> None:
        """Wait until every queued record is written (used by tests and shutdown)."""
        while self._items or self._in_flight:
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
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _write(self, statements: list[tuple[str, list[Any]]]) -> None:
        """Run the ``(sql, parameters)`` inserts of :func:`insert_statements` in one
        transaction. ``executemany`` would release and retake the GIL around every row; each
        time this thread takes it back it stalls the event loop, which under load cost more than
        the writing itself."""
        assert self._conn is not None
        with self._lock:
            if len(statements) == 1:  # autocommit: one statement is one transaction
                self._conn.execute(*statements[0])
                return
            self._conn.execute("BEGIN")
            try:
                for sql, params in statements:
                    self._conn.execute(sql, params)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

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
        statements = insert_statements(rows)
        delay = 0.05
        while True:
            try:
                await asyncio.to_thread(self._write, statements)
                self.written += len(records)
                return
            except (sqlite3.IntegrityError, OverflowError, sqlite3.InterfaceError) as err:
                if len(records) == 1:
                    rid = records[0].request_id
                    if isinstance(err, sqlite3.IntegrityError):
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
        items = self._items
        while True:
            if not items:
                if self._closing:
                    return
                self._parked = True
                self._wake.clear()
                await self._wake.wait()
                continue
            if len(items) < self._batch and not self._closing:
                # Gather a batch: one thread hand-off and one transaction per batch, not per turn.
                await asyncio.sleep(self.linger_s)
            records = [items.popleft() for _ in range(min(self._batch, len(items)))]
            self._room.set()
            self._in_flight = True
            try:
                await self._write_until_done(records)
            except Exception:  # a bug, not a storage failure (those are retried): keep writing
                log.exception("transcript_batch_lost", rows=len(records))
            finally:
                self._in_flight = False
                self._idle.set()


def recent(path: Path | str, limit: int = 20) -> list[dict[str, Any]]:
    """The ``limit`` most recent turns (newest first) as dicts of :data:`COLUMNS`.

    Opens the file read-only. Raises ``sqlite3.DatabaseError`` when it is not a transcript."""
    conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT * FROM turns ORDER BY ts DESC LIMIT ?", (limit,)).fetchall()
        return [dict(r) for r in rows]
    finally:
        conn.close()
