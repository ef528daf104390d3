"""Anthropic Messages request body -> :class:`gateway.schema.Request`.

Reference: https://docs.anthropic.com/en/api/messages. Notes:

* A user message's ``tool_result`` blocks become one :class:`ToolResultMessage` each, in
  block order, and the message's other blocks become one :class:`UserMessage` placed *after*
  them (handed case C04: results first, then text), so pairing sees every result.
* Thinking signatures and redacted-thinking data are unwrapped from Turnstile's envelope
  (:mod:`gateway.edges.signatures`); a raw one gets Anthropic's native provenance
  (:data:`NATIVE`, model ``""`` = any Anthropic model). Tool-use ids are unwrapped in calls and
  results.
* Empty text blocks are dropped (handed case C07).
* ``role: "system"`` inside ``messages`` (mid-conversation system prompts, observed in
  pydantic-ai cassettes ``test_anthropic_mid_conversation_system/*``) -> :class:`SystemMessage`.
* A message's keys besides ``role`` and ``content`` (Claude Code 2.1.332 sends
  ``output_config: {"effort"}`` on its mid-conversation system message, the per-turn control
  beta) go verbatim to an Anthropic upstream on that message (``own``: they stay with it in
  the session log); toward other wire APIs
  ``output_config`` is dropped and named (``messages[i].output_config``), any other key refused.
* ``output_config.effort`` -> ``ThinkingConfig.effort`` (``max``/``xhigh`` clamp to
  ``high``); ``output_config.format`` (json_schema), or the beta top-level ``output_format``
  (not both) -> ``ResponseFormat``.
* ``thread`` (message threads beta) -> a :class:`~gateway.edges.anthropic_messages_thread.ThreadedRequest`;
  the server continues it from the session log. Refused on ``count_tokens``.
* Every other top-level field, and a tool's keys besides name, description, schema, strict and
  cache control, are classed by :data:`gateway.edges.fidelity.ANTHROPIC_MESSAGES`
  (``docs/fidelity.md``) into ``Request.native`` for an Anthropic upstream: serving-only ones
  (top-level ``cache_control``, ``service_tier``, ``speed``, ``context_management``, tool
  ``defer_loading``) are dropped toward other wire APIs with ``x-turnstile-dropped``;
  ``container``, ``mcp_servers`` (the MCP connector) and vendor extensions are refused there.
  ``thinking`` and ``output_config.effort`` are also kept verbatim for an Anthropic upstream.
  ``diagnostics`` and ``compaction`` are refused by name.
* Server tools (a tool whose ``type`` is a dated Anthropic tool type: ``web_search_20250305``,
  ``tool_search_tool_regex_20251119``, ``code_execution_*``, ...), an assistant turn's server
  tool calls and results (``server_tool_use``, ``*_tool_result``, ``mcp_tool_use``,
  ``mcp_tool_result``), a tool result's ``tool_reference`` blocks (tool search) and
  ``document`` blocks, and a ``tool_use`` block's ``caller`` (programmatic tool calling:
  :attr:`gateway.schema.ToolCallPart.caller`) are the client's own wire content: carried
  verbatim to an Anthropic upstream (server tools in ``NativeFields.fields["server_tools"]``,
  blocks as :class:`gateway.schema.NativePart`, the caller on the tool call), each
  named in ``NativeFields.paths`` so that the request is refused toward any other wire API.
  Server tool calls are the server's own: they are not tool calls the client must answer.
* Not supported yet, rejected naming the path: search results, container uploads.
* Every key of a block and of a nested object is checked
  (:mod:`gateway.edges.anthropic_messages_blocks`): the SDK-typed keys the schema has no
  common field for reach an Anthropic upstream as sent and are dropped and named toward another
  wire API (image ``transformations``, ``tool_use`` / ``tool_result`` ``toolset_name``,
  ``thinking.display`` / ``block_binding``, ``output_config.task_budget``); any other key of a
  text / system / image / document / thinking / ``tool_use`` / ``tool_result`` block, an image
  or document ``source``, ``tool_choice``, ``metadata``, ``thinking``, ``output_config`` or its
  ``format`` is refused by name. ``count_tokens`` also refuses a top-level field no Messages
  field table lists (nothing upstream would get it).

How it works: one pass over the decoded body checks every field by hand (errors name the
field, :mod:`gateway.edges._common`) and assembles plain dicts and lists in the shape of
:mod:`gateway.schema` (``role``/``type`` discriminator keys, ``src`` locations); the result is
validated once, by :func:`gateway.edges._common.validate_request`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from gateway.edges._bounds import (
    DEFAULT_LIMITS,
    FieldPattern,
    InputLimits,
    ToolSite,
    check_bounds,
    tool_sites,
)
from gateway.edges._common import (
    JSONObj,
    as_obj,
    check,
    invalid,
    join,
    load_body,
    mcp_server_entries,
    missing,
    opt,
    req,
    unsupported,
    validate_request,
    wrong_type,
)
from gateway.edges.anthropic_messages_blocks import (
    METADATA_KEYS,
    OUTPUT_CONFIG_KEYS,
    REDACTED_KEYS,
    THINKING_KEYS,
    TOOL_RESULT_KEYS,
    TOOL_USE_KEYS,
    document_part,
    image_part,
    only_keys,
    text_part,
    toolset_name,
)
from gateway.edges.anthropic_messages_options import response_format, temperature, thinking, tool_choice
from gateway.edges.anthropic_messages_thread import parse_thread, threaded
from gateway.edges.call_ids import BadIds, plain_call_id, refusal
from gateway.edges.fidelity import ANTHROPIC_MESSAGES, native_fields
from gateway.edges.signatures import ID_SEPARATOR, unwrap_signature, unwrap_tool_call_id
from gateway.errors import InvalidRequest
from gateway.providers.anthropic_common import API, SERVER_TOOL_AT
from gateway.schema import Provenance, Request

NATIVE = Provenance(api="anthropic_messages", provider="anthropic", model="")
"""Provenance of a raw (unwrapped) signature sent by an Anthropic client."""

_UNSUPPORTED_BLOCKS = frozenset(
    {
        "search_result",
        "container_upload",
        "tool_addition",
    }
)
_SERVER_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use", "mcp_tool_result"})
"""Assistant blocks of the server's own tool calls and results (with every ``*_tool_result``
type): carried verbatim (:class:`gateway.schema.NativePart`) to an Anthropic upstream."""
_SERVER_TOOL_TYPE = re.compile(r"[a-z][a-z0-9_]*_\d{8}")
"""A server tool's ``type``: a name and its version date (``web_search_20250305``)."""
_FIELD_NAMES = {
    "max_output_tokens": "max_tokens",
    "stop": "stop_sequences",
    "response_format": "output_config.format",
    "user": "metadata.user_id",
}
"""Internal top-level field -> the client's field, for the (unexpected) validation error."""

