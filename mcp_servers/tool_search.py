"""Tool search for large catalogs: three meta-tools instead of every tool definition.

A catalog of hundreds of tools costs every model turn the full list of their definitions
(tens of thousands of tokens). For the callers ``mcp.tool_search`` names (an ``mcp.clients``
name or a virtual key's id; :class:`mcp_servers.config.ToolSearchConfig`), ``tools/list`` on
``/mcp`` and the tool loop's offered tools (:mod:`gateway.mcp_tools`) are instead:

* :data:`SEARCH` ``{"query": words, "server"?: id, "limit"?: n}``: the caller's tools ranked by
  BM25 (``bm25s``) over each tool's server, name (split at ``_``, ``-``, ``.`` and camelCase),
  title, description and parameter names and descriptions; each hit is its exposed name,
  server, title, trust tier and the first sentence of its description. An empty query lists the
  server's (or every) tool by name. Its own description names the servers the caller may see.
* :data:`DESCRIBE` ``{"name": exposed}``: one tool's full definition (description, input and
  output schema, annotations).
* :data:`CALL` ``{"name": exposed, "arguments": {...}}``: the named tool run exactly as a
  direct ``tools/call`` of it (visibility, argument check, trust tier, audit, output cap).

Each answer is JSON text (and ``structuredContent``); a tool the caller may not see is answered
as one that does not exist. The index is rebuilt on the first search after the registry's
tools changed. The meta-tools' names sit in the gateway's own ``turnstile__`` namespace; a
registered server whose id is ``turnstile`` would share it (its tools stay callable by name).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import bm25s
import numpy as np
import orjson
from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations

from mcp_servers.clients import Visibility
from mcp_servers.config import ToolSearchConfig
from mcp_servers.registry import McpRegistry, RegisteredTool

SEARCH = "turnstile__search_tools"
DESCRIBE = "turnstile__describe_tool"
CALL = "turnstile__call_tool"
META_NAMES = frozenset({SEARCH, DESCRIBE, CALL})
ANONYMOUS = "anonymous"
"""The caller name ``mcp.tool_search.callers`` matches for a caller without a client or key."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "which",
        "you",
        "your",
        "can",
        "do",
        "does",
        "i",
        "me",
        "my",
        "we",
        "our",
        "all",
        "any",
    ]
)
_SUMMARY_CHARS = 160
_LENGTH_NORM = 0.3
"""BM25's ``b``: a tool's text is long because of its schema, not because it is less about
the words it shares with the query, so document length counts less than in prose (0.75)."""

_ANNOTATIONS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def words(text: str) -> list[str]:
    """The search terms of ``text``: lowercase words split at punctuation and camelCase
    (``listPullRequests`` -> ``list pull requests``), stop words dropped, a plural ``s`` cut
    (``issues`` -> ``issue``)."""
    out: list[str] = []
    for w in _WORD.findall(text):
        w = w.lower()
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


def _schema_text(schema: Any, depth: int = 0) -> list[str]:
    """Parameter names and descriptions of a JSON Schema (nested objects too, 3 levels)."""
    if not isinstance(schema, dict) or depth > 3:
        return []
    out: list[str] = []
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            out.append(str(name))
            if isinstance(sub, dict):
                if isinstance(sub.get("description"), str):
                    out.append(sub["description"])
                out += _schema_text(sub, depth + 1)
                out += _schema_text(sub.get("items"), depth + 1)
    return out


def document(t: RegisteredTool) -> list[str]:
    """The search terms of one tool (see the module docstring); the name counts twice."""
    tool = t.tool
    parts = [t.server, t.name, t.name, tool.title or "", tool.description or ""]
    parts += _schema_text(tool.input_schema)
    return words(" ".join(parts))


