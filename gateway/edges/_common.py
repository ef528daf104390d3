"""Helpers shared by the client-dialect edges: strict JSON field readers that name the
offending field path in :class:`gateway.errors.InvalidRequest`, data-URI handling, tool-call
argument parsing and SSE framing.

Field paths follow the client's request: ``messages[3].content[1].source``. A JSON ``null``
is treated like an absent optional field (real clients send ``"name": null``, observed in
pydantic-ai cassettes ``tests/models/cassettes/test_huggingface/*``).
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import orjson
from pydantic import ValidationError

from gateway.errors import InvalidRequest
from gateway.schema import Request

JSONObj = dict[str, Any]

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
}


def load_body(body: bytes) -> JSONObj:
    """Decode a request body (bytes of JSON) into a dict.

    Raises :class:`InvalidRequest` ``"body is not valid JSON: ..."`` (param None) or
    ``"body must be a JSON object"``.
    """
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRequest(f"body must be a JSON object, got {json_type(data)}")
    return data


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def join(path: str, key: str | int) -> str:
    """Extend a field path: ``join("messages", 3) == "messages[3]"``,
    ``join("messages[3]", "content") == "messages[3].content"``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def wrong_type(path: str, expected: str, value: Any) -> InvalidRequest:
    """An :class:`InvalidRequest` saying ``path`` must be ``expected`` but was ``value``'s type."""
    return InvalidRequest(f"{path}: expected {expected}, got {json_type(value)}", param=path)


def missing(path: str) -> InvalidRequest:
    """An :class:`InvalidRequest` saying the required field ``path`` is missing."""
    return InvalidRequest(f"{path}: field required", param=path)


def unsupported(path: str, what: str) -> InvalidRequest:
    """An :class:`InvalidRequest` saying ``what`` at ``path`` is not supported yet, toward any
    upstream (the edge refuses it before a deployment is chosen: no wire API gets it)."""
    return InvalidRequest(
        f"{path}: {what} is not supported yet on any upstream (the gateway relays it to no wire API)",
        param=path,
    )


def check(value: Any, typ: type, path: str) -> Any:
    """``value`` (the field at ``path``) checked to be of ``typ`` (str, int, float, bool, list,
    dict; an int is a float, a bool is neither); raises :class:`InvalidRequest` naming the
    field. For callers that have already read the value."""
    if typ is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif typ is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, typ)
    if not ok:
        raise wrong_type(path, _TYPE_NAMES[typ], value)
    return value


def req(obj: JSONObj, key: str, typ: type, path: str) -> Any:
    """The required field ``obj[key]`` checked to be of ``typ`` (str, int, float, bool, list,
    dict); ``path`` is the path of ``obj``. Raises :class:`InvalidRequest` naming the field."""
    value = obj.get(key)
    if value is None:
        raise missing(join(path, key))
    if type(value) is typ:  # the common case; the path is built only for an error
        return value
    return check(value, typ, join(path, key))


def invalid(obj: JSONObj, key: str, typ: type, path: str) -> NoReturn:
    """Raise what :func:`req` raises for ``obj[key]``, already found missing or not of ``typ``
    (str, list, dict or bool): hot paths check the common case inline and call this for the
    error."""
    value = obj.get(key)
    if value is None:
        raise missing(join(path, key))
    raise wrong_type(join(path, key), _TYPE_NAMES[typ], value)


def opt(obj: JSONObj, key: str, typ: type, path: str) -> Any:
    """The optional field ``obj[key]`` (None when absent or null), checked like :func:`req`."""
    value = obj.get(key)
    if value is None or type(value) is typ:
        return value
    return check(value, typ, join(path, key))


def as_obj(value: Any, path: str) -> JSONObj:
    """``value`` checked to be a JSON object."""
    if not isinstance(value, dict):
        raise wrong_type(path, "an object", value)
    return value