_FREE_FORM: tuple[FieldPattern, ...] = (
    ("metadata",),
    ("thinking",),
    ("tool_choice",),
    ("tools", "*", "input_schema"),
    ("tools", "*", "cache_control"),
    ("output_config", "format", "schema"),
    ("output_format", "schema"),
    ("system", "*", "cache_control"),
    ("messages", "*", "content", "*", "input"),
    ("messages", "*", "content", "*", "cache_control"),
    ("messages", "*", "content", "*", "content", "*", "cache_control"),
)
"""Where a request carries JSON of the client's own shape (named when it nests too deep)."""


def _unknown_block(kind: str, path: str, allowed: str) -> InvalidRequest:
    tpath = join(path, "type")
    if kind in _UNSUPPORTED_BLOCKS or kind in _SERVER_BLOCKS or kind.endswith("_tool_result"):
        return unsupported(tpath, f"content block type {kind!r}")
    return InvalidRequest(
        f"{tpath}: unknown content block type {kind!r} here (expected {allowed})", param=tpath
    )


def _unwrap(value: str, path: str) -> tuple[str, Provenance]:
    try:
        sig, prov = unwrap_signature(value)
    except ValueError as exc:
        raise InvalidRequest(f"{path}: damaged Turnstile signature envelope ({exc})", param=path) from None
    return sig, prov or NATIVE


def _text_content(content: Any, path: str, serving: list[str] | None = None) -> list[JSONObj]:
    """``content`` that may hold only text: a string or text blocks -> text part dicts (the
    paths of their ``citations`` go to ``serving``: :func:`text_part`)."""
    if type(content) is str:
        return [{"type": "text", "text": content}] if content else []
    if type(content) is not list:
        raise wrong_type(path, "a string or an array of text blocks", content)
    out = []
    for j, raw in enumerate(content):
        bpath = f"{path}[{j}]"
        block = as_obj(raw, bpath)
        kind = req(block, "type", str, bpath)
        if kind != "text":
            raise _unknown_block(kind, bpath, "text")
        part = text_part(block, bpath, serving)
        if part is not None:
            out.append(part)
    return out


