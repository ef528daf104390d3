"""The console's query tests run on both transcript stores: a SQLite file and a fresh PostgreSQL
database (dropped afterwards). Without PostgreSQL its cases skip with the reason, unless
``TURNSTILE_REQUIRE_SERVICES=1``, in which case they fail."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from console_support import Transcript


@pytest.fixture(params=["sqlite", "postgres"])
async def location(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """Where an empty transcript is: a SQLite file path or a PostgreSQL URL."""
    if request.param == "sqlite":
        yield str(tmp_path / "transcript.db")
        return
    import psycopg
    from standins.cluster import drop_database, fresh_database

    try:
        url = fresh_database()
    except psycopg.Error as err:
        reason = f"PostgreSQL is unreachable ({type(err).__name__}: {err})"
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + "; TURNSTILE_REQUIRE_SERVICES=1 requires it")
        pytest.skip(reason)
    yield url
    drop_database(url)


@pytest.fixture
async def transcript(location: str) -> AsyncIterator[Transcript]:
    """An empty transcript on each store (see :func:`location`)."""
    t = Transcript(location)
    yield t
    await t.reader.close()
