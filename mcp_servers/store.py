"""Embedded store of the MCP registry: SQLite tables in the gateway's database file
(``server.db_path``, shared with the transcript).

* ``mcp_servers(id PRIMARY KEY, spec JSON, updated_at)``: servers added through the admin API.
* ``mcp_audit(ts, server, tool, exposed, tier, outcome, reason, action, client)``: every trust
  decision taken on a ``tools/call`` (run, asked and approved/declined, refused, invalid
  arguments) and every change to a server's tools (registered, added or changed pending
  review, accepted by an admin).
* ``mcp_tool_baselines(server PRIMARY KEY, transport, accepted_at)``: servers whose first tool
  list was accepted, with a fingerprint of what runs (the transport): a server whose transport
  changed is registered afresh.
* ``mcp_accepted_tools(server, tool, fingerprint, accepted_at)``: the accepted definition of
  each tool (sha256 of its definition): one that appears or changes later is pending review
  until an admin accepts it, across restarts.
* ``mcp_oauth_secrets(server, kind, ciphertext, updated_at)``: an OAuth upstream's tokens and
  client registration (``kind`` ``tokens`` / ``client``), encrypted by the caller
  (:mod:`mcp_servers.upstream_oauth`); this store never sees them in clear.

Writes are small and run in a worker thread (``asyncio.to_thread``) so they never block the
event loop; WAL mode lets the transcript writer use the same file.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from mcp_servers.config import McpServerSpec

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mcp_servers (
    id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS mcp_audit (
    ts REAL NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    exposed TEXT NOT NULL,
    tier TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    action TEXT NOT NULL,
    client TEXT
);
CREATE TABLE IF NOT EXISTS mcp_tool_baselines (
    server TEXT PRIMARY KEY,
    transport TEXT NOT NULL,
    accepted_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS mcp_oauth_secrets (
    server TEXT NOT NULL,
    kind TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (server, kind)
);
CREATE TABLE IF NOT EXISTS mcp_accepted_tools (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    accepted_at REAL NOT NULL,
    PRIMARY KEY (server, tool)
);
"""


