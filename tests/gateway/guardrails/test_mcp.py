"""Guardrails on ``/mcp``: a tool result relayed to an MCP client is checked like one entering
the tool loop — redacted, or an error result when blocked — and each action is in the MCP
audit and the metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)

from gateway.config import GuardrailsConfig
from gateway.guardrails.engine import Guardrails
from gateway.guardrails.mcp import MAX_DEPTH, McpGuard
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


class _Audit:
    """Collects audit entries."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    async def __call__(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)


def _direct(**cfg: Any) -> tuple[McpGuard, _Audit]:
    audit = _Audit()
    return McpGuard(Guardrails(GuardrailsConfig(enabled=True, **cfg), audit=audit)), audit


async def _run(guard: McpGuard, result: CallToolResult) -> CallToolResult:
    return await guard.tool_result(result, server="ops", tool="dump", client=None)


def _embedded(text: str) -> EmbeddedResource:
    res = TextResourceContents(uri="file:///etc/app.env", mime_type="text/plain", text=text)
    return EmbeddedResource(type="resource", resource=res)


async def test_a_secret_in_an_embedded_text_resource_is_redacted() -> None:
    guard, audit = _direct()
    result = await _run(guard, CallToolResult(content=[_embedded(LEAK)]))
    block = result.content[0]
    assert isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents)
    assert KEY not in block.resource.text and "[REDACTED:aws_access_key_id]" in block.resource.text
    assert str(block.resource.uri) == "file:///etc/app.env"
    assert any(e["check"] == "secrets" for e in audit.entries)


async def test_a_secret_in_an_embedded_text_resource_can_block_the_result() -> None:
    guard, _ = _direct(secrets="block")
    result = await _run(guard, CallToolResult(content=[_embedded(LEAK)]))
    assert result.is_error and KEY not in str(result.model_dump())


async def test_a_secret_in_a_structured_dict_key_is_redacted() -> None:
    guard, _ = _direct()
    result = await _run(
        guard, CallToolResult(content=[], structured_content={"creds": {KEY: "active"}, "n": 1})
    )
    assert KEY not in str(result.model_dump())
    assert result.structured_content == {"creds": {"[REDACTED:aws_access_key_id]": "active"}, "n": 1}


async def test_a_secret_only_in_structured_content_is_audited_once() -> None:
    guard, audit = _direct()
    result = await _run(
        guard,
        CallToolResult(
            content=[TextContent(type="text", text="ok")],
            structured_content={"a": f"k={KEY}", "b": [f"again {KEY}"]},
        ),
    )
    assert KEY not in str(result.model_dump())
    secrets = [e for e in audit.entries if e["check"] == "secrets"]
    assert len(secrets) == 1 and "aws_access_key_id" in secrets[0]["kinds"]


async def test_structured_content_nested_too_deep_is_blocked_without_recursion_error() -> None:
    guard, _ = _direct()
    deep: Any = "leaf"
    for _ in range(5000):
        deep = {"x": [deep]}
    result = await _run(guard, CallToolResult.model_construct(content=[], structured_content=deep))
    assert result.is_error and "too_deep" in result.content[0].text  # type: ignore[union-attr]


async def test_structured_content_at_the_depth_bound_is_still_checked() -> None:
    guard, _ = _direct()
    deep: Any = f"k={KEY}"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    result = await _run(guard, CallToolResult.model_construct(content=[], structured_content={"d": deep}))
    assert result.is_error  # 65 levels: one past the bound
    shallow: Any = f"k={KEY}"
    for _ in range(MAX_DEPTH - 1):
        shallow = [shallow]
    ok = await _run(guard, CallToolResult.model_construct(content=[], structured_content={"d": shallow}))
    assert not ok.is_error and KEY not in str(ok.structured_content)
