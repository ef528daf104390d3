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
* ``output_config.effort`` -> ``ThinkingConfig.effort`` (``max``/``xhigh`` clamp to
  ``high``); ``output_config.format`` (json_schema) -> ``ResponseFormat``.
* Not supported yet, rejected naming the path: documents, search results, server tools
  (``web_search_*``, ``code_execution_*``, ...), their result blocks, ``mcp_servers``.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.edges._common import (
    JSONObj,
    as_obj,
    join,
    load_body,
    mcp_server_entries,
    missing,
    opt,
    req,
    unsupported,
    wrong_type,
)
from gateway.edges.signatures import unwrap_signature, unwrap_tool_call_id
from gateway.errors import InvalidRequest
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Message,
    Provenance,
    RedactedThinkingPart,
    Request,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ThinkingConfig,
    ThinkingPart,
    ToolCallPart,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

NATIVE = Provenance(api="anthropic_messages", provider="anthropic", model="")
"""Provenance of a raw (unwrapped) signature sent by an Anthropic client."""

_UNSUPPORTED_BLOCKS = frozenset(
    {
        "document",
        "search_result",
        "container_upload",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "tool_reference",
        "tool_addition",
        "advisor_tool_result",
    }
)
_EFFORTS = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
    "max": "high",
}


def _unknown_block(kind: str, path: str, allowed: str) -> InvalidRequest:
    tpath = join(path, "type")
    if kind in _UNSUPPORTED_BLOCKS or kind.endswith("_tool_result"):
        return unsupported(tpath, f"content block type {kind!r}")
    return InvalidRequest(
        f"{tpath}: unknown content block type {kind!r} here (expected {allowed})", param=tpath
    )


def _text(block: JSONObj, path: str) -> TextPart | None:
    text = req(block, "text", str, path)
    if not text:
        return None
    return TextPart(text=text, cache_control=opt(block, "cache_control", dict, path))


def _image(block: JSONObj, path: str) -> ImagePart:
    spath = join(path, "source")
    source = as_obj(req(block, "source", dict, path), spath)
    stype = req(source, "type", str, spath)
    cache = opt(block, "cache_control", dict, path)
    if stype == "base64":
        return ImagePart(
            data=req(source, "data", str, spath),
            media_type=req(source, "media_type", str, spath),
            cache_control=cache,
        )
    if stype == "url":
        return ImagePart(url=req(source, "url", str, spath), cache_control=cache)
    raise unsupported(join(spath, "type"), f"image source type {stype!r}")


def _unwrap(value: str, path: str) -> tuple[str, Provenance]:
    try:
        sig, prov = unwrap_signature(value)
    except ValueError as exc:
        raise InvalidRequest(f"{path}: damaged Turnstile signature envelope ({exc})", param=path) from None
    return sig, prov or NATIVE


def _text_content(content: Any, path: str) -> list[TextPart]:
    """``content`` that may hold only text: a string or text blocks."""
    if isinstance(content, str):
        return [TextPart(text=content)] if content else []
    if not isinstance(content, list):
        raise wrong_type(path, "a string or an array of text blocks", content)
    out = []
    for j, raw in enumerate(content):
        bpath = join(path, j)
        block = as_obj(raw, bpath)
        kind = req(block, "type", str, bpath)
        if kind != "text":
            raise _unknown_block(kind, bpath, "text")
        part = _text(block, bpath)
        if part is not None:
            out.append(part)
    return out


class _State:
    def __init__(self) -> None:
        self.names: dict[str, str] = {}


def _tool_result(block: JSONObj, path: str, st: _State) -> ToolResultMessage:
    call_id = unwrap_tool_call_id(req(block, "tool_use_id", str, path))[0]
    content = block.get("content")
    cpath = join(path, "content")
    parts: list[TextPart | ImagePart] = []
    if isinstance(content, str):
        if content:
            parts.append(TextPart(text=content))
    elif isinstance(content, list):
        for k, raw in enumerate(content):
            bpath = join(cpath, k)
            inner = as_obj(raw, bpath)
            kind = req(inner, "type", str, bpath)
            if kind not in ("text", "image"):
                raise _unknown_block(kind, bpath, "text or image")
            _add_media(parts, kind, inner, bpath)
    elif content is not None:
        raise wrong_type(cpath, "a string or an array of content blocks", content)
    return ToolResultMessage(
        tool_call_id=call_id,
        content=parts,
        is_error=bool(opt(block, "is_error", bool, path)),
        name=st.names.get(call_id),
        cache_control=opt(block, "cache_control", dict, path),
        src=path,
    )


def _add_media(parts: list[TextPart | ImagePart], kind: str, block: JSONObj, path: str) -> None:
    """Append the ``text`` (dropped when empty) or ``image`` block at ``path`` to ``parts``."""
    if kind == "image":
        parts.append(_image(block, path))
        return
    part = _text(block, path)
    if part is not None:
        parts.append(part)


