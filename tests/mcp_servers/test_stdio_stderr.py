"""A stdio server's stderr in the gateway's log (:mod:`mcp_servers.stdio_stderr`): one event per
line with the line as a string value, each line cut to a bound, a bounded rate of lines and
bytes with the rest counted, dropped and summarised. A fake clock: nothing waits."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest
from structlog.testing import capture_logs

from mcp_servers.config import McpServerSpec
from mcp_servers.stdio_stderr import DROP_SUMMARY_S, StderrLimits, StderrLog, drain_stderr

pytestmark = pytest.mark.usefixtures("info_logs")

LIMITS = StderrLimits(line_bytes=100, lines_per_s=5, bytes_per_s=1000)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


def test_each_stderr_line_is_one_event_whose_line_is_a_string_value() -> None:
    forged = b'{"event": "request", "method": "POST", "status": 200, "level": "info"}'
    with capture_logs() as logs:
        sink = StderrLog("srv", LIMITS, clock=Clock())
        sink.feed(forged + b"\nstarting up\r\n")
        sink.feed(b"half a li")
        sink.feed(b"ne\n")
    events = _events(logs, "mcp_server_stderr")
    assert [e["line"] for e in events] == [forged.decode(), "starting up", "half a line"]
    assert all(e["server"] == "srv" and e["omitted_bytes"] == 0 for e in events)
    assert all(b"\n" not in orjson.dumps(e) for e in events)  # one log line each, whatever the text


def test_control_characters_are_escaped_and_bytes_that_are_not_utf8_replaced() -> None:
    with capture_logs() as logs:
        StderrLog("srv", LIMITS, clock=Clock()).feed(b"\x1b[2Jred\tok\x00\xff\n")
    assert _events(logs, "mcp_server_stderr")[0]["line"] == "\\x1b[2Jred\tok\\x00\ufffd"


def test_a_long_line_is_cut_to_line_bytes_with_the_count_of_bytes_omitted() -> None:
    with capture_logs() as logs:
        sink = StderrLog("srv", StderrLimits(100, 5, 100_000), clock=Clock())
        for _ in range(4):
            sink.feed(b"E" * 16384)
        sink.feed(b"\n")
    (event,) = _events(logs, "mcp_server_stderr")
    assert event["line"] == "E" * 100 and event["bytes"] == 65536 and event["omitted_bytes"] == 65436


def test_lines_over_the_rate_are_counted_dropped_and_summarised_once_per_interval() -> None:
    clock = Clock()
    with capture_logs() as logs:
        sink = StderrLog("srv", LIMITS, clock=clock)
        sink.feed(b"x\n" * 50)  # the burst: 5 lines (one second's worth), 45 dropped
        clock.now += 1.0
        sink.feed(b"y\n" * 50)  # refilled: 5 more
        assert _events(logs, "mcp_server_stderr_dropped") == []  # not before the interval
        clock.now += DROP_SUMMARY_S
        sink.feed(b"z\n")
        sink.feed(b"z\n" * 5)
    lines = [e["line"] for e in _events(logs, "mcp_server_stderr")]
    assert lines == ["x"] * 5 + ["y"] * 5 + ["z"] * 5
    (summary,) = _events(logs, "mcp_server_stderr_dropped")
    assert summary["server"] == "srv" and summary["lines"] == 90 and summary["bytes"] == 90
    assert summary["seconds"] == pytest.approx(DROP_SUMMARY_S + 1.0)
    assert sink.dropped_lines == 1  # the sixth z, in the next interval


def test_the_byte_budget_drops_lines_the_line_budget_would_let_through() -> None:
    with capture_logs() as logs:
        sink = StderrLog("srv", StderrLimits(100, 100, 250), clock=Clock())
        sink.feed((b"E" * 99 + b"\n") * 10)
        sink.close()
    assert len(_events(logs, "mcp_server_stderr")) == 2  # 2 x 99 bytes of 250
    assert _events(logs, "mcp_server_stderr_dropped")[0]["lines"] == 8


def test_closing_logs_the_unterminated_last_line_and_summarises_what_was_dropped() -> None:
    with capture_logs() as logs:
        sink = StderrLog("srv", StderrLimits(100, 1, 1000), clock=Clock())
        sink.feed(b"first\nsecond\nlast words")
        sink.close()
    assert [e["line"] for e in _events(logs, "mcp_server_stderr")] == ["first"]
    (summary,) = _events(logs, "mcp_server_stderr_dropped")
    assert summary["lines"] == 2 and summary["bytes"] == len("second") + len("last words")


async def test_draining_reads_everything_and_ends_with_the_stream() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](100)

    class Bytes:  # a byte stream over the memory stream: one chunk per receive, EndOfStream when closed
        async def receive(self, max_bytes: int = 65536) -> bytes:
            return await receive.receive()

    done = anyio.Event()
    with capture_logs() as logs:
        for _ in range(50):
            await send.send(b"E" * 10_000 + b"\n")
        send.close()
        with anyio.fail_after(10):
            await drain_stderr(Bytes(), StderrLog("srv", LIMITS, clock=Clock()), done)  # type: ignore[arg-type]
    assert done.is_set()
    assert len(_events(logs, "mcp_server_stderr")) == 5
    assert _events(logs, "mcp_server_stderr_dropped")[0]["lines"] == 45


def test_the_stderr_bounds_are_in_the_server_config_with_documented_defaults() -> None:
    spec = McpServerSpec.model_validate({"id": "s", "transport": {"type": "stdio", "command": "x"}})
    assert (spec.stderr_line_bytes, spec.stderr_lines_per_s, spec.stderr_bytes_per_s) == (2048, 20, 16384)
    with pytest.raises(ValueError, match="stderr_bytes_per_s"):
        McpServerSpec.model_validate(
            {"id": "s", "transport": {"type": "stdio", "command": "x"}, "stderr_bytes_per_s": 100}
        )
