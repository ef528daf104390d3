"""``McpStore.audit_page`` (read-only, for the console's audit log): newest first, filtered by
server, tool (original or exposed name) and outcome, paged by row number."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp_servers.store import McpStore


def test_audit_rows_are_paged_newest_first_and_filtered(tmp_path: Path) -> None:
    store = McpStore(tmp_path / "gw.db")
    decisions = [
        ("time", "get_current_time", "allowed"),
        ("fs", "write_file", "declined (decline)"),
        ("time", "convert_time", "allowed"),
        ("fs", "write_file", "approved"),
    ]

    async def write() -> None:
        for server, tool, outcome in decisions:
            entry = {"server": server, "tool": tool, "exposed": f"{server}__{tool}", "tier": "confirm"}
            await store.audit(
                {**entry, "outcome": outcome, "reason": "r", "action": "will run", "client": None}
            )

    asyncio.run(write())
    newest = store.audit_page(limit=3)
    assert [r["tool"] for r in newest] == ["write_file", "convert_time", "write_file"]
    older = store.audit_page(limit=3, before=newest[-1]["seq"])
    assert [r["tool"] for r in older] == ["get_current_time"]
    assert [r["outcome"] for r in store.audit_page(server="fs")] == ["approved", "declined (decline)"]
    assert [r["server"] for r in store.audit_page(tool="time__convert_time")] == ["time"]
    assert [r["tool"] for r in store.audit_page(outcome="allowed")] == ["convert_time", "get_current_time"]
    assert store.audit_page(server="time", outcome="approved") == []
    store.close()