class _State(BadIds):
    """Per-request parse state: names of calls by id, and the tool-call ids no upstream
    accepts (``(location, id, reason)``, refused after the messages are read:
    :mod:`gateway.edges.call_ids`)."""

    __slots__ = ("names", "native", "serving", "translated")

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, str] = {}
        self.native: list[str] = []
        self.serving: list[str] = []
        self.translated: list[str] = []
        """Paths of text citations (:func:`_text`)."""
        """Paths of the blocks kept verbatim (:func:`_native_block`), named ``"<path> (<type>)"``."""


TOOL_LOADED = "Tool loaded: "
"""A ``tool_reference`` block (Claude Code's tool search) toward another wire API: the text
``Tool loaded: <name>`` (the deferred tool is declared there as a plain function)."""


def _native_block(block: JSONObj, kind: str, path: str, st: _State) -> JSONObj:
    """A block carried verbatim to an Anthropic upstream -> a native part dict; its path is
    recorded for the refusal toward other wire APIs."""
    st.native.append(f"{path} ({kind})")
    return {"type": "native", "api": API, "block": block, "src": path}


_SEARCH_RESULT_KEYS = frozenset({"type", "source", "title", "content", "cache_control", "citations"})


def search_result_text(block: JSONObj, path: str) -> str:
    """A ``search_result`` block (``{"source", "title", "content": [text blocks]}``, Anthropic's
    search results for RAG with citations) as the text another wire API's model reads:
    ``Search result: <title>\nSource: <source>\n\n<text>``; the citations Claude would give
    of it are not made there. Raises :class:`InvalidRequest` naming a key the SDK type
    (``SearchResultBlockParam``) does not have or a content block that is not text."""
    if not block.keys() <= _SEARCH_RESULT_KEYS:
        only_keys(block, _SEARCH_RESULT_KEYS, path, "search_result")
    title = req(block, "title", str, path)
    source = req(block, "source", str, path)
    texts = []
    for k, raw in enumerate(req(block, "content", list, path)):
        tpath = f"{join(path, 'content')}[{k}]"
        inner = as_obj(raw, tpath)
        if req(inner, "type", str, tpath) != "text":
            raise InvalidRequest(
                f"{join(tpath, 'type')}: a search result holds text blocks", param=join(tpath, "type")
            )
        texts.append(req(inner, "text", str, tpath))
    return f"Search result: {title}\nSource: {source}\n\n" + "\n\n".join(texts)


def _tool_result(block: JSONObj, path: str, st: _State) -> JSONObj:
    """A ``tool_result`` block -> a tool-result message dict (``src`` = the block's path)."""
    call_id = block.get("tool_use_id")
    if type(call_id) is not str:
        invalid(block, "tool_use_id", str, path)
    if ID_SEPARATOR in call_id:
        call_id = unwrap_tool_call_id(call_id)[0]
    if plain_call_id(call_id) is None:
        st.check_id(call_id, path + ".tool_use_id")
    content = block.get("content")
    parts: list[JSONObj] = []
    if type(content) is str:
        if content:
            parts.append({"type": "text", "text": content})
    elif type(content) is list:
        cpath = path + ".content"
        for k, raw in enumerate(content):
            if type(raw) is dict and raw.get("type") == "text" and len(raw) == 2:
                text = raw.get("text")
                if type(text) is str:  # the common case, checked inline
                    if text:
                        parts.append({"type": "text", "text": text})
                    continue
            bpath = f"{cpath}[{k}]"
            inner = as_obj(raw, bpath)
            kind = req(inner, "type", str, bpath)
            if kind == "tool_reference":
                name = req(inner, "tool_name", str, bpath)
                st.translated.append(f"{bpath} ({kind})")
                parts.append(
                    {"type": "native", "api": API, "block": inner, "text": TOOL_LOADED + name, "src": bpath}
                )
                continue
            if kind == "document":  # verbatim to an Anthropic upstream; refused toward any other
                req(inner, "source", dict, bpath)
                parts.append(_native_block(inner, kind, bpath, st))
                continue
            if kind == "search_result":  # verbatim to an Anthropic upstream; its text elsewhere
                st.translated.append(f"{bpath} ({kind})")
                parts.append(
                    {
                        "type": "native",
                        "api": API,
                        "block": inner,
                        "text": search_result_text(inner, bpath),
                        "src": bpath,
                    }
                )
                continue
            if kind != "text" and kind != "image":
                raise _unknown_block(kind, bpath, "text, image, document, search_result or tool_reference")
            _add_media(parts, kind, inner, bpath, st)
    elif content is not None:
        raise wrong_type(path + ".content", "a string or an array of content blocks", content)
    is_error = block.get("is_error")
    if is_error is not None and type(is_error) is not bool:
        check(is_error, bool, join(path, "is_error"))  # raises
    cache = block.get("cache_control")
    if cache is not None and type(cache) is not dict:
        check(cache, dict, join(path, "cache_control"))  # raises
    if not block.keys() <= TOOL_RESULT_KEYS:
        only_keys(block, TOOL_RESULT_KEYS, path, "tool_result")
    return {
        "role": "tool",
        "toolset_name": toolset_name(block, path, st.serving) if "toolset_name" in block else None,
        "tool_call_id": call_id,
        "content": parts,
        "is_error": bool(is_error),
        "name": st.names.get(call_id),
        "cache_control": cache,
        "src": path,
    }


