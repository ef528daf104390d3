"""OpenAI Chat Completions request body -> :class:`gateway.schema.Request`.

Reference: https://platform.openai.com/docs/api-reference/chat/create. Tolerated extensions,
each observed in real client traffic (``../shared/corpus``):

* ``reasoning_content`` / ``reasoning`` strings on assistant messages (DeepSeek, OpenRouter,
  pydantic-ai ``test_deepseek`` cassettes) -> an unsigned :class:`ThinkingPart` first;
* Anthropic-style ``tool_use`` / ``thinking`` blocks inside an assistant ``content`` list
  (multi-hop proxies, handed case C05) -> :class:`ToolCallPart` / :class:`ThinkingPart`,
  kept next to ``tool_calls`` (the guards collapse identical duplicates);
* ``cache_control`` on messages, parts and tools (OpenRouter/Anthropic-compatible servers);
* unknown top-level keys (``seed``, ``n`` = 1, ``prompt_cache_key``, ``usage``, ...) are
  ignored; ``n`` > 1 is rejected.

Empty text parts are dropped (handed case C07). Tool-call ids carrying a Turnstile signature
envelope (:mod:`gateway.edges.signatures`) are unwrapped in calls and results.
"""

from __future__ import annotations

import hashlib
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
    parse_arguments,
    parse_data_uri,
    req,
    str_list,
    unsupported,
    wrong_type,
)
from gateway.edges.signatures import unwrap_signature, unwrap_tool_call_id
from gateway.errors import InvalidRequest
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Message,
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

_EFFORTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


def legacy_call_id(msg_index: int, name: str, arguments: str) -> str:
    """Deterministic id for a legacy ``function_call`` (which has none):
    ``"call_" + sha256(f"{msg_index}\\n{name}\\n{arguments}")[:24]``."""
    digest = hashlib.sha256(f"{msg_index}\n{name}\n{arguments}".encode()).hexdigest()
    return "call_" + digest[:24]


def _text(obj: JSONObj, path: str) -> TextPart | None:
    text = req(obj, "text", str, path)
    if text == "":
        return None
    return TextPart(text=text, cache_control=opt(obj, "cache_control", dict, path))


def _image(obj: JSONObj, path: str) -> ImagePart:
    value = obj.get("image_url")
    ipath = join(path, "image_url")
    if value is None:
        raise missing(ipath)
    if isinstance(value, str):
        url = value
    else:
        url = req(as_obj(value, ipath), "url", str, ipath)
        ipath = join(ipath, "url")
    cache = opt(obj, "cache_control", dict, path)
    if url.startswith("data:"):
        parsed = parse_data_uri(url)
        if parsed is None:
            raise InvalidRequest(f"{ipath}: data URI must be base64 encoded", param=ipath)
        return ImagePart(data=parsed[1], media_type=parsed[0], cache_control=cache)
    if url.startswith(("http://", "https://")):
        return ImagePart(url=url, cache_control=cache)
    raise InvalidRequest(f"{ipath}: expected an http(s) URL or a base64 data URI", param=ipath)


def _part(part: JSONObj, ppath: str, allowed: tuple[str, ...]) -> TextPart | ImagePart | None:
    """Parse one content part (already checked to be an object) of a type in ``allowed``;
    None for an empty text part (dropped, handed case C07)."""
    kind = req(part, "type", str, ppath)
    if kind not in allowed:
        if kind in ("input_audio", "file", "audio"):
            raise unsupported(join(ppath, "type"), f"content part type {kind!r}")
        raise InvalidRequest(
            f"{join(ppath, 'type')}: unknown content part type {kind!r} here (expected one of "
            f"{', '.join(allowed)})",
            param=join(ppath, "type"),
        )
    if kind in ("text", "refusal"):
        text = req(part, kind, str, ppath)
        if not text:
            return None
        return TextPart(text=text, cache_control=opt(part, "cache_control", dict, ppath))
    return _image(part, ppath)


def _parts(content: Any, path: str, allowed: tuple[str, ...]) -> list[TextPart | ImagePart]:
    """Parse a ``content`` string or parts list allowing part types ``allowed``."""
    if isinstance(content, str):
        return [TextPart(text=content)] if content else []
    if not isinstance(content, list):
        raise wrong_type(path, "a string or an array of content parts", content)
    out: list[TextPart | ImagePart] = []
    for i, raw in enumerate(content):
        ppath = join(path, i)
        part = _part(as_obj(raw, ppath), ppath, allowed)
        if part is not None:
            out.append(part)
    return out


