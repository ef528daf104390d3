"""The transcript's checkpoints run off the commit path: the writer connection never
checkpoints, a separate round backfills what it committed, and closing stops the thread."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from pathlib import Path

from gateway.transcript import SqliteTranscript
from gateway.wal_checkpoint import Checkpointer, checkpoint

ROW = ("INSERT INTO t (body) VALUES (?)", ["x" * 3000])


def _store(tmp_path: Path) -> SqliteTranscript:
    store = SqliteTranscript(tmp_path / "t.db")
    store.conn.execute("CREATE TABLE t (body TEXT)")
    return store


def test_the_writer_connection_never_checkpoints_on_commit(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        for _ in range(1500):  # past the 1,000-page default that would checkpoint in a commit
            store.write([ROW])
        other = sqlite3.connect(tmp_path / "t.db")
        _, frames, done = checkpoint(other)  # everything committed is still to be backfilled here
        other.close()
        assert frames >= 1000 and done == frames
    finally:
        store.close()


def test_a_checkpoint_round_backfills_what_was_committed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        for _ in range(300):
            store.write([ROW, ROW])
        conn = sqlite3.connect(tmp_path / "t.db")
        store.checkpoints.committed()
        store.checkpoints._round(conn)  # one round, as the thread runs it
        _, frames, done = checkpoint(conn)
        conn.close()
        assert frames > 0 and done == frames
        assert store.conn.execute("SELECT count(*) FROM t").fetchone()[0] == 600
    finally:
        store.close()


def test_closing_the_store_stops_the_checkpoint_thread(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.checkpoints.running
    store.write([ROW])
    store.close()
    assert not store.checkpoints.running


def test_an_in_memory_store_has_no_checkpoint_thread() -> None:
    store = SqliteTranscript(":memory:")
    assert not store.checkpoints.running
    store.close()


def test_under_steady_commits_the_wal_is_started_over_once_past_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = SqliteTranscript(path)
    store.conn.execute("CREATE TABLE t (body TEXT)")
    store.checkpoints.close()  # its rounds are driven below, while another thread commits
    bound = 256 * 1024
    rounds = Checkpointer(":memory:", store.conn, reset_bytes=bound)  # no thread of its own
    rounds._path = str(path)
    conn = sqlite3.connect(path, isolation_level=None, timeout=1.0)
    sizes: list[int] = []

    done = threading.Event()
    written = [0]

    def commit_steadily() -> None:  # until the WAL was emptied once, or 20,000 commits (bounded)
        while not done.is_set() and written[0] < 20_000:
            store.write([ROW])
            written[0] += 1

    writer = threading.Thread(target=commit_steadily)
    writer.start()
    try:
        while writer.is_alive():  # rounds back to back, commits landing during each one
            rounds.committed()
            rounds._round(conn)
            sizes.append((tmp_path / "t.db-wal").stat().st_size)
            if len(sizes) > 1 and sizes[-1] < min(sizes[-2], bound):
                done.set()  # emptied while commits went on
        writer.join(timeout=60)
        # a passive checkpoint alone never empties the WAL while commits go on: it only grows
        emptied = [b for a, b in itertools.pairwise(sizes) if b < a]
        assert emptied and min(emptied) < bound, (written, sizes[-20:])
        assert store.conn.execute("SELECT count(*) FROM t").fetchone()[0] == written[0]
    finally:
        conn.close()
        store.close()