def _add_media(parts: list[JSONObj], kind: str, block: JSONObj, path: str, st: _State) -> None:
    """Append the ``text`` (dropped when empty) or ``image`` block at ``path`` to ``parts``."""
    if kind == "image":
        parts.append(image_part(block, path, st.serving, st.native))
        return
    part = text_part(block, path, st.serving)
    if part is not None:
        parts.append(part)


def _user(msg: JSONObj, path: str, st: _State, out: list[JSONObj]) -> None:
    """Append the message dicts of a user message to ``out``: its tool results, then the
    user message with its other blocks (handed case C04)."""
    content = msg.get("content")
    if type(content) is str:
        out.append(
            {"role": "user", "content": [{"type": "text", "text": content}] if content else [], "src": path}
        )
        return
    cpath = path + ".content"
    if content is None:
        raise missing(cpath)
    if type(content) is not list:
        raise wrong_type(cpath, "a string or an array of content blocks", content)
    results = 0
    parts: list[JSONObj] = []
    for j, raw in enumerate(content):
        bpath = f"{cpath}[{j}]"
        if type(raw) is not dict:
            raise wrong_type(bpath, "an object", raw)
        kind = raw.get("type")
        if kind == "tool_result":
            out.append(_tool_result(raw, bpath, st))
            results += 1
        elif kind == "text" or kind == "image":
            _add_media(parts, kind, raw, bpath, st)
        elif kind == "document":
            parts.append(document_part(raw, bpath))
        else:
            kind = req(raw, "type", str, bpath)
            raise _unknown_block(kind, bpath, "text, image, document or tool_result")
    if parts or not results:
        out.append({"role": "user", "content": parts, "src": path})


def _assistant_block(block: JSONObj, bpath: str, st: _State) -> JSONObj | None:
    """One block of an assistant ``content`` list -> a part dict (None for empty text)."""
    kind = req(block, "type", str, bpath)
    if kind == "text":
        return text_part(block, bpath, st.serving)
    if kind == "thinking":
        only_keys(block, THINKING_KEYS, bpath, "thinking block")
        text = req(block, "thinking", str, bpath)
        raw_sig = opt(block, "signature", str, bpath)
        if raw_sig:
            sig, prov = _unwrap(raw_sig, join(bpath, "signature"))
            return {"type": "thinking", "text": text, "signature": sig, "provenance": prov}
        return {"type": "thinking", "text": text}
    if kind == "redacted_thinking":
        only_keys(block, REDACTED_KEYS, bpath, "redacted_thinking block")
        data, prov = _unwrap(req(block, "data", str, bpath), join(bpath, "data"))
        return {"type": "redacted_thinking", "data": data, "provenance": prov}
    if kind == "tool_use":
        raw_input = block.get("input")
        args = as_obj({} if raw_input is None else raw_input, join(bpath, "input"))
        call_id, call_sig, cprov = unwrap_tool_call_id(req(block, "id", str, bpath))
        if plain_call_id(call_id) is None:
            st.check_id(call_id, bpath + ".id")
        name = req(block, "name", str, bpath)
        st.names.setdefault(call_id, name)
        caller = opt(block, "caller", dict, bpath)
        if caller is not None:  # programmatic tool calling: carried to an Anthropic upstream only
            st.native.append(f"{join(bpath, 'caller')} (tool_use caller)")
        only_keys(block, TOOL_USE_KEYS, bpath, "tool_use")
        return {
            "type": "tool_call",
            "id": call_id,
            "name": name,
            "arguments": args,
            "raw_arguments": orjson.dumps(args).decode(),
            "signature": call_sig,
            "provenance": cprov,
            "caller": caller,
            "cache_control": opt(block, "cache_control", dict, bpath),
            "toolset_name": toolset_name(block, bpath, st.serving),
            "src": bpath,
        }
    if kind in _SERVER_BLOCKS or kind.endswith("_tool_result"):
        return _native_block(block, kind, bpath, st)
    raise _unknown_block(kind, bpath, "text, thinking, redacted_thinking, tool_use or a server tool block")


