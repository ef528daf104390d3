"""Guardrails on a tool result relayed by ``/mcp`` (the endpoint's ``guardrails`` hook,
:class:`mcp_servers.endpoint.McpEndpoint`), checked at the ``tool_output`` stage as one unit
(:meth:`Guardrails.check_all`: one audit entry per check and action for the whole result):
its text blocks, the text of its embedded text resources (``resource.text``), and every string
of its ``structuredContent`` — values and dict keys alike. A redacted result keeps its blocks
with the text redacted and its structured content redacted in place (a key by its redacted
text; its output schema still holds); a blocked one becomes an ``is_error`` result naming the
kinds found (never the matched text). Structured content nested deeper than :data:`MAX_DEPTH`
is blocked (``structured:too_deep``), never walked further."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp.types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents

from gateway.guardrails.engine import Guardrails

BLOCKED = "blocked by the gateway's guardrails: the tool's output held {reason}; it was not passed on"
MAX_DEPTH = 64
"""Levels of dicts and lists in ``structuredContent`` walked; deeper content is blocked."""

TOO_DEEP = f"structured:too_deep (nested deeper than {MAX_DEPTH} levels)"


class _TooDeep(Exception):
    """Structured content nested deeper than :data:`MAX_DEPTH` (caught in this module)."""


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Each string in ``value`` (dict keys before their values), in walk order; raises
    :class:`_TooDeep` past :data:`MAX_DEPTH` levels."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        if depth >= MAX_DEPTH:
            raise _TooDeep
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    yield key
                yield from _strings(item, depth + 1)
        else:
            for item in value:
                yield from _strings(item, depth + 1)


def _rebuild(value: Any, new: Iterator[str]) -> Any:
    """``value`` with its strings replaced, in :func:`_strings`' order, by ``new``'s."""
    if isinstance(value, str):
        return next(new)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            k = next(new) if isinstance(key, str) else key
            out[k] = _rebuild(item, new)
        return out
    if isinstance(value, list):
        return [_rebuild(item, new) for item in value]
    return value


def _blocked(result: CallToolResult, reason: str) -> CallToolResult:
    text = BLOCKED.format(reason=reason)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True, _meta=result.meta)


class McpGuard:
    """The ``/mcp`` hook over ``guardrails``."""

    def __init__(self, guardrails: Guardrails) -> None:
        self.guardrails = guardrails

    async def tool_result(
        self, result: CallToolResult, *, server: str, tool: str, client: str | None
    ) -> CallToolResult:
        """``result`` checked (see the module docstring): itself when nothing changed, a copy
        with the redacted strings, or an ``is_error`` result when blocked."""
        g = self.guardrails
        if not g.stage_on("tool_output"):
            return result
        context: dict[str, Any] = {"server": server, "tool": tool, "client": client}
        texts: list[str] = []
        for b in result.content:
            if isinstance(b, TextContent):
                texts.append(b.text)
            elif isinstance(b, EmbeddedResource) and isinstance(b.resource, TextResourceContents):
                texts.append(b.resource.text)
        n_blocks = len(texts)
        structured = result.structured_content
        try:
            texts += list(_strings(structured)) if structured is not None else []
        except _TooDeep:
            return _blocked(result, TOO_DEEP)
        new, blocked = await g.check_all("tool_output", texts, context)
        if blocked is not None:
            return _blocked(result, blocked)
        if new == texts:
            return result
        replaced = iter(new[:n_blocks])
        content: list[Any] = []
        for b in result.content:
            if isinstance(b, TextContent):
                text = next(replaced)
                content.append(b if text == b.text else b.model_copy(update={"text": text}))
            elif isinstance(b, EmbeddedResource) and isinstance(b.resource, TextResourceContents):
                text = next(replaced)
                if text == b.resource.text:
                    content.append(b)
                else:
                    resource = b.resource.model_copy(update={"text": text})
                    content.append(b.model_copy(update={"resource": resource}))
            else:
                content.append(b)
        if structured is not None:
            structured = _rebuild(structured, iter(new[n_blocks:]))
        return result.model_copy(update={"content": content, "structured_content": structured})
