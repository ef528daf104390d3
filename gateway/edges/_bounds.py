"""Bounds on what one request may hold, checked right after its JSON is decoded and before
anything is built from it: how many messages, how many content parts, how deeply its JSON nests.

* **Messages and parts** (``server.max_request_messages``, ``server.max_request_parts``): the
  work a turn costs (guards, routing features, the upstream body, the transcript row) grows with
  them, so a body that is small in bytes but holds hundreds of thousands of tiny messages is
  refused before that work starts, with HTTP 413 naming the limit.
* **Tools** (``server.max_request_tools``, ``server.max_tool_schema_nodes``): tool definitions
  per request, and JSON values in one tool's input schema; routing, the upstream body, schema
  normalising and argument validation all grow with them. Past either: 413 naming the limit
  (and the tool). :func:`check_tools` takes any dialect's list of tools and a way to read each
  one's schema and name (:class:`ToolSite`), for every edge.
* **Nesting** (``server.max_json_depth``): levels of objects and arrays, the body itself being
  level 1. Whatever an edge accepts must be storable and renderable: orjson refuses to encode
  more than 254 levels, pydantic's serializer not much more, and the stored and upstream bodies
  wrap a client's value in a few more levels; recursive Python over a schema (Gemini's
  normaliser, argument validation) stops near 1,000. A deeper body is refused with HTTP 400
  naming the field where the nesting is.

Every check costs a constant number of bytecodes per request (per nesting level for the
depth): the counting is done by C iterators (``map``/``filter``/``chain`` over C callables), so
a long conversation costs no more Python than a short one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain, repeat
from typing import Any, NamedTuple, Protocol

from gateway.config import ServerConfig
from gateway.edges._common import JSONObj, join
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.json_depth import is_dict, is_list, nesting_exceeds

_values: Callable[[Any], Any] = dict.values

_get: Callable[[Any, str], Any] = dict.get

FieldPattern = tuple[str, ...]
"""A field path of a dialect, one segment per level: a key, or ``"*"`` for any array index."""


class InputLimits(Protocol):
    """The request bounds (``gateway.config.ServerConfig`` has them)."""

    @property
    def max_request_messages(self) -> int:
        """Messages per request at most."""
        ...

    @property
    def max_request_parts(self) -> int:
        """Content parts per request at most (all messages together)."""
        ...

    @property
    def max_request_tools(self) -> int:
        """Tool definitions per request at most (per list of them: ``tools``, ``functions``)."""
        ...

    @property
    def max_tool_schema_nodes(self) -> int:
        """JSON values in one tool's input schema at most (see :func:`schema_nodes`)."""
        ...

    @property
    def max_json_depth(self) -> int:
        """Levels of JSON nesting per request body at most (the body is level 1)."""
        ...


DEFAULT_LIMITS: InputLimits = ServerConfig()
"""The limits of a default configuration (for callers that have none: replay, tests)."""


class ToolSite(NamedTuple):
    """Where a dialect lists tool definitions, and how one tool's input schema and name are read.

    ``field``: the top-level key of the list (``"tools"``). ``schema_field``: the path of the
    schema inside one tool, for messages (``"function.parameters"``). ``schema_of(tool)``: the
    schema of one list item, ``None`` when the item is malformed (the edge names it later);
    ``name_of(tool)``: its name (anything not a string is left out of messages). Both must
    accept any JSON value."""

    field: str
    schema_field: str
    schema_of: Callable[[Any], Any]
    name_of: Callable[[Any], Any]


_NO_TOOLS: Mapping[str, ToolSite] = {}