def summary(text: str | None) -> str:
    """The first sentence of ``text`` (at most 160 characters, cut at a word)."""
    text = " ".join((text or "").split())
    end = re.search(r"(?<=[.!?])\s", text)
    first = text[: end.start()] if end else text
    if len(first) > _SUMMARY_CHARS:
        first = first[:_SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."
    return first


@dataclass
class _Index:
    tools: list[RegisteredTool]
    bm25: Any
    vocab: frozenset[str]


@dataclass
class ToolSearch:
    """The meta-tools of one endpoint over ``registry`` (config: ``registry.config.tool_search``)."""

    registry: McpRegistry
    _index: _Index | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.registry.on_change(self._forget)

    @property
    def config(self) -> ToolSearchConfig:
        """The ``mcp.tool_search`` section."""
        return self.registry.config.tool_search

    def _forget(self) -> None:
        self._index = None

    # ------------------------------------------------------------------ who gets it

    def applies(self, visible: Visibility, count: int | None = None) -> bool:
        """Whether ``visible``'s caller gets the meta-tools instead of the catalog: tool search
        is enabled, a ``callers`` glob matches its name, and it may see at least ``min_tools``
        tools (``count``: how many it sees, when the caller already knows; else counted)."""
        cfg = self.config
        if not cfg.enabled:
            return False
        who = visible.client if visible.client is not None else ANONYMOUS
        if not any(fnmatchcase(who, g) for g in cfg.callers):
            return False
        if cfg.min_tools:
            if count is None:
                count = sum(1 for t in self.registry.tools() if visible.allows(t.exposed))
            return count >= cfg.min_tools
        return True

    # ------------------------------------------------------------------ the meta-tools

    def meta_tools(self, visible: Visibility) -> list[Tool]:
        """The three meta-tools as ``/mcp`` lists them; the search tool's description names
        the servers ``visible`` may see, with their tool counts."""
        counts: dict[str, int] = {}
        for t in self.registry.tools():
            if visible.allows(t.exposed):
                counts[t.server] = counts.get(t.server, 0) + 1
        servers = ", ".join(f"{s} ({n})" for s, n in sorted(counts.items())) or "none"
        return [
            Tool(
                name=SEARCH,
                description=(
                    "Search this gateway's tools by words (what you want to do) and optionally by server; "
                    "returns matching tool names with a one-line summary. Then describe a tool for its "
                    f"parameters and call it with {CALL}. Servers (tools): {servers}."
                ),
                input_schema={
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "words describing the task"},
                        "server": {"type": "string", "description": "only this server's tools"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": self.config.max_results},
                    },
                    "required": ["query"],
                },
                annotations=_ANNOTATIONS,
            ),
            Tool(
                name=DESCRIBE,
                description="The full definition of one tool found by search: description and input schema.",
                input_schema={
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "the tool's name as search gave it"}
                    },
                    "required": ["name"],
                },
                annotations=_ANNOTATIONS,
            ),
            Tool(
                name=CALL,
                description="Call one tool found by search with its arguments (as its input schema says).",
                input_schema={
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "the tool's name as search gave it"},
                        "arguments": {"type": "object", "description": "the tool's arguments"},
                    },
                    "required": ["name"],
                },
            ),
        ]

    def meta_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of meta-tool ``name`` (None for another name)."""
        for tool in self.meta_tools(Visibility(None)):
            if tool.name == name:
                return dict(tool.input_schema)
        return None

    # ------------------------------------------------------------------ search and describe

    def _built(self) -> _Index:
        index = self._index
        if index is None:
            tools = self.registry.tools()
            docs = [document(t) or ["_"] for t in tools]
            bm25 = bm25s.BM25(k1=1.2, b=_LENGTH_NORM)
            if docs:
                bm25.index(docs, show_progress=False)
            vocab = frozenset(bm25.vocab_dict) if docs else frozenset()
            index = self._index = _Index(tools, bm25, vocab)
        return index

    def search(
        self, query: str, visible: Visibility, *, server: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The caller's tools best matching ``query`` (BM25, ties by name), only ``server``'s
        when given, at most ``limit`` (capped at ``max_results``); tools no term matches are
        left out. An empty ``query`` lists the tools by name. Each hit: ``name`` (exposed),
        ``server``, ``title``, ``summary``, ``trust``."""
        cap = min(limit or self.config.max_results, self.config.max_results)
        index = self._built()
        terms = [w for w in words(query) if w in index.vocab]
        scores = index.bm25.get_scores(terms) if terms and index.tools else np.zeros(len(index.tools))
        ranked = []
        for i, t in enumerate(index.tools):
            if server is not None and t.server != server:
                continue
            if not visible.allows(t.exposed):
                continue
            score = float(scores[i])
            if query.strip() and score <= 0:
                continue
            ranked.append((-score, t.exposed, t))
        ranked.sort(key=lambda r: (r[0], r[1]))
        return [
            {
                "name": t.exposed,
                "server": t.server,
                "title": t.tool.title,
                "summary": summary(t.tool.description),
                "trust": t.trust.tier,
            }
            for _, _, t in ranked[:cap]
        ]

    def describe(self, name: str, visible: Visibility) -> dict[str, Any] | None:
        """The full definition of the available tool exposed as ``name``, or None when there
        is none or ``visible`` may not see it."""
        t = self.registry.lookup(name)
        if t is None or not t.available or not visible.allows(t.exposed):
            return None
        tool = t.tool
        out: dict[str, Any] = {
            "name": t.exposed,
            "server": t.server,
            "title": tool.title,
            "description": tool.description,
            "input_schema": tool.input_schema,
            "trust": t.trust.tier,
        }
        if tool.output_schema is not None:
            out["output_schema"] = tool.output_schema
        if tool.annotations is not None:
            out["annotations"] = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
        return out

    def answer(self, name: str, arguments: dict[str, Any], visible: Visibility) -> CallToolResult:
        """The result of a search or describe call (``name``: :data:`SEARCH` or
        :data:`DESCRIBE`); bad arguments and an unknown tool are ``is_error`` results."""
        if name == SEARCH:
            query = arguments.get("query", "")
            server = arguments.get("server")
            limit = arguments.get("limit")
            if not isinstance(query, str) or (server is not None and not isinstance(server, str)):
                return _error(f"{SEARCH}: query and server must be strings")
            if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
                return _error(f"{SEARCH}: limit must be a positive integer")
            hits = self.search(query, visible, server=server or None, limit=limit)
            return _json({"tools": hits, "count": len(hits)})
        target = arguments.get("name")
        if not isinstance(target, str):
            return _error(f"{DESCRIBE}: name must be a string (a tool name from {SEARCH})")
        found = self.describe(target, visible)
        if found is None:
            return _error(f"unknown tool {target!r}: not exposed by this gateway; search with {SEARCH}")
        return _json(found)


