from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.transcript import TranscriptWriter, TurnRecord, recent


def _record(i: int) -> TurnRecord:
    return TurnRecord(
        request_id=f"r{i}", ts=1000.0 + i, client_dialect="openai_chat", requested_model="demo", stream=False,
        status=200, deployment="demo", usage={"input_tokens": 3, "output_tokens": 4}, cost_usd=0.0,
        request={"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
    )


async def test_every_appended_turn_is_written_before_close_returns(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, maxsize=8, batch=3)
    await writer.start()
    for i in range(50):
        await writer.append(_record(i))
    await writer.close()
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM turns").fetchone()
    assert rows == (50,)


async def test_recent_returns_newest_first_with_usage_columns(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db)
    await writer.start()
    for i in range(5):
        await writer.append(_record(i))
    await writer.flush()
    rows = recent(db, limit=2)
    await writer.close()
    assert [r["request_id"] for r in rows] == ["r4", "r3"]
    assert rows[0]["input_tokens"] == 3 and rows[0]["output_tokens"] == 4
