"""SQLite backend of the session store (the embedded default; one file, WAL journaling)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from gateway.sessions.store import SqlSessionStore


class SqliteSessionStore(SqlSessionStore):
    """Session store in the SQLite file at ``path`` (``:memory:`` for a private in-memory one).

    Writes take the database write lock up front (``BEGIN IMMEDIATE``), so two processes
    appending to one session serialise instead of failing halfway.
    """

    dialect = "sqlite"
    placeholder = "?"

    def __init__(self, path: str | Path) -> None:
        super().__init__(f"sqlite:///{path}")
        self.file = str(path)

    def _connect(self) -> Any:
        if self.file != ":memory:":
            Path(self.file).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.file, check_same_thread=False, isolation_level=None, timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _begin(self, cur: Any) -> None:
        cur.execute("BEGIN IMMEDIATE")