def _user(msg: JSONObj, path: str, st: _State) -> list[Message]:
    content = msg.get("content")
    cpath = join(path, "content")
    if content is None:
        raise missing(cpath)
    if isinstance(content, str):
        return [UserMessage(content=[TextPart(text=content)] if content else [], src=path)]
    if not isinstance(content, list):
        raise wrong_type(cpath, "a string or an array of content blocks", content)
    results: list[Message] = []
    parts: list[TextPart | ImagePart] = []
    for j, raw in enumerate(content):
        bpath = join(cpath, j)
        block = as_obj(raw, bpath)
        kind = req(block, "type", str, bpath)
        if kind in ("text", "image"):
            _add_media(parts, kind, block, bpath)
        elif kind == "tool_result":
            results.append(_tool_result(block, bpath, st))
        else:
            raise _unknown_block(kind, bpath, "text, image or tool_result")
    if parts or not results:
        results.append(UserMessage(content=parts, src=path))
    return results


def _assistant(msg: JSONObj, path: str, st: _State) -> AssistantMessage:
    content = msg.get("content")
    cpath = join(path, "content")
    if content is None:
        raise missing(cpath)
    if isinstance(content, str):
        return AssistantMessage(content=[TextPart(text=content)] if content else [], src=path)
    if not isinstance(content, list):
        raise wrong_type(cpath, "a string or an array of content blocks", content)
    parts: list[Any] = []
    for j, raw in enumerate(content):
        bpath = join(cpath, j)
        block = as_obj(raw, bpath)
        kind = req(block, "type", str, bpath)
        if kind == "text":
            part = _text(block, bpath)
            if part is not None:
                parts.append(part)
        elif kind == "thinking":
            text = req(block, "thinking", str, bpath)
            raw_sig = opt(block, "signature", str, bpath)
            if raw_sig:
                sig, prov = _unwrap(raw_sig, join(bpath, "signature"))
                parts.append(ThinkingPart(text=text, signature=sig, provenance=prov))
            else:
                parts.append(ThinkingPart(text=text))
        elif kind == "redacted_thinking":
            data, prov = _unwrap(req(block, "data", str, bpath), join(bpath, "data"))
            parts.append(RedactedThinkingPart(data=data, provenance=prov))
        elif kind == "tool_use":
            raw_input = block.get("input")
            args = as_obj({} if raw_input is None else raw_input, join(bpath, "input"))
            call_id, call_sig, cprov = unwrap_tool_call_id(req(block, "id", str, bpath))
            name = req(block, "name", str, bpath)
            st.names.setdefault(call_id, name)
            parts.append(
                ToolCallPart(
                    id=call_id,
                    name=name,
                    arguments=args,
                    raw_arguments=orjson.dumps(args).decode(),
                    signature=call_sig,
                    provenance=cprov,
                    src=bpath,
                )
            )
        else:
            raise _unknown_block(kind, bpath, "text, thinking, redacted_thinking or tool_use")
    return AssistantMessage(content=parts, src=path)


def _messages(data: JSONObj) -> list[Message]:
    out: list[Message] = []
    system = data.get("system")
    if system is not None:
        parts = _text_content(system, "system")
        if parts:
            out.append(SystemMessage(content=parts, src="system"))
    raw_messages = req(data, "messages", list, "")
    if not raw_messages:
        raise InvalidRequest("messages: must contain at least one message", param="messages")
    st = _State()
    for i, raw in enumerate(raw_messages):
        path = join("messages", i)
        msg = as_obj(raw, path)
        role = req(msg, "role", str, path)
        if role == "user":
            out.extend(_user(msg, path, st))
        elif role == "assistant":
            out.append(_assistant(msg, path, st))
        elif role == "system":
            content = msg.get("content")
            if content is None:
                raise missing(join(path, "content"))
            parts = _text_content(content, join(path, "content"))
            if parts:
                out.append(SystemMessage(content=parts, src=path))
        else:
            raise InvalidRequest(
                f"{join(path, 'role')}: unknown role {role!r} (expected user or assistant)",
                param=join(path, "role"),
            )
    return out


def _tools(data: JSONObj) -> list[ToolDefinition]:
    out = []
    for i, raw in enumerate(opt(data, "tools", list, "") or []):
        path = join("tools", i)
        tool = as_obj(raw, path)
        ttype = opt(tool, "type", str, path)
        if ttype == "mcp":
            continue  # a registered MCP server for the gateway's tool loop: see mcp_server_entries
        if ttype not in (None, "custom"):
            raise unsupported(join(path, "type"), f"server tool type {ttype!r}")
        out.append(
            ToolDefinition(
                name=req(tool, "name", str, path),
                description=opt(tool, "description", str, path),
                parameters=req(tool, "input_schema", dict, path),
                strict=opt(tool, "strict", bool, path),
                cache_control=opt(tool, "cache_control", dict, path),
            )
        )
    return out


_CHOICE_MODES = {"auto": "auto", "any": "required", "tool": "tool", "none": "none"}


def _temperature(data: JSONObj) -> float | None:
    """``temperature``: Anthropic takes 0–1 (docs.anthropic.com, Messages API), not OpenAI's 0–2."""
    value = opt(data, "temperature", float, "")
    if value is not None and not 0.0 <= value <= 1.0:
        raise InvalidRequest(f"temperature must be between 0 and 1, got {value:g}", param="temperature")
    return value


