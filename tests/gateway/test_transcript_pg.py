"""The transcript on PostgreSQL (:mod:`gateway.transcript_pg`): the same writer, one shared
database. Each test gets a fresh database, dropped afterwards; without PostgreSQL the tests
skip with the reason unless ``TURNSTILE_REQUIRE_SERVICES=1``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import psycopg
import pytest
from standins.cluster import drop_database, fresh_database

from gateway.transcript import TranscriptWriter, TurnRecord, recent
from gateway.transcript_pg import is_postgres_url


@pytest.fixture
def pg_url() -> Iterator[str]:
    try:
        url = fresh_database()
    except psycopg.Error as err:
        reason = f"PostgreSQL is unreachable ({type(err).__name__}: {err})"
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + "; TURNSTILE_REQUIRE_SERVICES=1 requires it")
        pytest.skip(reason)
    yield url
    drop_database(url)


def _record(i: int, **usage: int) -> TurnRecord:
    return TurnRecord(
        request_id=f"r{i}",
        ts=1000.0 + i,
        client_dialect="openai_chat",
        requested_model="demo",
        stream=False,
        status=200,
        deployment="demo",
        usage=usage or {"input_tokens": 3, "output_tokens": 4},
        cost_usd=0.25,
        request={"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
    )


def _ids(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT request_id FROM turns ORDER BY ts")]


def test_only_postgres_urls_name_the_postgres_transcript() -> None:
    assert is_postgres_url("postgresql://h/db") and is_postgres_url("postgres://h/db")
    assert not is_postgres_url("turnstile.db") and not is_postgres_url(None)


async def test_turns_written_to_postgres_are_read_back_newest_first(pg_url: str) -> None:
    writer = TranscriptWriter(pg_url)
    await writer.start()
    for i in range(5):
        await writer.append(_record(i))
    assert await writer.commit(_record(5)) is True
    rows = recent(pg_url, limit=2)
    await writer.close()
    assert [r["request_id"] for r in rows] == ["r5", "r4"]
    assert rows[0]["input_tokens"] == 3 and rows[0]["cost_usd"] == 0.25 and rows[0]["stream"] == 0
    assert rows[0]["key_id"] is None and "team_id" in rows[0]


async def test_two_writers_share_one_postgres_transcript(pg_url: str) -> None:
    first, second = TranscriptWriter(pg_url), TranscriptWriter(pg_url)
    await first.start()
    await second.start()
    await first.append(_record(0))
    await second.append(_record(1))
    await first.close()
    await second.close()
    assert _ids(pg_url) == ["r0", "r1"]


async def test_a_duplicate_or_unstorable_row_is_skipped_and_the_rest_of_its_batch_kept(pg_url: str) -> None:
    writer = TranscriptWriter(pg_url)
    await writer.start()
    too_big = _record(3, input_tokens=2**64, output_tokens=1)  # past PostgreSQL's BIGINT
    for record in (_record(0), _record(1), _record(1), _record(2), too_big, _record(4)):
        assert writer.try_append(record)
    await asyncio.wait_for(writer.close(), 20)  # a bound, not a wait
    assert _ids(pg_url) == ["r0", "r1", "r2", "r4"]
