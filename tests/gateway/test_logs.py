"""gateway.logs: the one-processor JSON chain writes what the structlog chain it replaces wrote."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import orjson

from gateway.logs import _json_line, _UtcStamp

_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")


def test_the_timestamp_is_iso_utc_with_z_like_structlogs_time_stamper() -> None:
    stamp = _UtcStamp()
    before = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    text = stamp()
    assert _ISO.match(text), text
    parsed = datetime.fromisoformat(text[:-1])
    assert abs((parsed - before).total_seconds()) < 5


def test_a_line_has_request_id_first_then_fields_event_level_and_ts() -> None:
    render = _json_line(_UtcStamp())
    line = render(None, "info", {"method": "POST", "request_id": "r1", "status": 200, "event": "request"})
    obj = orjson.loads(line)
    assert list(obj) == ["request_id", "method", "status", "event", "level", "ts"]
    assert obj["level"] == "info" and obj["request_id"] == "r1"


def test_a_null_request_id_is_dropped_and_warn_is_named_warning() -> None:
    render = _json_line(_UtcStamp())
    obj = orjson.loads(render(None, "warn", {"request_id": None, "event": "x"}))
    assert "request_id" not in obj and obj["level"] == "warning"


def test_an_exception_is_rendered_as_text() -> None:
    render = _json_line(_UtcStamp())
    try:
        raise ValueError("boom")
    except ValueError as err:
        obj = orjson.loads(render(None, "error", {"event": "failed", "exc_info": err}))
    assert "ValueError: boom" in obj["exception"]