def _tool_choice(data: JSONObj) -> ToolChoice | None:
    raw = opt(data, "tool_choice", dict, "")
    if raw is None:
        return None
    path = "tool_choice"
    ctype = req(raw, "type", str, path)
    if ctype not in _CHOICE_MODES:
        raise InvalidRequest(
            f"{path}.type: expected auto, any, tool or none, got {ctype!r}", param=join(path, "type")
        )
    disable = opt(raw, "disable_parallel_tool_use", bool, path)
    return ToolChoice(
        mode=_CHOICE_MODES[ctype],  # type: ignore[arg-type]
        name=req(raw, "name", str, path) if ctype == "tool" else None,
        parallel=None if disable is None else not disable,
    )


def _thinking(data: JSONObj) -> ThinkingConfig | None:
    cfg: ThinkingConfig | None = None
    raw = opt(data, "thinking", dict, "")
    if raw is not None:
        ttype = req(raw, "type", str, "thinking")
        if ttype == "enabled":
            cfg = ThinkingConfig(enabled=True, budget_tokens=req(raw, "budget_tokens", int, "thinking"))
        elif ttype == "disabled":
            cfg = ThinkingConfig(enabled=False)
        elif ttype == "adaptive":
            cfg = ThinkingConfig(enabled=True)
        else:
            raise InvalidRequest(
                f"thinking.type: expected enabled, disabled or adaptive, got {ttype!r}", param="thinking.type"
            )
    out_cfg = opt(data, "output_config", dict, "") or {}
    effort = opt(out_cfg, "effort", str, "output_config")
    if effort is not None:
        if effort not in _EFFORTS:
            raise InvalidRequest(
                f"output_config.effort: expected low, medium, high, xhigh or max, got {effort!r}",
                param="output_config.effort",
            )
        cfg = (cfg or ThinkingConfig()).model_copy(update={"effort": _EFFORTS[effort]})
    return cfg


def _response_format(data: JSONObj) -> ResponseFormat | None:
    out_cfg = opt(data, "output_config", dict, "") or {}
    fmt = opt(out_cfg, "format", dict, "output_config")
    if fmt is None:
        return None
    path = "output_config.format"
    ftype = req(fmt, "type", str, path)
    if ftype != "json_schema":
        raise unsupported(join(path, "type"), f"output format {ftype!r}")
    return ResponseFormat(type="json_schema", schema=req(fmt, "schema", dict, path))


def _parse(body: bytes, *, count_tokens: bool) -> Request:
    data = load_body(body)
    model = req(data, "model", str, "")
    if not model:
        raise InvalidRequest("model: must not be empty", param="model")
    max_tokens = opt(data, "max_tokens", int, "") if count_tokens else req(data, "max_tokens", int, "")
    if max_tokens is not None and max_tokens < 1:
        raise InvalidRequest(f"max_tokens: must be at least 1, got {max_tokens}", param="max_tokens")
    if data.get("mcp_servers"):
        raise unsupported("mcp_servers", "the MCP connector (mcp_servers)")
    metadata = opt(data, "metadata", dict, "") or {}
    stops = opt(data, "stop_sequences", list, "") or []
    for i, s in enumerate(stops):
        if not isinstance(s, str):
            raise wrong_type(join("stop_sequences", i), "a string", s)
    return Request(
        model=model,
        messages=_messages(data),
        tools=_tools(data),
        tool_choice=_tool_choice(data),
        max_output_tokens=max_tokens,
        temperature=_temperature(data),
        top_p=opt(data, "top_p", float, ""),
        top_k=opt(data, "top_k", int, ""),
        stop=list(stops),
        response_format=_response_format(data),
        thinking=_thinking(data),
        stream=bool(opt(data, "stream", bool, "")),
        include_usage=True,
        user=opt(metadata, "user_id", str, "metadata"),
        metadata=metadata,
        mcp_servers=mcp_server_entries(data),
    )


def parse_request(body: bytes) -> Request:
    """Parse an Anthropic Messages request body (JSON bytes) into a :class:`Request`.

    Messages get ``src`` = ``"messages[i]"`` (``"messages[i].content[j]"`` for a tool result,
    ``"system"`` for the top-level system prompt); tool calls ``"messages[i].content[j]"``.
    ``include_usage`` is always True (Anthropic streams always report usage). Raises
    :class:`gateway.errors.InvalidRequest` naming the field for malformed JSON, wrong types,
    missing ``model``/``max_tokens``/``messages``, empty ``messages``, unknown roles or block
    types, and unsupported features (documents, server tools, MCP connector).
    """
    return _parse(body, count_tokens=False)


def parse_count_tokens(body: bytes) -> Request:
    """Parse a ``POST /v1/messages/count_tokens`` body: like :func:`parse_request` but
    ``max_tokens`` is optional. Raises :class:`gateway.errors.InvalidRequest`."""
    return _parse(body, count_tokens=True)
