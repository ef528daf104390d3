"""A hostile stdio server cannot wedge its connection, and its state is told honestly (issue 11,
item 14).

The real gateway runs ``hostile_server.py``; each test makes it misbehave on the wire (a 100 MiB
result, junk lines, a message glued to junk, bytes that are not UTF-8, a server that stops
answering) and checks that the call after it either succeeds (on the same connection or after a
restart) or fails at once with an error naming the server, and that ``/health`` never says
``ready`` for a connection that is wedged.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.types import TextContent
from mcp_harness import McpGateway, start_gateway

HOSTILE = Path(__file__).with_name("hostile_server.py")
TOOLS = ("echo", "pid", "flood", "junk", "glued", "badbytes", "freeze")
MAX_JUNK_LINES = 5


@pytest.fixture(scope="module")
def hgw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """A gateway with the hostile server (5 s call timeout, 1 s liveness probe)."""
    spec = {
        "id": "hostile",
        "transport": {"type": "stdio", "command": sys.executable, "args": [str(HOSTILE)]},
        "call_timeout_s": 5,
        "max_junk_lines": MAX_JUNK_LINES,
        "trust": dict.fromkeys(TOOLS, "allow"),
    }
    yield from start_gateway(tmp_path_factory.mktemp("hostile"), [spec], probe_timeout_s=1.0)


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def _status(gw: McpGateway) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=gw.url, timeout=10) as http:
        servers = (await http.get("/health")).json()["mcp"]["servers"]
    return dict(next(s for s in servers if s["id"] == "hostile"))


async def _call(gw: McpGateway, tool: str, args: dict[str, Any] | None = None) -> tuple[bool, str]:
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool(f"hostile__{tool}", args or {})
    return bool(result.is_error), _text(result)


def _ready_again(gw: McpGateway) -> None:
    assert gw.loop.call(gw.registry.upstream("hostile").wait_ready(30), timeout=40)


@pytest.mark.parametrize("order", ["first", "last", "middle"])
async def test_a_100_mib_result_is_refused_unread_and_the_next_call_succeeds(
    hgw: McpGateway, order: str
) -> None:
    """The refused answer's request is found by the id at either end of the line, or (id in the
    middle) as the only request in flight."""
    before = await _status(hgw)
    failed, text = await _call(hgw, "flood", {"mb": 100, "order": order})
    assert failed and "'hostile'" in text and "max_message_bytes" in text and "flood" in text
    assert await _call(hgw, "echo", {"text": "after the flood"}) == (False, "after the flood")
    after = await _status(hgw)
    assert after["state"] == "ready" and after["restarts"] == before["restarts"]  # same connection
    assert after["wire"]["oversize_messages"] == before["wire"]["oversize_messages"] + 1


async def test_a_few_junk_lines_are_counted_and_dropped(hgw: McpGateway) -> None:
    before = await _status(hgw)
    assert await _call(hgw, "junk", {"lines": MAX_JUNK_LINES}) == (False, "junk done")
    after = await _status(hgw)
    assert after["state"] == "ready" and after["restarts"] == before["restarts"]
    assert after["wire"]["junk_lines"] == before["wire"]["junk_lines"] + MAX_JUNK_LINES
    assert "not JSON-RPC" in after["wire"]["last_fault"]


async def test_a_message_glued_to_junk_and_bytes_not_utf8_do_not_lose_the_answer(hgw: McpGateway) -> None:
    assert await _call(hgw, "glued") == (False, "glued done")
    assert await _call(hgw, "badbytes") == (False, "badbytes done")
    assert await _call(hgw, "echo", {"text": "fine"}) == (False, "fine")
    assert (await _status(hgw))["state"] == "ready"


async def test_a_flood_of_junk_restarts_the_connection_and_the_call_fails_naming_the_server(
    hgw: McpGateway,
) -> None:
    before = await _status(hgw)
    failed, text = await _call(hgw, "junk", {"lines": 50})
    assert failed and "'hostile'" in text and "not JSON-RPC" in text
    status = await _status(hgw)
    assert status["state"] != "ready" or status["restarts"] > before["restarts"]
    _ready_again(hgw)
    assert await _call(hgw, "echo", {"text": "new connection"}) == (False, "new connection")
    assert (await _status(hgw))["restarts"] > before["restarts"]


async def test_a_server_that_stops_answering_is_found_wedged_and_restarted(hgw: McpGateway) -> None:
    before = await _status(hgw)
    _, old_pid = await _call(hgw, "pid")
    failed, text = await _call(hgw, "freeze")
    assert failed and "'hostile'" in text and "did not answer within 5 s" in text
    status = await _status(hgw)  # never "ready" on the wedged connection
    assert status["state"] != "ready" or status["restarts"] > before["restarts"]
    if status["state"] == "degraded":
        assert "freeze" in status["reason"] and status["consecutive_failures"] >= 1
    # the next call waits for the probe's verdict: it fails at once naming the server, or runs on
    # a new connection; it never waits out its own timeout on the wedged one
    failed, text = await _call(hgw, "pid")
    assert (failed and "'hostile' is unavailable" in text) or (not failed and text != old_pid), text
    _ready_again(hgw)
    failed, new_pid = await _call(hgw, "pid")
    assert not failed and new_pid != old_pid
    after = await _status(hgw)
    assert after["restarts"] > before["restarts"] and "tools/list did not answer" in after["last_error"]
    assert after["last_ok"] >= status["since"]