def call_target(arguments: dict[str, Any]) -> tuple[str, dict[str, Any]] | str:
    """``(exposed name, arguments)`` of a :data:`CALL` call, or the error text for arguments
    that are not ``{"name": str, "arguments"?: object}``."""
    name = arguments.get("name")
    args = arguments.get("arguments", {})
    if args is None:
        args = {}
    if not isinstance(name, str) or not name:
        return f"{CALL}: name must be a tool name from {SEARCH}"
    if not isinstance(args, dict):
        return f"{CALL}: arguments must be an object"
    if name in META_NAMES:
        return f"{CALL}: {name} is a meta-tool; call a tool found by {SEARCH}"
    return name, args


def _json(body: dict[str, Any]) -> CallToolResult:
    text = orjson.dumps(body).decode()
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=body, is_error=False
    )


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


@dataclass(frozen=True)
class ServerScope(Visibility):
    """``inner`` narrowed to the tools of ``servers`` (a chat turn's attached MCP servers): a
    tool loop with tool search finds and calls only those. ``owner`` maps an exposed name to
    its server id (None: not a registered tool)."""

    inner: Visibility = field(default_factory=lambda: Visibility(None))
    servers: frozenset[str] = frozenset()
    owner: Callable[[str], str | None] | None = None

    def allows(self, exposed: str) -> bool:
        """Whether ``inner`` allows ``exposed`` and it belongs to one of ``servers``."""
        server = self.owner(exposed) if self.owner is not None else None
        return server in self.servers and self.inner.allows(exposed)

    def sees_server(self, server: str, tool_names: Iterable[str]) -> bool:
        """Whether ``server`` is in scope and ``inner`` sees it."""
        return server in self.servers and self.inner.sees_server(server, tool_names)


def scoped(registry: McpRegistry, visible: Visibility, servers: Iterable[str]) -> ServerScope:
    """``visible`` narrowed to ``servers``' tools (:class:`ServerScope`)."""

    def owner(exposed: str) -> str | None:
        t = registry.lookup(exposed)
        return t.server if t is not None else None

    return ServerScope(visible.client, visible.globs, inner=visible, servers=frozenset(servers), owner=owner)
