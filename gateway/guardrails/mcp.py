"""Guardrails on a tool result relayed by ``/mcp`` (the endpoint's ``guardrails`` hook,
:class:`mcp_servers.endpoint.McpEndpoint`): its text blocks checked at the ``tool_output``
stage; a redacted result keeps its blocks with the text redacted and the strings of its
``structuredContent`` redacted in place (its output schema still holds); a blocked one
becomes an ``is_error`` result naming the kinds found (never the matched text)."""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

from gateway.guardrails.engine import Guardrails

BLOCKED = "blocked by the gateway's guardrails: the tool's output held {reason}; it was not passed on"


class McpGuard:
    """The ``/mcp`` hook over ``guardrails``."""

    def __init__(self, guardrails: Guardrails) -> None:
        self.guardrails = guardrails

    async def tool_result(
        self, result: CallToolResult, *, server: str, tool: str, client: str | None
    ) -> CallToolResult:
        """``result`` checked (see the module docstring)."""
        g = self.guardrails
        if not g.stage_on("tool_output"):
            return result
        context: dict[str, Any] = {"server": server, "tool": tool, "client": client}
        blocks = [b for b in result.content if isinstance(b, TextContent)]
        texts, blocked = await g.check_all("tool_output", [b.text for b in blocks], context)
        structured = result.structured_content
        if blocked is None and structured is not None:
            structured, blocked = await self._structured(structured, context)
        if blocked is not None:
            text = BLOCKED.format(reason=blocked)
            return CallToolResult(
                content=[TextContent(type="text", text=text)], is_error=True, _meta=result.meta
            )
        changed = {id(b): t for b, t in zip(blocks, texts, strict=True) if t != b.text}
        if not changed and structured == result.structured_content:
            return result
        content = [
            TextContent(type="text", text=changed[id(b)], annotations=b.annotations)
            if id(b) in changed
            else b
            for b in result.content
        ]
        return result.model_copy(update={"content": content, "structured_content": structured})

    async def _structured(self, value: Any, context: dict[str, Any]) -> tuple[Any, str | None]:
        """``value`` (structured content) with each string in it checked (not recorded again:
        it is a copy of the text blocks' data), redacted in place so the shape its output schema
        gives still holds; or the reason when one is blocked."""
        if isinstance(value, str):
            checked = await self.guardrails.check("tool_output", value, context, record=False)
            if checked.action == "block":
                return value, checked.reason
            return checked.text, None
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                out[key], blocked = await self._structured(item, context)
                if blocked is not None:
                    return value, blocked
            return out, None
        if isinstance(value, list):
            items: list[Any] = []
            for item in value:
                new, blocked = await self._structured(item, context)
                if blocked is not None:
                    return value, blocked
                items.append(new)
            return items, None
        return value, None
