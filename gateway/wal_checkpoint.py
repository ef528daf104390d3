"""Checkpoints of the embedded SQLite transcript, off the path of every commit.

SQLite in WAL mode appends each commit to the ``-wal`` file; by default the connection that
commits past 1,000 pages of WAL then copies them into the database and syncs both files — a
*checkpoint* — inside that commit. The transcript writer commits every turn's row before the
answer's last byte leaves (:mod:`gateway.transcript`), so that one commit in a few hundred waited
for the disk: on a virtual disk 5–20 ms, the whole added p99 of a turn at one connection
(``bench.run``: +12 ms p99 with the automatic checkpoint, +1.9 ms on a RAM disk, the same build).

:class:`Checkpointer` turns the writer connection's automatic checkpoint off
(``PRAGMA wal_autocheckpoint=0``) and runs a ``PASSIVE`` checkpoint from its own connection, in
its own thread, once :data:`EVERY_S` passes with commits made meanwhile. A passive checkpoint
never blocks a writer (SQLite: "Checkpoint as many frames as possible without waiting for any
database readers or writers to finish"), so commits keep their own cost — an append to the WAL,
no sync (``synchronous=NORMAL``). What survives what is unchanged: a committed row survives a
process kill (it is in the WAL, replayed on open); an operating-system crash may lose the last
transactions (as before: only ``synchronous=FULL`` syncs each commit). Under steady commits a
passive checkpoint never reaches the WAL's last frame, and SQLite starts a WAL over only once one
has: past :data:`WAL_RESET_BYTES` the round follows its passive checkpoint with a ``TRUNCATE``
one, which copies the few frames committed since and empties the WAL, holding commits back that
long (it waits :data:`RESET_BUSY_MS` at most for locks, else tries again next round), so the WAL
stays near that size.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import structlog

log = structlog.get_logger("turnstile.transcript")

EVERY_S = 1.0
"""Seconds between checkpoints while rows are being committed."""

WAL_RESET_BYTES = 256 * 1024 * 1024
"""A WAL file past this size is emptied after the round's passive checkpoint (and truncated to
it, ``PRAGMA journal_size_limit``, whenever SQLite itself starts it over). Emptying holds commits
back for tens of ms on a virtual disk (copy, sync, truncate): at 16 MB it came once a second under
load and made the p99 at one connection 38 ms (``bench.run``); at 256 MB it comes every ~16 s
under the heaviest load here, past the 99th percentile (2.6–3.6 ms)."""

RESET_BUSY_MS = 50
"""How long emptying the WAL waits for the write lock and for readers (ms) before it gives up
until the next round."""


def checkpoint(conn: sqlite3.Connection, mode: str = "PASSIVE") -> tuple[int, int, int]:
    """One checkpoint (``PASSIVE`` or ``TRUNCATE``) on ``conn``: (busy 0/1, WAL frames, frames
    now in the database). Raises ``sqlite3.Error``."""
    busy, frames, done = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    return int(busy), int(frames), int(done)


def _wal_bytes(path: str) -> int:
    try:
        return os.stat(path + "-wal").st_size
    except OSError:
        return 0


class Checkpointer:
    """One thread and one connection checkpointing the database at ``path`` (a file; nothing
    for ``:memory:``). :meth:`committed` is called by the writer after each commit (a flag set:
    no lock, no wake-up); :meth:`close` stops the thread after a last checkpoint."""

    def __init__(
        self, path: Path | str, writer: sqlite3.Connection, reset_bytes: int = WAL_RESET_BYTES
    ) -> None:
        self._path = str(path)
        self._reset_bytes = reset_bytes
        self._dirty = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self._path == ":memory:":
            return
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute(f"PRAGMA journal_size_limit={reset_bytes}")
        self._thread = threading.Thread(target=self._main, name="transcript-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """Rows were committed: the next round checkpoints."""
        self._dirty = True

    def _main(self) -> None:
        conn = sqlite3.connect(
            self._path, check_same_thread=False, isolation_level=None, timeout=RESET_BUSY_MS / 1000
        )
        try:
            while not self._stop.wait(EVERY_S):
                self._round(conn)
            self._round(conn)
        finally:
            conn.close()

    def _round(self, conn: sqlite3.Connection) -> None:
        if not self._dirty:
            return
        self._dirty = False
        try:
            checkpoint(conn)
            if _wal_bytes(self._path) > self._reset_bytes:
                # Under steady commits a passive checkpoint never catches up with the last
                # frame, so SQLite never starts the WAL over: it would grow without bound. The
                # passive pass just copied nearly all of it; a truncating one copies the few
                # frames since, syncs and empties the WAL itself (a restart would leave that to
                # the next commit, which a commit already waiting misses), holding commits back
                # for that long (RESET_BUSY_MS at most while it waits for locks).
                busy, _, _ = checkpoint(conn, "TRUNCATE")
                if busy:
                    self._dirty = True  # readers held it off: the next round tries again
        except sqlite3.Error as err:  # the next round tries again; commits are unaffected
            self._dirty = True
            log.warning("transcript_checkpoint_failed", error=str(err))

    @property
    def running(self) -> bool:
        """Whether the checkpoint thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Stop the thread after one last checkpoint (bounded: it waits for SQLite's busy
        timeout at most)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=35.0)
