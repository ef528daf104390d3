"""Guardrails on ``/mcp``: a tool result relayed to an MCP client is checked like one entering
the tool loop — redacted, or an error result when blocked — and each action is in the MCP
audit and the metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations

from gateway.config import GuardrailsConfig
from gateway.guardrails.engine import Guardrails
from gateway.guardrails.mcp import McpGuard
from gateway.metrics import Metrics
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.endpoint import McpEndpoint
from mcp_servers.registry import McpRegistry
from mcp_servers.store import McpStore

KEY = "AKIA" + "Q7LMZ2XK4RT9BWNE"  # an AWS-format key id made up for the test
LEAK = f"config dump: aws_access_key_id={KEY} owner=ann@example.com"


class Leaky:
    """An upstream whose one tool returns a secret and an email."""

    def __init__(self, spec: McpServerSpec, *, on_tools: Any, **_: Any) -> None:
        self.spec, self.id, self.on_tools = spec, spec.id, on_tools
        self.state, self.last_error = "ready", None

    def start(self) -> None:
        ro = ToolAnnotations(read_only_hint=True)
        self.on_tools(self.id, [Tool(name="dump", input_schema={"type": "object"}, annotations=ro)])

    async def stop(self) -> None:
        self.state = "stopped"

    async def wait_ready(self, timeout_s: float) -> bool:
        return True

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state}

    async def call_tool(self, name: str, args: dict[str, Any], **_: Any) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text=LEAK)], structured_content={"dump": LEAK}
        )


@pytest.fixture
async def endpoint(tmp_path: Path) -> AsyncIterator[McpEndpoint]:
    spec = McpServerSpec.model_validate({"id": "ops", "transport": {"type": "stdio", "command": "x"}})
    reg = McpRegistry(
        McpConfig(servers=[spec]),
        store=McpStore(tmp_path / "db.sqlite"),
        read_env=lambda _: None,
        upstream_factory=Leaky,
    )
    await reg.start()
    try:
        yield McpEndpoint(reg)
    finally:
        await reg.close()


def _guard(endpoint: McpEndpoint, metrics: Metrics, **cfg: Any) -> None:
    async def audit(entry: dict[str, Any]) -> None:
        await endpoint.registry.store.audit(
            {
                "server": entry["server"],
                "tool": entry["tool"],
                "exposed": entry["tool"],
                "tier": "guardrail",
                "outcome": f"guardrail_{entry['action']}",
                "reason": f"{entry['check']}: {', '.join(entry['kinds'])}",
                "action": entry["stage"],
                "client": entry.get("client"),
            }
        )

    g = Guardrails(GuardrailsConfig(enabled=True, **cfg), audit=audit, count=metrics.guardrail)
    endpoint.guardrails = McpGuard(g)


async def test_a_relayed_tool_result_is_redacted_and_the_action_audited(endpoint: McpEndpoint) -> None:
    metrics = Metrics()
    _guard(endpoint, metrics)
    async with Client(endpoint.server) as client:
        result = await client.call_tool("ops__dump", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert text == "config dump: aws_access_key_id=[REDACTED:aws_access_key_id] owner=[REDACTED:email]"
    assert result.structured_content == {"dump": text} and not result.is_error  # redacted in place
    outcomes = {(r["outcome"], r["reason"]) for r in endpoint.registry.store.audit_rows()}
    assert ("guardrail_redact", "secrets: aws_access_key, aws_access_key_id") in outcomes
    assert ("guardrail_redact", "pii: email") in outcomes
    assert metrics.guardrail_actions.labels("tool_output", "secrets", "redact")._value.get() == 1


async def test_a_blocked_relayed_result_is_an_error_result_naming_the_kinds(endpoint: McpEndpoint) -> None:
    _guard(endpoint, Metrics(), secrets="block")
    async with Client(endpoint.server) as client:
        result = await client.call_tool("ops__dump", {})
    assert result.is_error and KEY not in str(result.model_dump())
    assert "secrets:aws_access_key_id" in result.content[0].text  # type: ignore[union-attr]


async def test_without_guardrails_the_result_passes_unchanged(endpoint: McpEndpoint) -> None:
    async with Client(endpoint.server) as client:
        result = await client.call_tool("ops__dump", {})
    assert result.content[0].text == LEAK  # type: ignore[union-attr]