def _assistant(msg: JSONObj, path: str, st: _State) -> JSONObj:
    content = msg.get("content")
    if type(content) is str:
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": content}] if content else [],
            "src": path,
        }
    cpath = path + ".content"
    if content is None:
        raise missing(cpath)
    if type(content) is not list:
        raise wrong_type(cpath, "a string or an array of content blocks", content)
    parts: list[JSONObj] = []
    for j, raw in enumerate(content):
        # The common block shapes are checked inline; anything else (and every error) goes
        # through _assistant_block, which checks field by field.
        if type(raw) is dict:
            kind = raw.get("type")
            if kind == "text":
                text = raw.get("text")
                if type(text) is str and len(raw) == 2:  # type, text: no mark, citations or unknown key
                    if text:
                        parts.append({"type": "text", "text": text})
                    continue
            elif kind == "tool_use":
                call_id = raw.get("id")
                name = raw.get("name")
                args = raw.get("input")
                if (
                    type(call_id) is str
                    and type(name) is str
                    and type(args) is dict
                    and ID_SEPARATOR not in call_id
                    and len(raw) == 4  # type, id, name, input: no caller, cache mark or unknown key
                ):
                    if plain_call_id(call_id) is None:
                        st.check_id(call_id, f"{cpath}[{j}].id")
                    st.names.setdefault(call_id, name)
                    parts.append(
                        {
                            "type": "tool_call",
                            "id": call_id,
                            "name": name,
                            "arguments": args,
                            "raw_arguments": orjson.dumps(args).decode(),
                            "src": f"{cpath}[{j}]",
                        }
                    )
                    continue
            elif kind == "thinking":
                text = raw.get("thinking")
                sig = raw.get("signature")
                if type(text) is str and type(sig) is str and len(raw) == 3:
                    if not sig:
                        parts.append({"type": "thinking", "text": text})
                        continue
                    try:
                        sig, prov = unwrap_signature(sig)
                    except ValueError:
                        pass  # damaged envelope: _assistant_block reports it
                    else:
                        parts.append(
                            {"type": "thinking", "text": text, "signature": sig, "provenance": prov or NATIVE}
                        )
                        continue
        bpath = f"{cpath}[{j}]"
        part = _assistant_block(as_obj(raw, bpath), bpath, st)
        if part is not None:
            parts.append(part)
    return {"role": "assistant", "content": parts, "src": path}


def _messages(data: JSONObj) -> tuple[list[JSONObj], _State]:
    """The message dicts of ``system`` and ``messages``, and the parse state (paths of their
    blocks kept verbatim, :func:`_native_block`, and of text citations)."""
    out: list[JSONObj] = []
    st = _State()
    system = data.get("system")
    if system is not None:
        parts = _text_content(system, "system", st.serving)
        if parts:
            out.append({"role": "system", "content": parts, "src": "system"})
    raw_messages = req(data, "messages", list, "")
    if not raw_messages:
        raise InvalidRequest("messages: must contain at least one message", param="messages")
    for i, raw in enumerate(raw_messages):
        path = f"messages[{i}]"
        msg = as_obj(raw, path)
        role = msg.get("role")
        start = len(out)
        if role == "user":
            _user(msg, path, st, out)
        elif role == "assistant":
            out.append(_assistant(msg, path, st))
        elif role == "system":
            content = msg.get("content")
            if content is None:
                raise missing(join(path, "content"))
            parts = _text_content(content, join(path, "content"), st.serving)
            if parts or len(msg) > 2:
                out.append({"role": "system", "content": parts, "src": path})
        else:
            role = req(msg, "role", str, path)  # raises when missing or not a string
            raise InvalidRequest(
                f"{join(path, 'role')}: unknown role {role!r} (expected user, assistant or system)",
                param=join(path, "role"),
            )
        if len(msg) > 2:
            _message_extras(msg, path, st, out[start:])
    if st.bad_ids:
        raise refusal(st.bad_ids)
    return out, st


_MESSAGE_KEYS = frozenset({"role", "content"})
_MESSAGE_SERVING = frozenset({"output_config"})
"""A message's own keys dropped (and named) toward another wire API: ``output_config`` on a
mid-conversation system message (the per-turn control beta: that turn's ``effort``) sets how
hard the model works from there on, a serving choice like the top-level effort, which other
targets get as their own thinking setting."""


