"""The Anthropic Messages API's rules on tools, as the scripted Claude behind Claude Code enforces
them (on top of :class:`standins.upstream.UpstreamStandin`'s API key, ``anthropic-version``,
``max_tokens``, structured-output and extended-thinking rules).

From "Tool use" (https://docs.claude.com/en/docs/agents-and-tools/tool-use/implement-tool-use),
"Tool search tool" (.../tool-use/tool-search-tool) and "Web search tool"
(.../tool-use/web-search-tool), with the real API's error texts where it has one (HTTP 400
``invalid_request_error``):

* **pairing**: every ``tool_use`` of an assistant message has a ``tool_result`` in the next
  message (``messages.N: `tool_use` ids were found without `tool_result` blocks immediately
  after: ...``), and every ``tool_result`` answers a ``tool_use`` of the previous message
  (``messages.N.content.M: unexpected `tool_use_id` found in `tool_result` blocks: ...``);
  mid-conversation ``role: "system"`` messages are skipped when looking for either;
* **server tool calls** (``server_tool_use``) are answered in the same assistant message by a
  result block naming their id;
* **tool search**: a ``tool_reference`` block (only inside a ``tool_result``) names a tool the
  request declares with ``defer_loading: true``; not every tool may be deferred;
* **tool definitions**: custom tools have a name of ``[a-zA-Z0-9_-]{1,128}``, an object
  ``input_schema``, and names are unique; a server tool's ``type`` is a known dated type, the
  web search tool is named ``web_search``, carries only its documented keys and not both
  ``allowed_domains`` and ``blocked_domains``.

:func:`violation` returns the first broken rule's message, or None.
"""

from __future__ import annotations

import re
from typing import Any

SERVER_TOOL_TYPE = re.compile(
    r"^(web_search|web_fetch|code_execution|tool_search_tool_regex|tool_search_tool_bm25|memory|"
    r"bash|text_editor|computer)_\d{8}$"
)
"""The dated types of Anthropic's server (and Anthropic-defined client) tools."""
WEB_SEARCH_KEYS = frozenset(
    {"type", "name", "max_uses", "allowed_domains", "blocked_domains", "user_location", "cache_control"}
)
"""The web search tool's documented keys (``defer_loading`` is every tool's)."""
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


def _blocks(msg: Any) -> list[dict[str, Any]]:
    content = msg.get("content") if isinstance(msg, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _neighbour(messages: list[Any], i: int, step: int) -> tuple[int, Any] | None:
    """The nearest non-system message from ``i`` in direction ``step`` (index, message)."""
    j = i + step
    while 0 <= j < len(messages):
        m = messages[j]
        if not (isinstance(m, dict) and m.get("role") == "system"):
            return j, m
        j += step
    return None


def pairing_violation(messages: list[Any]) -> str | None:
    """The pairing rule's message (tool_use -> tool_result in the next message, tool_result <-
    tool_use of the previous one), or None."""
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            continue
        if msg.get("role") == "assistant":
            calls = [b.get("id") for b in _blocks(msg) if b.get("type") == "tool_use"]
            if not calls:
                continue
            nxt = _neighbour(messages, i, 1)
            answered = (
                {b.get("tool_use_id") for b in _blocks(nxt[1]) if b.get("type") == "tool_result"}
                if nxt is not None and nxt[1].get("role") == "user"
                else set()
            )
            missing = [c for c in calls if c not in answered]
            if missing:
                return (
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(map(str, missing))}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message."
                )
        elif msg.get("role") == "user":
            prev = _neighbour(messages, i, -1)
            issued = (
                {b.get("id") for b in _blocks(prev[1]) if b.get("type") == "tool_use"}
                if prev is not None and prev[1].get("role") == "assistant"
                else set()
            )
            for j, b in enumerate(_blocks(msg)):
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in issued:
                    return (
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a "
                        "corresponding `tool_use` block in the previous message."
                    )
    return None


def server_call_violation(messages: list[Any]) -> str | None:
    """A ``server_tool_use`` without its result block in the same assistant message, or None."""
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        blocks = _blocks(msg)
        results = {b.get("tool_use_id") for b in blocks if str(b.get("type", "")).endswith("_tool_result")}
        for j, b in enumerate(blocks):
            if b.get("type") == "server_tool_use" and b.get("id") not in results:
                return f"messages.{i}.content.{j}: `server_tool_use` {b.get('id')} has no result block"
    return None


def _deferred(tools: list[Any]) -> set[str]:
    return {str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("defer_loading") is True}


def tool_reference_violation(messages: list[Any], tools: list[Any]) -> str | None:
    """A ``tool_reference`` outside a ``tool_result``, or naming a tool the request does not
    declare with ``defer_loading: true``; or None."""
    deferred = _deferred(tools)
    for i, msg in enumerate(messages):
        for j, b in enumerate(_blocks(msg)):
            if b.get("type") == "tool_reference":
                return f"messages.{i}.content.{j}: `tool_reference` blocks are only allowed in `tool_result`"
            if b.get("type") != "tool_result" or not isinstance(b.get("content"), list):
                continue
            for k, ref in enumerate(b["content"]):
                if not isinstance(ref, dict) or ref.get("type") != "tool_reference":
                    continue
                if ref.get("tool_name") not in deferred:
                    return (
                        f"messages.{i}.content.{j}.content.{k}: tool_reference names "
                        f"{ref.get('tool_name')!r}, which is not a tool of this request with "
                        "`defer_loading: true`"
                    )
    return None


def tools_violation(tools: Any) -> str | None:
    """The first tool definition the API refuses, or None."""
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"tools.{i}: Input should be a valid dictionary"
        kind = tool.get("type")
        name = tool.get("name")
        if kind not in (None, "custom"):
            if not isinstance(kind, str) or not SERVER_TOOL_TYPE.match(kind):
                return f"tools.{i}: Input tag {kind!r} found using 'type' does not match the expected tags"
            if kind.startswith("web_search_"):
                extra = set(tool) - WEB_SEARCH_KEYS - {"defer_loading"}
                if name != "web_search":
                    return f"tools.{i}.name: Input should be 'web_search'"
                if extra:
                    return f"tools.{i}.{sorted(extra)[0]}: Extra inputs are not permitted"
                if "allowed_domains" in tool and "blocked_domains" in tool:
                    return f"tools.{i}: cannot specify both allowed_domains and blocked_domains"
        else:
            if not isinstance(name, str) or not TOOL_NAME.match(name):
                return f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            if not isinstance(tool.get("input_schema"), dict):
                return f"tools.{i}.custom.input_schema: Field required"
        if name in names:
            return f"tools: Tool names must be unique ({name!r})"
        names.add(str(name))
    if tools and len(_deferred(tools)) == len(tools):
        return "tools: at least one tool must not have `defer_loading: true`"
    return None


def violation(body: dict[str, Any]) -> str | None:
    """The real API's message for the first tool rule ``body`` breaks, or None."""
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    tools = body.get("tools")
    return (
        tools_violation(tools)
        or pairing_violation(messages)
        or server_call_violation(messages)
        or tool_reference_violation(messages, tools if isinstance(tools, list) else [])
    )
