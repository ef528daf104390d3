"""Tool definitions in each provider's own tool format (for ``GET /v1/mcp/tools``).

A client that assembles its own model request asks the gateway for the MCP registry's tools
in its provider's shape:

* ``openai`` (Chat Completions): ``{"type": "function", "function": {"name", "description",
  "parameters"}}``; at most 128 tools (OpenAI API reference, ``tools``: "A max of 128 functions
  are supported"; also ``../shared/notes/mcp-sdk-2.md``).
* ``anthropic`` (Messages): ``{"name", "description", "input_schema"}``.
* ``gemini``: one ``{"functionDeclarations": [{"name", "description", "parameters"}]}`` entry,
  each made by :func:`gateway.providers.gemini_schema.function_declaration`, the function
  upstream Gemini requests use (parameters in Gemini's ``Schema`` subset).

For OpenAI and Anthropic, ``$ref`` into ``$defs``/``definitions`` is inlined (a recursive
reference is cut to ``{"type": "object"}``) and the definitions removed; ``required`` is kept.
Names are taken as given (the registry's exposed names already fit ``^[a-zA-Z0-9_-]{1,64}$``).
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from gateway.errors import InvalidRequest
from gateway.providers.gemini_schema import function_declaration
from gateway.schema import ToolDefinition

ToolFormat = Literal["openai", "anthropic", "gemini"]
FORMATS: tuple[str, ...] = ("openai", "anthropic", "gemini")
# Only limits with a documented source; None = no documented per-request tool-count limit.
MAX_TOOLS: dict[str, int | None] = {"openai": 128, "anthropic": None, "gemini": None}


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with local ``$ref``s (``#/$defs/X``, ``#/definitions/X``) replaced by their
    targets and the definition maps removed. Pure; a cycle is cut to ``{"type": "object"}``."""
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            defs.update({f"#/{key}/{name}": value for name, value in schema[key].items()})

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(n, seen) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in defs:
            if ref in seen:
                return {"type": "object"}
            target = walk(defs[ref], (*seen, ref))
            rest = {k: walk(v, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **rest}
        return {k: walk(v, seen) for k, v in node.items() if k not in ("$defs", "definitions")}

    return dict(walk(copy.deepcopy(schema), ()))


def render_tools(tools: list[ToolDefinition], fmt: str) -> list[dict[str, Any]]:
    """``tools`` in provider format ``fmt`` (see the module docstring).

    Raises :class:`InvalidRequest` (param ``format``) for an unknown format, or when there are
    more tools than the provider accepts in one request (the message gives both numbers).
    """
    if fmt not in FORMATS:
        raise InvalidRequest(f"unknown tool format {fmt!r}; use one of {', '.join(FORMATS)}", param="format")
    limit = MAX_TOOLS[fmt]
    if limit is not None and len(tools) > limit:
        raise InvalidRequest(
            f"{len(tools)} tools exceed {fmt}'s limit of {limit} tools per request; deny some tools or "
            "narrow this client's allow-list",
            param="format",
        )
    if fmt == "gemini":
        decls = [function_declaration(t.name, t.description, t.parameters) for t in tools]
        return [{"functionDeclarations": decls}] if decls else []
    out = []
    for t in tools:
        schema = inline_refs(t.parameters)
        if fmt == "openai":
            fn: dict[str, Any] = {"name": t.name, "parameters": schema}
            if t.description:
                fn["description"] = t.description
            out.append({"type": "function", "function": fn})
        else:
            tool: dict[str, Any] = {"name": t.name, "input_schema": schema}
            if t.description:
                tool["description"] = t.description
            out.append(tool)
    return out