def _message_extras(msg: JSONObj, path: str, st: _State, made: list[JSONObj]) -> None:
    """Keep a message's keys besides ``role`` and ``content`` (Claude Code's per-turn
    ``output_config`` on a ``role: system`` message) for an Anthropic upstream on the message
    dicts ``made`` of it (``own``: :class:`gateway.schema.OwnKeys`); name each for the other
    wire APIs (:data:`_MESSAGE_SERVING` dropped, others refused)."""
    extra = {k: v for k, v in msg.items() if k not in _MESSAGE_KEYS}
    if extra:
        for m in made:
            m["own"] = {"api": API, "keys": extra}
        for key in extra:
            (st.serving if key in _MESSAGE_SERVING else st.native).append(f"{path}.{key}")


def _tool_field(tool: Any, key: str) -> Any:
    return tool.get(key) if type(tool) is dict else None


_TOOL_SITES = tool_sites(
    ToolSite(
        "tools", "input_schema", lambda t: _tool_field(t, "input_schema"), lambda t: _tool_field(t, "name")
    ),
)
"""Where tool definitions are, for :func:`gateway.edges._bounds.check_tools`."""


_TOOL_READ = frozenset({"type", "name", "description", "input_schema", "strict", "cache_control"})
_TOOL_SERVING = frozenset({"defer_loading", "eager_input_streaming"})
"""Tool keys that only steer serving (tool search loads the tool on demand; input streaming):
dropped toward another wire API (with ``x-turnstile-dropped``); any other unread key of a tool
(``input_examples``, ``allowed_callers``) is passed through and refused toward another API."""


def _tool_extras(tool: JSONObj, path: str, extras: _Extras) -> None:
    """Record ``tool``'s keys this edge does not read, for an Anthropic upstream."""
    keys = tool.keys() - _TOOL_READ
    if not keys:
        return
    fields = {k: tool[k] for k in tool if k in keys and tool[k] is not None}
    if not fields:
        return
    extras.tool_fields[tool["name"]] = fields
    for k in fields:
        (extras.serving if k in _TOOL_SERVING else extras.paths).append(f"{path}.{k}")


class _Extras:
    """Per-tool fields carried to an Anthropic upstream: tool name -> its extra keys, and
    their paths by class."""

    __slots__ = ("paths", "server_at", "server_tools", "serving", "tool_fields", "translated")

    def __init__(self) -> None:
        self.tool_fields: dict[str, JSONObj] = {}
        self.server_tools: list[JSONObj] = []
        self.server_at: list[int] = []
        self.paths: list[str] = []
        self.serving: list[str] = []
        self.translated: list[str] = []


def _tools(data: JSONObj, extras: _Extras) -> tuple[list[JSONObj], bool]:
    """Tool definition dicts of ``tools``, and whether it has an ``mcp`` entry (read by
    :func:`gateway.edges._common.mcp_server_entries`); the tools' other keys go to ``extras``."""
    out: list[JSONObj] = []
    has_mcp = False
    for i, raw in enumerate(opt(data, "tools", list, "") or ()):
        path = f"tools[{i}]"
        tool = as_obj(raw, path)
        ttype = opt(tool, "type", str, path)
        if ttype == "mcp":
            has_mcp = True
            continue  # a registered MCP server for the gateway's tool loop: see mcp_server_entries
        if ttype is not None and ttype != "custom":
            if not _SERVER_TOOL_TYPE.fullmatch(ttype):
                raise InvalidRequest(
                    f"{join(path, 'type')}: unknown tool type {ttype!r} (expected custom, mcp or "
                    "an Anthropic server tool type such as web_search_20250305)",
                    param=join(path, "type"),
                )
            extras.server_at.append(len(out) + len(extras.server_tools))  # its place among the tools sent
            extras.server_tools.append(tool)
            extras.paths.append(f"{path} ({ttype} {tool.get('name')!r})")
            continue
        if len(tool) > 2 and tool.keys() - _TOOL_READ:
            req(tool, "name", str, path)
            _tool_extras(tool, path, extras)
        out.append(
            {
                "name": req(tool, "name", str, path),
                "description": opt(tool, "description", str, path),
                "parameters": req(tool, "input_schema", dict, path),
                "strict": opt(tool, "strict", bool, path),
                "cache_control": opt(tool, "cache_control", dict, path),
            }
        )
    return out, has_mcp


_NUMBERS = (("top_p", float), ("top_k", int))
_READ = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "stream",
        "metadata",
        "output_config",
        "output_format",
        "thinking",
        "thread",
    }
)
"""Top-level fields :func:`_parse` reads itself; every other one is classed by
:data:`gateway.edges.fidelity.ANTHROPIC_MESSAGES` (:func:`_native`)."""