def _message_cache(msg: JSONObj, parts: list[Any], path: str) -> None:
    cache = opt(msg, "cache_control", dict, path)
    if cache is not None and parts and getattr(parts[-1], "cache_control", 1) is None:
        parts[-1].cache_control = cache


def _tool_call_part(id_raw: str, name: str, raw: str, src: str) -> ToolCallPart:
    call_id, sig, prov = unwrap_tool_call_id(id_raw)
    return ToolCallPart(
        id=call_id,
        name=name,
        arguments=parse_arguments(raw),
        raw_arguments=raw,
        signature=sig,
        provenance=prov,
        src=src,
    )


def _raw_arguments(fn: JSONObj, path: str) -> str:
    value = fn.get("arguments")
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    raise wrong_type(join(path, "arguments"), "a string", value)


class _State:
    """Per-request parse state: names of calls by id and unanswered legacy calls."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.legacy_pending: list[tuple[str, str]] = []


def _assistant(msg: JSONObj, i: int, path: str, st: _State) -> AssistantMessage:
    content: list[Any] = []
    for key in ("reasoning_content", "reasoning"):
        thought = opt(msg, key, str, path)
        if thought:
            content.append(ThinkingPart(text=thought))
            break
    raw_content = msg.get("content")
    cpath = join(path, "content")
    if isinstance(raw_content, list):
        for j, raw in enumerate(raw_content):
            ppath = join(cpath, j)
            part = as_obj(raw, ppath)
            kind = req(part, "type", str, ppath)
            if kind == "tool_use":
                raw_input = part.get("input")
                if raw_input is None:
                    raw_input = {}
                args = orjson.dumps(as_obj(raw_input, join(ppath, "input"))).decode()
                content.append(
                    _tool_call_part(req(part, "id", str, ppath), req(part, "name", str, ppath), args, ppath)
                )
            elif kind == "thinking":
                sig_raw = opt(part, "signature", str, ppath)
                sig, prov = _unwrap_sig(sig_raw, join(ppath, "signature"))
                content.append(ThinkingPart(text=_thinking_text(part, ppath), signature=sig, provenance=prov))
            elif kind == "redacted_thinking":
                data, prov = _unwrap_sig(req(part, "data", str, ppath), join(ppath, "data"))
                content.append(RedactedThinkingPart(data=data or "", provenance=prov))
            else:
                parsed = _part(part, ppath, ("text", "refusal"))
                if parsed is not None:
                    content.append(parsed)
    elif raw_content is not None:
        content.extend(_parts(raw_content, cpath, ("text", "refusal")))
    refusal = opt(msg, "refusal", str, path)
    if refusal and not raw_content:
        content.append(TextPart(text=refusal))
    calls = opt(msg, "tool_calls", list, path)
    for j, raw in enumerate(calls or []):
        tpath = join(join(path, "tool_calls"), j)
        call = as_obj(raw, tpath)
        ctype = opt(call, "type", str, tpath)
        if ctype not in (None, "function"):
            raise unsupported(join(tpath, "type"), f"tool call type {ctype!r}")
        fpath = join(tpath, "function")
        fn = as_obj(req(call, "function", dict, tpath), fpath)
        content.append(
            _tool_call_part(
                req(call, "id", str, tpath), req(fn, "name", str, fpath), _raw_arguments(fn, fpath), tpath
            )
        )
    legacy = opt(msg, "function_call", dict, path)
    if legacy is not None:
        fpath = join(path, "function_call")
        name = req(legacy, "name", str, fpath)
        raw = _raw_arguments(legacy, fpath)
        call_id = legacy_call_id(i, name, raw)
        content.append(
            ToolCallPart(id=call_id, name=name, arguments=parse_arguments(raw), raw_arguments=raw, src=fpath)
        )
        st.legacy_pending.append((call_id, name))
    for part in content:
        if isinstance(part, ToolCallPart):
            st.names.setdefault(part.id, part.name)
    return AssistantMessage(content=content, src=path)


def _thinking_text(part: JSONObj, path: str) -> str:
    """A ``thinking`` block's text: a string, or Mistral's list of ``{"text": ...}`` chunks
    (observed in pydantic-ai cassette ``test_mistral/test_mistral_model_thinking_part.yaml``)."""
    value = part.get("thinking")
    tpath = join(path, "thinking")
    if isinstance(value, list):
        chunks = [as_obj(c, join(tpath, k)) for k, c in enumerate(value)]
        return "".join(req(c, "text", str, join(tpath, k)) for k, c in enumerate(chunks))
    return req(part, "thinking", str, path)


def _unwrap_sig(value: str | None, path: str) -> tuple[str | None, Any]:
    if value is None:
        return None, None
    try:
        return unwrap_signature(value)
    except ValueError as exc:
        raise InvalidRequest(f"{path}: damaged Turnstile signature envelope ({exc})", param=path) from None


def _message(raw: Any, i: int, st: _State) -> Message | None:
    path = join("messages", i)
    msg = as_obj(raw, path)
    role = req(msg, "role", str, path)
    if role in ("system", "developer"):
        content = msg.get("content")
        if content is None:
            raise missing(join(path, "content"))
        parts = _parts(content, join(path, "content"), ("text",))
        _message_cache(msg, parts, path)
        texts = [p for p in parts if isinstance(p, TextPart)]
        return SystemMessage(content=texts, src=path) if texts else None
    if role == "user":
        content = msg.get("content")
        parts = [] if content is None else _parts(content, join(path, "content"), ("text", "image_url"))
        _message_cache(msg, parts, path)
        return UserMessage(content=parts, src=path)
    if role == "assistant":
        return _assistant(msg, i, path, st)
    if role == "tool":
        raw_id = req(msg, "tool_call_id", str, path)
        call_id = unwrap_tool_call_id(raw_id)[0]
        content = msg.get("content")
        parts = [] if content is None else _parts(content, join(path, "content"), ("text", "image_url"))
        name = opt(msg, "name", str, path) or st.names.get(call_id)
        return ToolResultMessage(
            tool_call_id=call_id,
            content=parts,
            name=name,
            cache_control=opt(msg, "cache_control", dict, path),
            src=path,
        )
    if role == "function":
        name = req(msg, "name", str, path)
        content = msg.get("content")
        parts = [] if content is None else _parts(content, join(path, "content"), ("text",))
        if st.legacy_pending:
            match = next(
                (k for k in range(len(st.legacy_pending) - 1, -1, -1) if st.legacy_pending[k][1] == name), -1
            )
            call_id = st.legacy_pending.pop(match)[0]
        else:
            call_id = legacy_call_id(i, name, "<result without call>")
        return ToolResultMessage(tool_call_id=call_id, content=parts, name=name, src=path)
    raise InvalidRequest(
        f"{join(path, 'role')}: unknown role {role!r} (expected system, developer, user, assistant, tool "
        "or function)",
        param=join(path, "role"),
    )


def _tools(body: JSONObj) -> list[ToolDefinition]:
    out: list[ToolDefinition] = []
    for i, raw in enumerate(opt(body, "tools", list, "") or []):
        path = join("tools", i)
        tool = as_obj(raw, path)
        ttype = req(tool, "type", str, path)
        if ttype == "mcp":
            continue  # a registered MCP server for the gateway's tool loop: see mcp_server_entries
        if ttype != "function":
            raise unsupported(join(path, "type"), f"tool type {ttype!r}")
        fpath = join(path, "function")
        fn = as_obj(req(tool, "function", dict, path), fpath)
        out.append(_tool_def(fn, fpath, opt(tool, "cache_control", dict, path)))
    for i, raw in enumerate(opt(body, "functions", list, "") or []):
        path = join("functions", i)
        out.append(_tool_def(as_obj(raw, path), path, None))
    return out


def _tool_def(fn: JSONObj, path: str, cache: dict[str, Any] | None) -> ToolDefinition:
    params = opt(fn, "parameters", dict, path)
    return ToolDefinition(
        name=req(fn, "name", str, path),
        description=opt(fn, "description", str, path),
        parameters=params if params is not None else {"type": "object", "properties": {}},
        strict=opt(fn, "strict", bool, path),
        cache_control=cache or opt(fn, "cache_control", dict, path),
    )


def _tool_choice(body: JSONObj) -> ToolChoice | None:
    parallel = opt(body, "parallel_tool_calls", bool, "")
    raw = body.get("tool_choice")
    path = "tool_choice"
    if raw is None and body.get("function_call") is not None:
        raw, path = body["function_call"], "function_call"
        if isinstance(raw, dict):
            raw = {"type": "function", "function": raw}
    if raw is None:
        return ToolChoice(parallel=parallel) if parallel is not None else None
    if isinstance(raw, str):
        if raw not in ("auto", "none", "required"):
            raise InvalidRequest(f"{path}: expected auto, none or required, got {raw!r}", param=path)
        return ToolChoice(mode=raw, parallel=parallel)  # type: ignore[arg-type]
    obj = as_obj(raw, path)
    ctype = req(obj, "type", str, path)
    if ctype != "function":
        raise unsupported(join(path, "type"), f"tool_choice type {ctype!r}")
    fpath = join(path, "function")
    fn = as_obj(req(obj, "function", dict, path), fpath)
    return ToolChoice(mode="tool", name=req(fn, "name", str, fpath), parallel=parallel)


def _response_format(body: JSONObj) -> ResponseFormat | None:
    raw = opt(body, "response_format", dict, "")
    if raw is None:
        return None
    path = "response_format"
    rtype = req(raw, "type", str, path)
    if rtype in ("text", "json_object"):
        return ResponseFormat(type=rtype)  # type: ignore[arg-type]
    if rtype != "json_schema":
        raise InvalidRequest(f"{path}.type: unknown response format {rtype!r}", param=join(path, "type"))
    spath = join(path, "json_schema")
    js = as_obj(req(raw, "json_schema", dict, path), spath)
    return ResponseFormat(
        type="json_schema",
        name=opt(js, "name", str, spath),
        schema=opt(js, "schema", dict, spath),
        strict=opt(js, "strict", bool, spath),
    )


def _thinking(body: JSONObj) -> ThinkingConfig | None:
    effort = opt(body, "reasoning_effort", str, "")
    if effort is None or effort == "default":
        return None
    if effort == "none":
        return ThinkingConfig(enabled=False)
    if effort not in _EFFORTS:
        raise InvalidRequest(
            f"reasoning_effort: expected none, minimal, low, medium, high or xhigh, got {effort!r}",
            param="reasoning_effort",
        )
    return ThinkingConfig(effort=_EFFORTS[effort])  # type: ignore[arg-type]


def _max_tokens(body: JSONObj) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = opt(body, key, int, "")
        if value is not None:
            if value < 1:
                raise InvalidRequest(f"{key}: must be at least 1, got {value}", param=key)
            return value
    return None


def parse_request(body: bytes) -> Request:
    """Parse an OpenAI Chat Completions request body (JSON bytes) into a :class:`Request`.

    Messages get ``src`` = ``"messages[i]"``; tool calls ``"messages[i].tool_calls[j]"``
    (``...content[j]`` for a ``tool_use`` block, ``...function_call`` for a legacy call).
    Raises :class:`gateway.errors.InvalidRequest` with ``param`` naming the field for
    malformed JSON, wrong types, missing ``model``/``messages``, empty ``messages``, unknown
    roles or part types, and unsupported features (audio, files, non-function tools, n > 1).
    """
    data = load_body(body)
    model = req(data, "model", str, "")
    if not model:
        raise InvalidRequest("model: must not be empty", param="model")
    raw_messages = req(data, "messages", list, "")
    if not raw_messages:
        raise InvalidRequest("messages: must contain at least one message", param="messages")
    n = opt(data, "n", int, "")
    if n is not None and n != 1:
        raise unsupported("n", "n other than 1")
    st = _State()
    messages = [m for i, raw in enumerate(raw_messages) if (m := _message(raw, i, st)) is not None]
    stream_options = opt(data, "stream_options", dict, "") or {}
    metadata = opt(data, "metadata", dict, "") or {}
    return Request(
        model=model,
        messages=messages,
        tools=_tools(data),
        tool_choice=_tool_choice(data),
        max_output_tokens=_max_tokens(data),
        temperature=opt(data, "temperature", float, ""),
        top_p=opt(data, "top_p", float, ""),
        top_k=opt(data, "top_k", int, ""),
        stop=str_list(data, "stop", ""),
        response_format=_response_format(data),
        thinking=_thinking(data),
        stream=bool(opt(data, "stream", bool, "")),
        include_usage=bool(opt(stream_options, "include_usage", bool, "stream_options")),
        user=opt(data, "user", str, ""),
        metadata=metadata,
        mcp_servers=mcp_server_entries(data),
    )
