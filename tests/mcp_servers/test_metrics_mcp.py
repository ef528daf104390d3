"""MCP tool calls through ``/mcp`` are counted in ``/metrics`` by server, tool and outcome, with
the trust decision that let them through and the server's health gauge."""

from __future__ import annotations

import httpx
from mcp import Client
from mcp_harness import McpGateway
from prometheus_client.parser import text_string_to_metric_families


async def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with httpx.AsyncClient(timeout=10) as http:
        got = await http.get(f"{url}/metrics")
    assert got.status_code == 200
    out = {}
    for family in text_string_to_metric_families(got.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_a_tool_call_through_mcp_counts_its_outcome_trust_decision_and_server_health(
    gw: McpGateway,
) -> None:
    before = await _scrape(gw.url)  # the session's gateway: other tests' calls count too
    async with Client(gw.mcp_url) as client:
        await client.call_tool("github__echo", {"text": "hi"})
        await client.call_tool("github__echo", {"text": "again"})
    after = await _scrape(gw.url)
    s = {k: v - before.get(k, 0.0) for k, v in after.items()}
    call = (("outcome", "ok"), ("server", "github"), ("tool", "echo"))
    assert s[("turnstile_mcp_tool_calls_total", call)] == 2
    assert s[("turnstile_mcp_tool_call_duration_seconds_count", (("server", "github"),))] == 2
    allowed = {k: v for k, v in s.items() if k[0] == "turnstile_mcp_trust_decisions_total"}
    github = [v for k, v in allowed.items() if {("server", "github"), ("outcome", "allowed")} <= set(k[1])]
    assert sum(github) == 2
    assert after[("turnstile_mcp_server_up", (("server", "github"),))] == 1  # a gauge: its value
