"""What the worker processes of one ``turnstile serve --workers N`` share besides the limit
counters: the admin-key throttle's wrong keys per client address
(:mod:`gateway.access.guessing`) and one-time claims (the console's one-time login link:
:mod:`gateway.console.auth`), in the workers' SQLite file (WAL;
:func:`gateway.config.workers_state_path`), next to the limit counters of
:mod:`gateway.limits.sqlite_backend`.

Each call is one short statement or transaction run in one thread of this process
(:class:`gateway.store_thread.StoreThread`), never on the event loop; it waits for another
worker's write at most :data:`BUSY_TIMEOUT_S` and raises ``sqlite3.Error`` when the file is
unusable (the callers decide: the throttle falls back to this worker's memory, a claim is
refused).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from gateway.store_thread import StoreThread

BUSY_TIMEOUT_S = 5.0
"""How long one call waits for another worker's write (seconds)."""

CLAIM_KEEP_S = 86_400.0
"""Claims older than this (seconds, on the caller's clock) are deleted as new ones are made."""

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS key_guess (address TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS key_guess_address ON key_guess (address, at)",
    "CREATE TABLE IF NOT EXISTS claim (name TEXT PRIMARY KEY, at REAL NOT NULL)",
)


def open_shared(path: str, schema: Sequence[str]) -> sqlite3.Connection:
    """Open (and create) the workers' file at ``path`` in WAL mode with the tables of
    ``schema`` (``CREATE … IF NOT EXISTS`` statements); a blocking call, for a store thread.
    Raises ``sqlite3.Error`` when it cannot be (a folder that cannot be made included).

    Workers that start together may create the file at once; switching a new file to WAL does
    not wait for the other's lock (SQLite answers "database is locked" at once), so that step is
    tried again for up to :data:`BUSY_TIMEOUT_S`."""
    if path != ":memory:":
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # reported as the file being unusable
            raise sqlite3.OperationalError(f"cannot make the folder of {path}: {err}") from err
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    try:
        give_up = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > give_up:
                    raise
                time.sleep(0.005)  # the other worker's creation takes a few ms
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("BEGIN IMMEDIATE")  # waits (busy timeout) for a worker creating them too
        for sql in schema:
            conn.execute(sql)
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


class SharedFile:
    """One workers' SQLite file as a store: one connection, opened on first use inside the one
    thread that runs every call on it (:class:`gateway.store_thread.StoreThread`, named
    ``thread_name``), never on the event loop."""

    def __init__(self, path: str, schema: Sequence[str], thread_name: str) -> None:
        self.path = path
        self._schema = schema
        self._name = thread_name
        self._conn: sqlite3.Connection | None = None
        self._inode: int | None = None
        self._thread: StoreThread | None = None

    def db(self) -> sqlite3.Connection:
        """The connection (call only from functions handed to :meth:`run`). A file deleted or
        replaced under the workers (a temporary-folder cleaner) is noticed here, logged and
        opened afresh, so that the workers go on sharing one file instead of each keeping its
        own (what the old file counted is lost: rate windows start over, budgets are seeded
        from the ledger again)."""
        inode = _inode(self.path)
        if self._conn is not None and inode != self._inode:
            structlog.get_logger("turnstile.workers").error(
                "workers_state_file_replaced", file=self.path, hint="opened afresh; its counts are lost"
            )
            self._conn.close()
            self._conn = None
        if self._conn is None:
            self._conn = open_shared(self.path, self._schema)
            self._inode = _inode(self.path)
        return self._conn

    def run(self, fn: Any, *args: Any) -> asyncio.Future[Any]:
        """``fn(*args)`` in the store thread; the future gets its result or exception."""
        if self._thread is None:
            self._thread = StoreThread(asyncio.get_running_loop(), name=self._name)
        return self._thread.run(fn, *args)

    async def aclose(self) -> None:
        """Close the connection and end the thread (after the calls handed to it)."""
        if self._thread is None:
            return
        thread, self._thread = self._thread, None
        if self._conn is not None:
            await thread.run(self._conn.close)
            self._conn = None
        thread.stop()


class WorkersState:
    """The shared file at ``path`` (opened on first use). Times are the callers' clock
    (seconds): every worker of the machine must use the same one (``time.monotonic`` is
    machine-wide on Linux and macOS)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._file = SharedFile(self.path, SCHEMA, "workers-state")
        self._db = self._file.db
        self._run = self._file.run

    async def guesses(self, address: str, since: float) -> list[float]:
        """The times (ascending) of ``address``'s wrong admin keys after ``since``."""
        return await self._run(self._guesses, address, since)  # type: ignore[no-any-return]

    def _guesses(self, address: str, since: float) -> list[float]:
        rows = self._db().execute(
            "SELECT at FROM key_guess WHERE address=? AND at>? ORDER BY at", (address, since)
        )
        return [r[0] for r in rows]

    async def guessed(self, address: str, at: float, since: float) -> list[float]:
        """Count a wrong admin key of ``address`` at ``at`` (those at or before ``since`` are
        deleted); the times of its wrong keys after ``since``, ascending."""
        return await self._run(self._guessed, address, at, since)  # type: ignore[no-any-return]

    def _guessed(self, address: str, at: float, since: float) -> list[float]:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM key_guess WHERE at<=?", (since,))
            db.execute("INSERT INTO key_guess VALUES (?,?)", (address, at))
            got = self._guesses(address, since)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return got

    async def forget(self, address: str) -> None:
        """``address``'s wrong admin keys are forgotten (it presented the right one)."""
        await self._run(lambda: self._db().execute("DELETE FROM key_guess WHERE address=?", (address,)))

    async def claim(self, name: str, at: float) -> bool:
        """Whether this call is the first of any worker to claim ``name`` (at ``at`` seconds):
        True once, False to every later call."""
        return await self._run(self._claim, name, at)  # type: ignore[no-any-return]

    def _claim(self, name: str, at: float) -> bool:
        db = self._db()
        db.execute("DELETE FROM claim WHERE at<?", (at - CLAIM_KEEP_S,))
        return db.execute("INSERT OR IGNORE INTO claim VALUES (?,?)", (name, at)).rowcount == 1

    async def aclose(self) -> None:
        """Close the connection and end the thread."""
        await self._file.aclose()
