from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

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
    writer = TranscriptWriter(db, maxsize=8)
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
    writer = TranscriptWriter(db)
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
    writer = TranscriptWriter(db)
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
    writer = TranscriptWriter(db)
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


# ---------------------------------------------------------------------------- group commit


def _stored(db: Path) -> list[str]:
    """Request ids committed in ``db``, read through a connection of its own."""
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT request_id FROM turns ORDER BY ts")]
    finally:
        conn.close()


class _Store:
    """Wraps a writer's ``_write`` (it runs in the writer's thread): counts the rows of each
    transaction, can hold a write until released, and can fail writes as a locked file does."""

    def __init__(self, writer: TranscriptWriter) -> None:
        self.write = writer._write
        self.rows: list[int] = []  # rows per committed transaction
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()
        self.locked = False
        writer._write = self  # type: ignore[method-assign]

    def __call__(self, statements: list[tuple[str, list[Any]]]) -> None:
        self.entered.set()
        assert self.hold.wait(10)
        if self.locked:
            raise sqlite3.OperationalError("database is locked")
        self.write(statements)
        self.rows.append(sum(len(p) for _, p in statements) // len(transcript.COLUMNS))


async def test_a_commit_resolves_once_its_row_is_visible_to_another_connection(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db)
    await writer.start()
    for i in range(3):
        assert await asyncio.wait_for(writer.commit(_record(i)), 10) is True
        assert _stored(db)[-1] == f"r{i}"
    await writer.close()


async def test_rows_queued_while_a_write_is_in_flight_are_committed_together_in_the_next_transaction(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db)
    await writer.start()
    store = _Store(writer)
    store.hold.clear()
    first = writer.try_commit(_record(0))
    assert first is not None
    assert await asyncio.to_thread(store.entered.wait, 10)  # r0's transaction is in flight
    later = [writer.try_commit(_record(i)) for i in range(1, 10)]
    store.hold.set()
    assert await asyncio.wait_for(asyncio.gather(first, *later), 10) == [True] * 10  # type: ignore[arg-type]
    assert store.rows == [1, 9]  # no waiting for a batch to fill, and one transaction per cycle
    await writer.close()


async def test_when_a_row_commits_every_row_queued_before_it_is_committed_too(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db)
    await writer.start()
    store = _Store(writer)
    store.hold.clear()
    assert writer.try_append(_record(0))
    assert await asyncio.to_thread(store.entered.wait, 10)
    assert writer.try_append(_record(1)) and writer.try_append(_record(2))  # e.g. tool-loop step rows
    turn = writer.try_commit(_record(3))
    assert turn is not None
    store.hold.set()
    assert await asyncio.wait_for(turn, 10) is True
    assert _stored(db) == ["r0", "r1", "r2", "r3"]
    await writer.close()


async def test_a_store_that_cannot_commit_releases_the_waiter_after_the_bound_and_writes_the_row_later(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, commit_timeout_s=0.2)
    await writer.start()
    store = _Store(writer)
    store.locked = True
    with capture_logs() as logs:
        assert await asyncio.wait_for(writer.commit(_record(0)), 10) is False
    overdue = [e for e in logs if e["event"] == "transcript_commit_overdue"]
    assert overdue and overdue[0]["log_level"] == "error" and overdue[0]["request_ids"] == ["r0"]
    store.locked = False  # the store recovers: the kept row is written by the retries
    await asyncio.wait_for(writer.flush(), 10)
    assert _stored(db) == ["r0"]
    await writer.close()


async def test_a_full_queue_refuses_new_turns_after_the_bound_but_never_drops_a_row(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, maxsize=1, commit_timeout_s=0.2)
    await writer.start()
    store = _Store(writer)
    store.locked = True
    assert writer.accepting
    assert writer.try_append(_record(0))
    assert await asyncio.to_thread(store.entered.wait, 10)  # r0 taken: retried while locked
    assert writer.try_append(_record(1))  # the queue is full now
    assert not writer.accepting
    assert await asyncio.wait_for(writer.admit(), 10) is False  # a new turn is refused ...
    with capture_logs() as logs:
        await asyncio.wait_for(writer.append(_record(2)), 10)  # ... a running one keeps its row
    assert writer.dropped == 0 and not [e for e in logs if e["event"] == "transcript_row_dropped"]
    store.locked = False
    await asyncio.wait_for(writer.flush(), 10)
    assert writer.accepting and await writer.admit()
    await asyncio.wait_for(writer.close(), 10)
    assert _stored(db) == ["r0", "r1", "r2"]


async def test_an_overdue_commit_stops_admitting_turns_until_the_store_writes_again(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    writer = TranscriptWriter(db, commit_timeout_s=0.2)
    await writer.start()
    store = _Store(writer)
    store.locked = True
    assert await asyncio.wait_for(writer.commit(_record(0)), 10) is False  # overdue
    assert not writer.accepting
    store.locked = False
    assert await asyncio.wait_for(writer.admit(), 10) is True  # admitted once r0 is written
    assert _stored(db) == ["r0"]
    await writer.close()


async def test_a_row_that_arrives_after_close_is_logged_and_counted(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path / "t.db")
    await writer.start()
    await writer.close()
    with capture_logs() as logs:
        await writer.append(_record(0))
        assert await writer.commit(_record(1)) is False
    assert writer.dropped == 2
    assert [e["request_id"] for e in logs if e["event"] == "transcript_row_dropped"] == ["r0", "r1"]


def test_an_older_transcript_gets_the_added_columns_and_indexes_when_opened(tmp_path: Path) -> None:
    """A file made before virtual keys and session ids: ``key_id``, ``team_id`` and
    ``session_id`` are added (NULL in the old rows) with the session index, nothing else
    changes, and opening it again adds nothing."""
    from gateway.transcript import COLUMNS, SCHEMA_SQL, connect

    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    added = ",\n    key_id          TEXT,\n    team_id         TEXT,\n    session_id      TEXT"
    assert added in SCHEMA_SQL
    old.executescript(SCHEMA_SQL.replace(added, ""))
    old.execute(
        "INSERT INTO turns (request_id, ts, client_dialect, stream, status) VALUES ('r', 1, 'x', 0, 200)"
    )
    old.commit()
    old.close()
    for _ in range(2):
        conn = connect(path)
        cols = [r[1] for r in conn.execute("PRAGMA table_info(turns)")]
        conn.close()
        assert cols == list(COLUMNS)
    db = sqlite3.connect(path)
    assert db.execute("SELECT request_id, key_id, team_id, session_id FROM turns").fetchone() == (
        "r",
        None,
        None,
        None,
    )
    indexes = {r[1] for r in db.execute("PRAGMA index_list(turns)")}
    assert {"turns_ts", "turns_session"} <= indexes
