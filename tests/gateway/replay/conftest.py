"""A replay silences structlog below CRITICAL for its run (gateway/replay/runner.py); each test
here puts the configuration back afterwards, so that a later test's captured logs (e.g.
tests/gateway/test_transcript.py's) are not filtered by it, whatever order the tests run in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