_HEADER_PARAMS = {
    "betas": "anthropic-beta",
    "workspace_id": "anthropic-workspace-id",
    "user_profile_id": "anthropic-user-profile-id",
}
"""SDK parameters the Anthropic SDK sends as HTTP headers (class ``header`` in
:data:`gateway.edges.fidelity.ANTHROPIC_MESSAGES`): refused by name in a JSON body."""


def _native(data: JSONObj, extra: set[str], extras: _Extras) -> JSONObj | None:
    """The ``Request.native`` dict: the top-level fields in ``extra`` by their class (after
    refusing by name those whose answers the gateway does not relay), the tools' extra keys
    (``tool_fields``), and the client's ``thinking`` and ``output_config.effort`` verbatim, so
    an Anthropic upstream gets them as sent (``adaptive``, ``display``, ``xhigh``) while other
    upstreams get the schema's :class:`gateway.schema.ThinkingConfig`."""
    for key in ("diagnostics", "compaction"):
        if data.get(key) is not None:
            raise unsupported(key, f"{key!r} ({ANTHROPIC_MESSAGES[key].same.removeprefix('refused: ')})")
    for key, header in _HEADER_PARAMS.items():
        if key in data:  # the SDK sends these as headers; the Messages API has no such body field
            raise InvalidRequest(
                f"{key}: not a body field of the Messages API (the SDK sends it as the {header} header)",
                param=key,
            )
    billing = data.get("billing_policy")
    if billing is not None and (type(billing) is not dict or billing.get("bill_to", "self") != "self"):
        raise unsupported("billing_policy", "billing_policy other than bill_to: self")
    native = native_fields(API, data, [k for k in data if k in extra], ANTHROPIC_MESSAGES) or {
        "api": API,
        "fields": {},
        "paths": [],
        "serving": [],
    }
    fields = native["fields"]
    thinking = data.get("thinking")
    if thinking is not None:
        fields["thinking"] = thinking
    out_cfg = data.get("output_config")
    if type(out_cfg) is dict:
        own = {k: out_cfg[k] for k in ("effort", "task_budget") if out_cfg.get(k) is not None}
        if own:
            fields["output_config"] = own
    if extras.tool_fields:
        fields["tool_fields"] = extras.tool_fields
    if extras.server_tools:
        fields["server_tools"] = extras.server_tools
        fields[SERVER_TOOL_AT] = extras.server_at
    native["paths"] += extras.paths
    native["serving"] += extras.serving
    if extras.translated:
        native["translated"] = extras.translated
    return native if fields or native["paths"] or native["serving"] or extras.translated else None


