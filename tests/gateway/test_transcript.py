from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from gateway import transcript
from gateway.transcript import TranscriptWriter, TurnRecord, recent


def _record(i: int) -> TurnRecord:
    return TurnRecord(
        request_id=f"r{i}",
        ts=1000.0 + i,
        client_dialect="openai_chat",
        requested_model="demo",
        stream=False,
        status=200,
        deployment="demo",
        usage={"input_tokens": 3, "output_tokens": 4},
        cost_usd=0.0,
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


def test_a_record_holding_schema_models_stores_the_same_row_as_one_holding_their_dumps() -> None:
    from gateway.schema import (
        AssistantMessage,
        Request,
        Response,
        TextPart,
        Usage,
        UserMessage,
        WithheldToolCall,
    )

    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], max_output_tokens=5)
    response = Response(
        id="r",
        model="m",
        message=AssistantMessage(content=[TextPart(text="yo")]),
        stop_reason="stop",
        usage=Usage(input_tokens=3, output_tokens=4, cost_usd=0.5),
    )
    withheld = [WithheldToolCall(id="c1", name="f", raw_arguments="{", reason="length")]
    common = dict(
        request_id="x",
        ts=1.0,
        client_dialect="openai_chat",
        requested_model="m",
        stream=False,
        status=200,
        cost_usd=0.5,
    )
    as_models = TurnRecord(
        **common,
        usage=response.usage,
        withheld=withheld,
        request=request,  # type: ignore[arg-type]
        response=response,
    )
    as_dicts = TurnRecord(
        **common,  # type: ignore[arg-type]
        usage=response.usage.model_dump(),
        withheld=[w.model_dump() for w in withheld],
        request=request.model_dump(mode="json", exclude_none=True),
        response=response.model_dump(mode="json"),
    )
    assert as_models.row() == as_dicts.row()


async def test_a_batch_longer_than_one_statement_is_written_whole_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript, "MAX_ROWS_PER_STATEMENT", 3)
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, batch=64)
    await writer.start()
    for i in range(7):
        assert writer.try_append(_record(i))
    await writer.flush()
    assert writer.written == 7
    await writer.close()
    ids = [r[0] for r in sqlite3.connect(db).execute("SELECT request_id FROM turns ORDER BY ts")]
    assert ids == [f"r{i}" for i in range(7)]


async def test_a_duplicate_request_id_skips_that_row_and_keeps_the_rest_of_its_batch(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, batch=64)
    await writer.start()
    for i in (0, 1, 1, 2):
        assert writer.try_append(_record(i))
    await writer.close()
    ids = [r[0] for r in sqlite3.connect(db).execute("SELECT request_id FROM turns ORDER BY ts")]
    assert ids == ["r0", "r1", "r2"]


async def test_a_value_that_is_not_json_is_stored_as_text_and_the_turn_kept(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db)
    await writer.start()
    record = _record(0)
    record.attempts = [{"deployment": "demo", "odd": {1, 2}}]
    await writer.append(record)
    await writer.close()
    (attempts,) = sqlite3.connect(db).execute("SELECT attempts FROM turns").fetchone()
    assert '"odd":"{1, 2}"' in attempts


def test_insert_statements_split_rows_and_keep_column_order() -> None:
    rows = [_record(i).row() for i in range(5)]
    statements = transcript.insert_statements(rows)
    assert len(statements) == 1
    sql, params = statements[0]
    assert sql.count("(?") == 5 and len(params) == 5 * len(transcript.COLUMNS)
    assert params[: len(transcript.COLUMNS)] == list(rows[0])


async def test_a_row_sqlite_cannot_hold_is_skipped_and_the_writer_keeps_writing(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, batch=64)
    await writer.start()
    too_big = _record(1)
    too_big.usage = {"input_tokens": 2**64, "output_tokens": 4}  # past SQLite's 64-bit INTEGER
    not_json = _record(3)
    not_json.attempts = [{"deployment": "demo", "tokens": 2**70}]  # past orjson's 64 bits
    for record in (_record(0), too_big, _record(2), not_json):
        assert writer.try_append(record)
    await asyncio.wait_for(writer.flush(), 10)  # a bound, not a wait: a retried row never ends
    assert writer.try_append(_record(4))
    await asyncio.wait_for(writer.close(), 10)
    ids = [r[0] for r in sqlite3.connect(db).execute("SELECT request_id FROM turns ORDER BY ts")]
    assert ids == ["r0", "r2", "r4"]