def path_past(value: Any, limit: int) -> list[str | int]:
    """The path (keys and indexes) from ``value`` to a container at level ``limit + 1``, or
    ``[]`` when there is none. The slow path of an error: depth first, over the whole value."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if len(path) >= limit:
            return path
        items = node.items() if type(node) is dict else enumerate(node)
        for key, child in reversed(list(items)):
            if type(child) is dict or type(child) is list:
                stack.append((child, [*path, key]))
    return []


def field_of(path: list[str | int], fields: tuple[FieldPattern, ...]) -> str:
    """The client's field a too-deep ``path`` lies in: the longest of ``fields`` that is a
    prefix of it (``tools[0].input_schema``), else its first segment."""
    best: list[str | int] = path[:1]
    for pattern in fields:
        if len(best) < len(pattern) <= len(path) and all(
            p == "*" if isinstance(k, int) else p == k for p, k in zip(pattern, path, strict=False)
        ):
            best = path[: len(pattern)]
    out = ""
    for key in best:
        out = join(out, key)
    return out


def too_deep(field: str, limit: int) -> InvalidRequest:
    """The error for JSON at ``field`` nested past ``limit`` levels."""
    return InvalidRequest(
        f"{field}: JSON nested more than {limit} levels deep (limit server.max_json_depth, counted from "
        "the request body); flatten it",
        param=field,
    )


def _count_parts(messages: list[Any], extra: Any) -> tuple[int, list[Any]]:
    """Top-level content parts and tool calls of ``messages`` (plus a list ``extra``, e.g.
    Anthropic's ``system`` blocks), and the part objects, for :func:`_count_inner`. A message
    that is not an object counts nothing (the edge names it)."""
    contents = list(filter(is_list, map(_get, messages, repeat("content"))))
    calls = list(filter(is_list, map(_get, messages, repeat("tool_calls"))))
    if type(extra) is list:
        contents.append(extra)
    return sum(map(len, chain(contents, calls))), contents


def _count_inner(contents: list[list[Any]]) -> int:
    """Parts inside the parts of ``contents`` (an Anthropic ``tool_result``'s content list)."""
    blocks = filter(is_dict, chain.from_iterable(contents))
    return sum(map(len, filter(is_list, map(_get, blocks, repeat("content")))))


def check_bounds(
    data: JSONObj,
    body: bytes,
    limits: InputLimits,
    fields: tuple[FieldPattern, ...],
    *,
    extra_parts: str = "",
    inner_parts: bool = False,
    tools: Mapping[str, ToolSite] = _NO_TOOLS,
    messages_key: str = "messages",
) -> None:
    """Refuse decoded request ``data`` (from the JSON ``body``) past ``limits``: more messages
    than ``max_request_messages`` or parts than ``max_request_parts`` (content parts and tool
    calls of every message, the list at top-level key ``extra_parts`` when given, and with
    ``inner_parts`` the parts inside parts: Anthropic tool results) raise
    :class:`PayloadTooLarge` (413) naming the limit, as do the tool lists past
    :func:`check_tools`' limits (``tools``: the dialect's :class:`ToolSite` by top-level key,
    :func:`tool_sites`); nesting deeper than ``max_json_depth``
    raises :class:`InvalidRequest` (400) naming the field (one of the dialect's ``fields``, see
    :func:`field_of`). Values that are not of the expected type are left for the edge to name.
    ``messages_key`` is the top-level key of the message list (OpenAI Responses: ``input``, whose
    items count as messages)."""
    messages = data.get(messages_key)
    if type(messages) is list:
        n = len(messages)
        if n > limits.max_request_messages:
            raise PayloadTooLarge(
                f"{messages_key}: {n} messages; at most {limits.max_request_messages} are accepted per "
                "request (limit server.max_request_messages)",
                param=messages_key,
            )
        # Each part takes at least two bytes of JSON (``0,``): a smaller body needs no count.
        if len(body) >= 2 * limits.max_request_parts:
            _check_parts(
                messages, data.get(extra_parts) if extra_parts else None, inner_parts, limits, messages_key
            )
    for key in tools.keys() & data.keys():  # set operations in C: no bytecode for a request without tools
        listed = data[key]
        if type(listed) is list:
            check_tools(listed, tools[key], limits, body)
    limit = limits.max_json_depth
    # Each level needs an opening bracket: a body with few of them needs no walk at all.
    if body.count(b"{") + body.count(b"[") > limit and nesting_exceeds(data, limit):
        raise too_deep(field_of(path_past(data, limit), fields), limit)


def _check_parts(messages: list[Any], extra: Any, inner: bool, limits: InputLimits, key: str) -> None:
    """:func:`check_bounds` for the parts."""
    try:
        parts, contents = _count_parts(messages, extra)
        if inner and parts <= limits.max_request_parts:
            parts += _count_inner(contents)
    except TypeError:  # a message that is not an object: the edge names it
        return
    if parts > limits.max_request_parts:
        raise PayloadTooLarge(
            f"{key}: {parts} content parts; at most {limits.max_request_parts} are accepted per "
            "request (limit server.max_request_parts)",
            param=key,
        )


def tool_sites(*sites: ToolSite) -> dict[str, ToolSite]:
    """``sites`` by their top-level key, as :func:`check_bounds` takes them."""
    return {site.field: site for site in sites}


def schema_nodes(schema: Any, limit: int) -> int:
    """JSON values in decoded ``schema``: objects, arrays, strings, numbers, booleans and nulls,
    ``schema`` itself included, object keys not (``{"type": "string"}`` is 2). Counted breadth
    first by C iterators (a few dozen bytecodes per level, whatever the width); the count stops
    after the first level that takes it past ``limit``, so a result above ``limit`` only says
    "more than ``limit``"."""
    dicts = [schema] if type(schema) is dict else []
    lists = [schema] if type(schema) is list else []
    total = 1
    while dicts or lists:
        level = list(chain(chain.from_iterable(map(_values, dicts)), chain.from_iterable(lists)))
        total += len(level)
        if total > limit:
            break
        dicts = list(filter(is_dict, level))
        lists = list(filter(is_list, level))
    return total


def check_tools(tools: list[Any], site: ToolSite, limits: InputLimits, body: bytes | None = None) -> None:
    """Refuse a request's list of tool definitions ``tools`` (at top-level key ``site.field``)
    holding more than ``limits.max_request_tools`` items, or one whose input schema
    (``site.schema_of``) has more than ``limits.max_tool_schema_nodes`` JSON values: raises
    :class:`PayloadTooLarge` (413) naming the limit, and for a schema the field and the tool
    (index and name). ``body``, the request's JSON bytes when given, bounds the count cheaply:
    a body with fewer commas and brackets than the limit holds no schema that large, and no
    schema is read. Malformed items are left for the edge to name."""
    field = site.field
    n = len(tools)
    if n > limits.max_request_tools:
        raise PayloadTooLarge(
            f"{field}: {n} tools; at most {limits.max_request_tools} are accepted per request "
            "(limit server.max_request_tools)",
            param=field,
        )
    limit = limits.max_tool_schema_nodes
    # Every JSON value but the first follows a comma or an opening bracket.
    if body is not None and body.count(b",") + body.count(b"{") + body.count(b"[") < limit:
        return
    schemas = list(map(site.schema_of, tools))
    if schema_nodes(schemas, limit + 1) <= limit + 1:  # all of them together (the list is one more)
        return
    for i, schema in enumerate(schemas):
        if schema_nodes(schema, limit) > limit:
            where = f"{field}[{i}].{site.schema_field}"
            name = site.name_of(tools[i])
            tool = f"tool {name!r}" if type(name) is str else f"tool {i}"
            raise PayloadTooLarge(
                f"{where}: the input schema of {tool} has more than {limit} JSON nodes; at most {limit} "
                "are accepted per tool (limit server.max_tool_schema_nodes)",
                param=where,
            )


def check_embedded(value: Any, raw: str, limit: int, above: int, field: str) -> None:
    """Refuse ``value``, decoded from the JSON text ``raw`` that a client sent inside a string
    field at ``field`` (OpenAI tool-call ``arguments``) ``above`` levels below the body, when
    it would nest past ``limit`` levels had it been sent inline. Cheap when ``raw`` is too
    short or has too few brackets to be that deep."""
    room = limit - above
    if len(raw) > 2 * room and raw.count("{") + raw.count("[") > room and nesting_exceeds(value, room):
        raise too_deep(field, limit)


def check_contents_bounds(
    data: JSONObj, body: bytes, limits: InputLimits, fields: tuple[FieldPattern, ...]
) -> None:
    """:func:`check_bounds` for a Gemini body: ``contents`` count as messages (and
    ``systemInstruction`` too when present), their ``parts`` as parts (PayloadTooLarge, 413,
    naming ``contents``); nesting past ``max_json_depth`` is an InvalidRequest naming the field
    (one of ``fields``). Values that are not of the expected type are left for the edge."""
    contents = data.get("contents")
    if type(contents) is list:
        n = len(contents)
        if n > limits.max_request_messages:
            raise PayloadTooLarge(
                f"contents: {n} contents; at most {limits.max_request_messages} are accepted per request "
                "(limit server.max_request_messages)",
                param="contents",
            )
        if len(body) >= 2 * limits.max_request_parts:
            try:
                parts = sum(map(len, filter(is_list, map(_get, filter(is_dict, contents), repeat("parts")))))
            except TypeError:  # pragma: no cover - filtered to dicts and lists above
                parts = 0
            if parts > limits.max_request_parts:
                raise PayloadTooLarge(
                    f"contents: {parts} parts; at most {limits.max_request_parts} are accepted per request "
                    "(limit server.max_request_parts)",
                    param="contents",
                )
    limit = limits.max_json_depth
    if body.count(b"{") + body.count(b"[") > limit and nesting_exceeds(data, limit):
        raise too_deep(field_of(path_past(data, limit), fields), limit)