def _parse(body: bytes, limits: InputLimits, *, count_tokens: bool) -> Request:
    data = load_body(body)
    check_bounds(data, body, limits, _FREE_FORM, extra_parts="system", inner_parts=True, tools=_TOOL_SITES)
    get = data.get
    model = get("model")
    if type(model) is not str:
        invalid(data, "model", str, "")
    if not model:
        raise InvalidRequest("model: must not be empty", param="model")
    max_tokens = get("max_tokens")
    if type(max_tokens) is not int:
        max_tokens = opt(data, "max_tokens", int, "") if count_tokens else req(data, "max_tokens", int, "")
    if max_tokens is not None and max_tokens < 1:
        raise InvalidRequest(f"max_tokens: must be at least 1, got {max_tokens}", param="max_tokens")
    metadata = get("metadata")
    if metadata is not None and type(metadata) is not dict:
        check(metadata, dict, "metadata")  # raises
    stops = get("stop_sequences")
    if stops is not None:
        if type(stops) is not list:
            check(stops, list, "stop_sequences")  # raises
        for i, s in enumerate(stops):
            if type(s) is not str:
                raise wrong_type(join("stop_sequences", i), "a string", s)
    messages, st = _messages(data)
    out: JSONObj = {"model": model, "messages": messages, "include_usage": True}
    # Optional fields, checked in a fixed order (the first error wins); absent ones are left
    # to the schema's defaults.
    has_mcp = False
    extras = _Extras()
    extras.paths += st.native
    extras.serving += st.serving
    extras.translated = st.translated
    if "tools" in data:
        out["tools"], has_mcp = _tools(data, extras)
    choice = get("tool_choice")
    if choice is not None:
        out["tool_choice"] = tool_choice(
            choice if type(choice) is dict else check(choice, dict, "tool_choice")
        )
    out["max_output_tokens"] = max_tokens
    if "temperature" in data:
        out["temperature"] = temperature(data)
    for key, typ in _NUMBERS:
        value = get(key)
        if value is not None:
            out[key] = value if type(value) is typ else check(value, typ, key)
    if stops:
        out["stop"] = list(stops)
    out_cfg = get("output_config")
    if out_cfg is not None and type(out_cfg) is not dict:
        check(out_cfg, dict, "output_config")  # raises
    if out_cfg:
        if not out_cfg.keys() <= OUTPUT_CONFIG_KEYS:
            only_keys(out_cfg, OUTPUT_CONFIG_KEYS, "output_config", "output_config")
        if out_cfg.get("task_budget") is not None:  # the beta task budget: to Claude only
            extras.serving.append("output_config.task_budget")
    if out_cfg or "output_format" in data:
        out["response_format"] = response_format(data, out_cfg)
    if out_cfg or "thinking" in data:
        out["thinking"] = thinking(data, out_cfg or {}, extras.serving)
    stream = get("stream")
    if stream is not None:
        out["stream"] = stream if type(stream) is bool else check(stream, bool, "stream")
    if metadata:
        if not metadata.keys() <= METADATA_KEYS:
            only_keys(metadata, METADATA_KEYS, "metadata", "metadata")
        out["user"] = opt(metadata, "user_id", str, "metadata")
        out["metadata"] = metadata
    if has_mcp:
        out["mcp_servers"] = mcp_server_entries(data)
    if b'"cache_control"' in body:
        out["cache_marks"] = True
    extra = data.keys() - _READ
    if count_tokens and extra:
        _count_tokens_extra(data, extra)
    if (
        extra
        or extras.tool_fields
        or extras.paths
        or extras.serving
        or extras.translated
        or out.get("thinking")
    ):
        native = _native(data, extra, extras)
        if native is not None:
            out["native"] = native
    thread = get("thread")
    if thread is not None:  # message threads: gateway/edges/anthropic_messages_thread.py
        if count_tokens:
            raise InvalidRequest(
                "thread: count_tokens counts the conversation it is given; send it whole, without thread",
                param="thread",
            )
        return threaded(validate_request(out, _FIELD_NAMES), parse_thread(thread))
    return validate_request(out, _FIELD_NAMES)


def _count_tokens_extra(data: JSONObj, extra: set[str]) -> None:
    """Refuse a ``count_tokens`` body's top-level field that no Messages field table lists (a
    vendor extension): on ``/v1/messages`` it would be passed through to an Anthropic upstream,
    but the gateway counts tokens itself, so no upstream would get it (the Anthropic API refuses
    it too). Listed fields (``max_tokens``, ``service_tier``, ...) are accepted, as clients send
    their Messages body as it is; they do not change the count."""
    unknown = sorted(k for k in extra if k not in ANTHROPIC_MESSAGES and data[k] is not None)
    if unknown:
        raise InvalidRequest(
            f"{unknown[0]}: unknown count_tokens field (the gateway counts the tokens itself; no "
            "upstream would get it)",
            param=unknown[0],
        )


def parse_request(body: bytes, limits: InputLimits = DEFAULT_LIMITS) -> Request:
    """Parse an Anthropic Messages request body (JSON bytes) into a :class:`Request`.

    Messages get ``src`` = ``"messages[i]"`` (``"messages[i].content[j]"`` for a tool result,
    ``"system"`` for the top-level system prompt); tool calls ``"messages[i].content[j]"``.
    ``include_usage`` is always True (Anthropic streams always report usage). Raises
    :class:`gateway.errors.InvalidRequest` naming the field for malformed JSON, wrong types,
    missing ``model``/``max_tokens``/``messages``, empty ``messages``, unknown roles or block
    types, and unsupported features (documents, diagnostics, compaction), and
    :class:`gateway.errors.PayloadTooLarge` past the message, part or tool ``limits``
    (:func:`gateway.edges._bounds.check_bounds`; JSON nested too deep is an InvalidRequest).
    """
    return _parse(body, limits, count_tokens=False)


def parse_count_tokens(body: bytes, limits: InputLimits = DEFAULT_LIMITS) -> Request:
    """Parse a ``POST /v1/messages/count_tokens`` body: like :func:`parse_request` but
    ``max_tokens`` is optional and a top-level field no Messages field table lists is refused
    by name (:func:`_count_tokens_extra`). Raises :class:`gateway.errors.InvalidRequest` (and
    :class:`gateway.errors.PayloadTooLarge`) as it does."""
    return _parse(body, limits, count_tokens=True)
