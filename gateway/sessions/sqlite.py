"""SQLite backend of the session store (the embedded default; one file, WAL journaling)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from gateway.sessions.store import SqlSessionStore


class SqliteSessionStore(SqlSessionStore):
    """Session store in the SQLite file at ``path`` (``:memory:`` for a private in-memory one).

    Every transaction takes the database write lock up front (``BEGIN IMMEDIATE``), so two
    processes appending to one session serialise, and the leaf compare-and-set of
    :meth:`~gateway.sessions.store.SqlSessionStore.append_at` sees the latest leaf.
    ``readonly`` opens the file read-only (``mode=ro``; never creates it) and reads in plain
    ``BEGIN`` transactions.
    """

    dialect = "sqlite"
    placeholder = "?"
    null_safe_eq = "IS"

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        super().__init__(f"sqlite:///{path}", readonly=readonly)
        self.file = str(path)

    def _connect(self) -> Any:
        if self.readonly:
            uri = Path(self.file).resolve().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30.0)
        else:
            if self.file != ":memory:":
                Path(self.file).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.file, check_same_thread=False, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        # REPLACE conflict resolution then fires the delete triggers too (belt and braces: the
        # no-replace triggers of migration 2 hold for connections without this pragma)
        conn.execute("PRAGMA recursive_triggers=ON")
        return conn

    def _begin(self, cur: Any) -> None:
        cur.execute("BEGIN" if self.readonly else "BEGIN IMMEDIATE")