class McpStore:
    """The tables above in the SQLite file at ``path`` (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            db = self._db()
            rows = db.execute(sql, args).fetchall()
            db.commit()
            return rows

    async def load_servers(self) -> list[McpServerSpec]:
        """Every persisted server spec, in id order (an invalid row is skipped, not fatal)."""
        rows = await asyncio.to_thread(self._run, "SELECT id, spec FROM mcp_servers ORDER BY id")
        out = []
        for _id, spec in rows:
            try:
                out.append(McpServerSpec.model_validate_json(spec))
            except ValueError:
                continue
        return out

    async def save_server(self, spec: McpServerSpec) -> None:
        """Insert or replace ``spec`` by id."""
        await asyncio.to_thread(
            self._run,
            "INSERT OR REPLACE INTO mcp_servers (id, spec, updated_at) VALUES (?, ?, ?)",
            (spec.id, spec.model_dump_json(), time.time()),
        )

    async def delete_server(self, server_id: str) -> None:
        """Forget the persisted server ``server_id`` (no error if absent)."""
        await asyncio.to_thread(self._run, "DELETE FROM mcp_servers WHERE id = ?", (server_id,))

    async def load_secret(self, server: str, kind: str) -> bytes | None:
        """The ciphertext stored for (``server``, ``kind``), or None."""
        rows = await asyncio.to_thread(
            self._run,
            "SELECT ciphertext FROM mcp_oauth_secrets WHERE server = ? AND kind = ?",
            (server, kind),
        )
        return bytes(rows[0][0]) if rows else None

    async def save_secret(self, server: str, kind: str, ciphertext: bytes) -> None:
        """Insert or replace the ciphertext of (``server``, ``kind``)."""
        await asyncio.to_thread(
            self._run,
            "INSERT OR REPLACE INTO mcp_oauth_secrets (server, kind, ciphertext, updated_at) "
            "VALUES (?, ?, ?, ?)",
            (server, kind, ciphertext, time.time()),
        )

    async def delete_secrets(self, server: str) -> None:
        """Forget every secret of ``server``."""
        await asyncio.to_thread(self._run, "DELETE FROM mcp_oauth_secrets WHERE server = ?", (server,))

    async def load_baselines(self) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
        """``(server -> transport fingerprint, server -> {tool -> accepted fingerprint})``."""
        return await asyncio.to_thread(self._read_baselines)

    def _read_baselines(self) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
        with self._lock:
            db = self._db()
            baselines = dict(db.execute("SELECT server, transport FROM mcp_tool_baselines").fetchall())
            accepted: dict[str, dict[str, str]] = {}
            for server, tool, fp in db.execute("SELECT server, tool, fingerprint FROM mcp_accepted_tools"):
                accepted.setdefault(server, {})[tool] = fp
        return baselines, accepted

    def _write_baseline(self, server: str, transport: str, tools: dict[str, str]) -> None:
        now = time.time()
        with self._lock:
            db = self._db()
            db.execute("DELETE FROM mcp_accepted_tools WHERE server = ?", (server,))
            db.execute(
                "INSERT OR REPLACE INTO mcp_tool_baselines (server, transport, accepted_at) VALUES (?, ?, ?)",
                (server, transport, now),
            )
            db.executemany(
                "INSERT INTO mcp_accepted_tools (server, tool, fingerprint, accepted_at) VALUES (?, ?, ?, ?)",
                [(server, tool, fp, now) for tool, fp in tools.items()],
            )
            db.commit()

    async def save_baseline(self, server: str, transport: str, tools: dict[str, str]) -> None:
        """A server registered afresh: its transport fingerprint and its first tool list
        (tool -> fingerprint), replacing whatever was accepted for it before (one transaction)."""
        await asyncio.to_thread(self._write_baseline, server, transport, tools)

    def _write_accepted(self, server: str, tools: dict[str, str]) -> None:
        now = time.time()
        with self._lock:
            db = self._db()
            db.executemany(
                "INSERT OR REPLACE INTO mcp_accepted_tools (server, tool, fingerprint, accepted_at) "
                "VALUES (?, ?, ?, ?)",
                [(server, tool, fp, now) for tool, fp in tools.items()],
            )
            db.commit()

    async def save_accepted(self, server: str, tools: dict[str, str]) -> None:
        """Accepted definitions (tool -> fingerprint) of ``server``, added or replaced."""
        await asyncio.to_thread(self._write_accepted, server, tools)

    async def forget_baseline(self, server: str) -> None:
        """Forget what was accepted for ``server`` (it was removed or re-registered)."""

        def forget() -> None:
            with self._lock:
                db = self._db()
                db.execute("DELETE FROM mcp_accepted_tools WHERE server = ?", (server,))
                db.execute("DELETE FROM mcp_tool_baselines WHERE server = ?", (server,))
                db.commit()

        await asyncio.to_thread(forget)

    async def audit(self, entry: dict[str, Any]) -> None:
        """Append one trust decision: keys ``server, tool, exposed, tier, outcome, reason, action,
        client`` (``client`` may be None)."""
        await asyncio.to_thread(
            self._run,
            "INSERT INTO mcp_audit (ts, server, tool, exposed, tier, outcome, reason, action, client) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                time.time(),
                entry["server"],
                entry["tool"],
                entry["exposed"],
                entry["tier"],
                entry["outcome"],
                entry["reason"],
                entry["action"],
                entry.get("client"),
            ),
        )

    def audit_rows(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` audit rows, newest first (for tests and the CLI)."""
        rows = self._run(
            "SELECT ts, server, tool, exposed, tier, outcome, reason, action, client FROM mcp_audit "
            "ORDER BY rowid DESC LIMIT ?",
            (limit,),
        )
        keys = ("ts", "server", "tool", "exposed", "tier", "outcome", "reason", "action", "client")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def audit_page(
        self,
        limit: int = 50,
        before: int | None = None,
        server: str | None = None,
        tool: str | None = None,
        outcome: str | None = None,
    ) -> list[dict[str, Any]]:
        """Audit rows newest first, read-only (the console's audit log): at most ``limit``, with
        a ``rowid`` below ``before`` (the previous page's last ``seq``), of ``server``, of
        ``tool`` (its original or its exposed name) and of ``outcome`` when given. Each row is
        a dict of the table's columns plus ``seq`` (its rowid)."""
        where: list[str] = []
        args: list[Any] = []
        if before is not None:
            where.append("rowid < ?")
            args.append(before)
        if server is not None:
            where.append("server = ?")
            args.append(server)
        if tool is not None:
            where.append("(tool = ? OR exposed = ?)")
            args += [tool, tool]
        if outcome is not None:
            where.append("outcome = ?")
            args.append(outcome)
        sql = "SELECT rowid, ts, server, tool, exposed, tier, outcome, reason, action, client FROM mcp_audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._run(sql + " ORDER BY rowid DESC LIMIT ?", (*args, limit))
        keys = ("seq", "ts", "server", "tool", "exposed", "tier", "outcome", "reason", "action", "client")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
