"""SQLite backend of the access store (the embedded default: the transcript's file, WAL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from gateway.access.store import SqlAccessStore


class SqliteAccessStore(SqlAccessStore):
    """Access store in the SQLite file at ``path`` (``:memory:``: a private in-memory one).
    Every transaction takes the write lock up front (``BEGIN IMMEDIATE``)."""

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
