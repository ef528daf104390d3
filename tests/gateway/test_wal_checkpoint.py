"""The transcript's checkpoints run off the commit path: the writer connection never
checkpoints, a separate round backfills what it committed, and closing stops the thread."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.transcript import SqliteTranscript
from gateway.wal_checkpoint import checkpoint

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
        frames, done = checkpoint(other)  # everything committed is still to be backfilled here
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
        frames, done = checkpoint(conn)
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