def str_list(obj: JSONObj, key: str, path: str) -> list[str]:
    """A field that is a string or an array of strings (``stop``), as a list."""
    value = obj.get(key)
    if value is None:
        return []
    fpath = join(path, key)
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise wrong_type(fpath, "a string or an array of strings", value)
    for i, item in enumerate(value):
        check(item, str, join(fpath, i))
    return list(value)


_DATA_URI = re.compile(r"^data:(?P<mt>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^;,]*)*);base64,(?P<data>.*)$", re.S)


def parse_data_uri(url: str) -> tuple[str | None, str] | None:
    """Split ``data:<media type>;base64,<data>`` into ``(media_type, data)``; the data is the
    base64 text byte-identical. None when ``url`` is not a base64 data URI."""
    m = _DATA_URI.match(url)
    if not m:
        return None
    return m.group("mt"), m.group("data")


def data_uri(media_type: str | None, data: str) -> str:
    """Build ``data:<media_type>;base64,<data>`` (media type defaults to
    ``application/octet-stream``)."""
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments: the parsed JSON object, or ``{}`` when ``raw`` is not a complete
    JSON object (the raw string is kept by the caller; the guards judge it)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes (orjson); non-JSON values become strings."""
    return orjson.dumps(obj, default=str)


def sse(data: Any, event: str | None = None) -> bytes:
    """One complete SSE frame: ``event: <event>\\n`` (when given) then ``data: <json>\\n\\n``."""
    payload = data if isinstance(data, bytes) else dumps(data)
    if event is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


def jsonable(value: Any) -> Any:
    """``value`` made JSON-safe (round trip through orjson with ``default=str``)."""
    return orjson.loads(dumps(value))


def mcp_server_entries(body: JSONObj) -> list[str]:
    """Server ids of the ``{"type": "mcp", "server": "<id>"}`` entries of ``tools`` — Turnstile's
    own tool type in both dialects: the gateway runs that registered MCP server's tools itself
    — in order, without repeats. Raises :class:`InvalidRequest` naming ``tools[i].server`` when
    the id is empty."""
    out: list[str] = []
    for i, raw in enumerate(opt(body, "tools", list, "") or []):
        path = join("tools", i)
        tool = as_obj(raw, path)
        if tool.get("type") != "mcp":
            continue
        server = req(tool, "server", str, path)
        if not server:
            spath = join(path, "server")
            raise InvalidRequest(f"{spath}: must name a registered MCP server", param=spath)
        if server not in out:
            out.append(server)
    return out


def validate_request(data: JSONObj, field_names: dict[str, str]) -> Request:
    """``Request.model_validate(data)``: the one validation of a request the edge has
    assembled as plain dicts and lists in the schema's shape (``role``/``type`` keys, ``src``).

    The edge has checked every field by hand, so validation is not expected to fail; if it
    does, the :class:`pydantic.ValidationError` becomes an :class:`InvalidRequest` naming the
    client's field: the ``src`` of the nearest message or part on the error's location, else
    the top-level field renamed through ``field_names`` (internal name -> client name).
    """
    try:
        # what Request.model_validate(data) runs, without its Python wrapper (~0.5 us)
        return Request.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        path = client_path(err["loc"], data, field_names)
        raise InvalidRequest(f"{path or 'body'}: invalid value ({err['msg']})", param=path or None) from None


def client_path(loc: tuple[int | str, ...], data: Any, field_names: dict[str, str]) -> str:
    """The client's field path of a validation error at ``loc`` in the assembled ``data``:
    restarts at every ``src`` passed on the way; keys that are not in the data (the union tags
    pydantic puts in a location) are skipped."""
    path = ""
    node = data
    for key in loc:
        if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
            path = join(path, key)
        elif isinstance(node, dict) and key in node:
            name = field_names.get(str(key), str(key)) if node is data else str(key)
            node = node[key]
            path = join(path, name)
        else:
            continue
        if isinstance(node, dict) and isinstance(node.get("src"), str):
            path = node["src"]
    return path
