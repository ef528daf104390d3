"""OpenAI Chat Completions request body -> :class:`gateway.schema.Request`.

Reference: https://platform.openai.com/docs/api-reference/chat/create. Tolerated extensions,
each observed in real client traffic (``../shared/corpus``):

* ``reasoning_content`` / ``reasoning`` strings on assistant messages (DeepSeek, OpenRouter,
  pydantic-ai ``test_deepseek`` cassettes) -> an unsigned :class:`ThinkingPart` first;
* ``reasoning_details`` on assistant messages (OpenRouter's shape, which this edge renders:
  https://openrouter.ai/docs/use-cases/reasoning-tokens#reasoning-details) and LiteLLM's
  ``thinking_blocks`` (https://docs.litellm.ai/docs/reasoning_content) -> signed
  :class:`ThinkingPart` / :class:`RedactedThinkingPart` first, in place of the unsigned text
  of ``reasoning_content`` (the same reasoning); a signature in Turnstile's envelope keeps its
  provenance, a raw one of format ``anthropic-claude-v1`` (or in ``thinking_blocks``) is
  Anthropic's;
* Anthropic-style ``tool_use`` / ``thinking`` blocks inside an assistant ``content`` list
  (multi-hop proxies, handed case C05) -> :class:`ToolCallPart` / :class:`ThinkingPart`,
  kept next to ``tool_calls`` (the guards collapse identical duplicates);
* ``cache_control`` on messages, parts and tools (OpenRouter/Anthropic-compatible servers);
* ``custom`` tools (free-form input) are read as the Responses edge reads its own (a function
  with one string argument ``input``, the format kept as ``freeform``: :func:`chat_custom_tool`),
  a ``custom`` tool call in an assistant message as a call of it with ``{"input": ...}``, and a
  ``custom`` or ``allowed_tools`` tool choice into :class:`gateway.schema.ToolChoice`;
* a message's ``name`` (user, assistant, system, developer), ``role: developer`` (a system
  message marked ``developer``), ``image_url.detail``, ``seed`` and the penalties are read
  into the schema; which targets get them: :mod:`gateway.layers.target_fields`;
* every other top-level field is classed by :data:`gateway.edges.fidelity.OPENAI_CHAT`
  (``docs/fidelity.md``): serving-only ones (``service_tier``, ``store``, ``metadata``,
  ``prompt_cache_key``, ``prediction``, ...) and answer-changing ones (
  ``logit_bias``, ``verbosity``, ``web_search_options``, vendor extensions) go to
  ``Request.native`` for an OpenAI Chat upstream; ``n`` > 1, ``logprobs``, ``top_logprobs``,
  ``audio`` and non-text ``modalities`` are refused by name.

Nested keys (issue 14): a key the SDK types (and the extensions above) do not define on a
content part, ``image_url``, tool call, tool function, ``tool_choice``, ``response_format``
or ``stream_options`` is refused by name (:mod:`gateway.edges._keys`); a message's other keys
(an assistant's ``audio`` and ``annotations``, Mistral's ``prefix``) and a ``tools[]`` entry's
other keys are carried to an OpenAI Chat upstream on that message / tool (the message's
``own``, ``NativeFields.fields["tool_fields"]``) and dropped or refused by name toward another
wire API; a part's ``prompt_cache_breakpoint`` goes on the part (``own_keys``), an assistant's
``reasoning_content`` / ``reasoning`` back on its message. The messages are read by
:mod:`gateway.edges.openai_chat_messages`.

Empty text parts are dropped (handed case C07). Tool-call ids carrying a Turnstile signature
envelope (:mod:`gateway.edges.signatures`) are unwrapped in calls and results.

How it works: one pass over the decoded body checks every field by hand (errors name the
field, :mod:`gateway.edges._common`) and assembles plain dicts and lists in the shape of
:mod:`gateway.schema` (``role``/``type`` discriminator keys, ``src`` locations); the result is
validated once, by :func:`gateway.edges._common.validate_request`.
"""

from __future__ import annotations

from typing import Any

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
    opt,
    req,
    str_list,
    unsupported,
    validate_request,
    wrong_type,
)
from gateway.edges._keys import check_keys
from gateway.edges.call_ids import refusal
from gateway.edges.fidelity import OPENAI_CHAT, native_fields
from gateway.edges.openai_chat_keys import (
    CHOICE_FUNCTION_KEYS,
    CHOICE_KEYS,
    FORMAT_KEYS,
    FUNCTION_KEYS,
    JSON_SCHEMA_KEYS,
    LEGACY_FUNCTION_KEYS,
    STREAM_OPTIONS_KEYS,
    TOOL_KEYS,
    TOOL_SERVING,
)
from gateway.edges.openai_chat_messages import ChatState, attach_own, own_paths, parse_message
from gateway.edges.openai_responses_tools import custom_tool
from gateway.errors import InvalidRequest
from gateway.providers.openai_common import API
from gateway.schema import Request

_EFFORTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}

_FIELD_NAMES = {"max_output_tokens": "max_tokens", "thinking": "reasoning_effort", "stop": "stop"}
"""Internal top-level field -> the client's field, for the (unexpected) validation error."""

_FREE_FORM: tuple[FieldPattern, ...] = (
    ("metadata",),
    ("tools", "*", "function", "parameters"),
    ("tools", "*", "function", "cache_control"),
    ("tools", "*", "cache_control"),
    ("functions", "*", "parameters"),
    ("response_format", "json_schema", "schema"),
    ("messages", "*", "tool_calls", "*", "function", "arguments"),
    ("messages", "*", "function_call", "arguments"),
    ("messages", "*", "content", "*", "input"),
    ("messages", "*", "content", "*", "cache_control"),
    ("messages", "*", "cache_control"),
)
"""Where a request carries JSON of the client's own shape (named when it nests too deep)."""

_NUMBERS = (
    ("temperature", float),
    ("top_p", float),
    ("top_k", int),
    ("seed", int),
    ("presence_penalty", float),
    ("frequency_penalty", float),
)
_ZERO_ASKS_NOTHING = frozenset({"presence_penalty", "frequency_penalty"})


def _function_of(tool: Any) -> Any:
    return tool.get("function") if type(tool) is dict else None


def _field_of(value: Any, key: str) -> Any:
    return value.get(key) if type(value) is dict else None


_TOOL_SITES = tool_sites(
    ToolSite(
        "tools",
        "function.parameters",
        lambda t: _field_of(_function_of(t), "parameters"),
        lambda t: _field_of(_function_of(t), "name"),
    ),
    ToolSite("functions", "parameters", lambda f: _field_of(f, "parameters"), lambda f: _field_of(f, "name")),
)
"""Where tool definitions are, for :func:`gateway.edges._bounds.check_tools`."""


def _tools(body: JSONObj, st: ChatState) -> tuple[list[JSONObj], bool]:
    """Tool definition dicts of ``tools`` and legacy ``functions``, and whether ``tools`` has
    an ``mcp`` entry (read by :func:`gateway.edges._common.mcp_server_entries`)."""
    out: list[JSONObj] = []
    has_mcp = False
    for i, raw in enumerate(opt(body, "tools", list, "") or ()):
        path = f"tools[{i}]"
        tool = as_obj(raw, path)
        ttype = req(tool, "type", str, path)
        if ttype == "mcp":
            has_mcp = True
            continue  # a registered MCP server for the gateway's tool loop: see mcp_server_entries
        if ttype == "custom":
            out.append(chat_custom_tool(tool, path))
            continue
        if ttype != "function":
            raise unsupported(join(path, "type"), f"tool type {ttype!r}")
        fpath = path + ".function"
        fn = as_obj(req(tool, "function", dict, path), fpath)
        check_keys(fn, FUNCTION_KEYS, fpath)
        out.append(_tool_def(fn, fpath, opt(tool, "cache_control", dict, path)))
        if not tool.keys() <= TOOL_KEYS:
            _tool_extras(tool, out[-1]["name"], path, st)
    for i, raw in enumerate(opt(body, "functions", list, "") or ()):
        path = f"functions[{i}]"
        fn = as_obj(raw, path)
        check_keys(fn, LEGACY_FUNCTION_KEYS, path)
        out.append(_tool_def(fn, path, None))
    return out, has_mcp


_CHAT_CUSTOM_KEYS = frozenset({"name", "description", "format"})


def chat_custom_tool(tool: JSONObj, path: str) -> JSONObj:
    """A Chat ``custom`` tool (``{"type": "custom", "custom": {"name", "description", "format":
    {"type": "text"} | {"type": "grammar", "grammar": {"definition", "syntax"}}}}``) -> the tool
    definition dict the Responses edge makes of its ``custom`` tools
    (:func:`gateway.edges.openai_responses_tools.custom_tool`: a function with one string
    argument ``input``, the format kept as ``freeform`` in the Responses shape ``{"type":
    "grammar", "syntax", "definition"}``). Raises :class:`InvalidRequest` naming the key."""
    check_keys(tool, frozenset({"type", "custom"}), path)
    cpath = join(path, "custom")
    custom = as_obj(req(tool, "custom", dict, path), cpath)
    check_keys(custom, _CHAT_CUSTOM_KEYS, cpath)
    fmt = opt(custom, "format", dict, cpath)
    as_responses = {k: v for k, v in custom.items() if k != "format"}
    if fmt is not None:
        fpath = join(cpath, "format")
        ftype = req(fmt, "type", str, fpath)
        if ftype == "grammar":
            check_keys(fmt, frozenset({"type", "grammar"}), fpath)
            gpath = join(fpath, "grammar")
            grammar = as_obj(req(fmt, "grammar", dict, fpath), gpath)
            check_keys(grammar, frozenset({"definition", "syntax"}), gpath)
            as_responses["format"] = {
                "type": "grammar",
                "syntax": req(grammar, "syntax", str, gpath),
                "definition": req(grammar, "definition", str, gpath),
            }
        else:
            as_responses["format"] = fmt  # text (any other type is refused by name below)
    return custom_tool(as_responses, cpath)


def _tool_extras(tool: JSONObj, name: str, path: str, st: ChatState) -> None:
    """Keep a tool entry's keys besides the SDK's (non-null) for an OpenAI Chat upstream, by the
    tool's name, and name them for the other wire APIs (:data:`TOOL_SERVING` dropped, any other
    refused)."""
    extra = {k: v for k, v in tool.items() if k not in TOOL_KEYS and v is not None}
    if extra:
        st.tool_fields[name] = extra
        for k in extra:
            (st.serving if k in TOOL_SERVING else st.native).append(join(path, k))


def _tool_def(fn: JSONObj, path: str, cache: dict[str, Any] | None) -> JSONObj:
    params = opt(fn, "parameters", dict, path)
    return {
        "name": req(fn, "name", str, path),
        "description": opt(fn, "description", str, path),
        "parameters": params if params is not None else {"type": "object", "properties": {}},
        "strict": opt(fn, "strict", bool, path),
        "cache_control": cache or opt(fn, "cache_control", dict, path),
    }


def _tool_choice(body: JSONObj) -> JSONObj | None:
    parallel = opt(body, "parallel_tool_calls", bool, "")
    raw = body.get("tool_choice")
    path = "tool_choice"
    if raw is None and body.get("function_call") is not None:
        raw, path = body["function_call"], "function_call"
        if isinstance(raw, dict):
            raw = {"type": "function", "function": raw}
    if raw is None:
        return {"parallel": parallel} if parallel is not None else None
    if isinstance(raw, str):
        if raw not in ("auto", "none", "required"):
            raise InvalidRequest(f"{path}: expected auto, none or required, got {raw!r}", param=path)
        return {"mode": raw, "parallel": parallel}
    obj = as_obj(raw, path)
    ctype = req(obj, "type", str, path)
    if ctype == "custom":  # a custom tool by name
        check_keys(obj, frozenset({"type", "custom"}), path)
        cpath = join(path, "custom")
        custom = as_obj(req(obj, "custom", dict, path), cpath)
        check_keys(custom, CHOICE_FUNCTION_KEYS, cpath)
        return {"mode": "tool", "name": req(custom, "name", str, cpath), "parallel": parallel}
    if ctype == "allowed_tools":
        return {**allowed_tools_choice(obj, path), "parallel": parallel}
    if ctype != "function":
        raise unsupported(join(path, "type"), f"tool_choice type {ctype!r}")
    check_keys(obj, CHOICE_KEYS, path)
    fpath = join(path, "function")
    fn = as_obj(req(obj, "function", dict, path), fpath)
    check_keys(fn, CHOICE_FUNCTION_KEYS, fpath)
    return {"mode": "tool", "name": req(fn, "name", str, fpath), "parallel": parallel}


def allowed_tools_choice(obj: JSONObj, path: str) -> JSONObj:
    """``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools":
    [{"type": "function", "function": {"name"}} | {"type": "custom", "custom": {"name"}}]}}`` ->
    a tool choice dict of that mode with ``allowed``: the names. Raises
    :class:`InvalidRequest` naming the key."""
    check_keys(obj, frozenset({"type", "allowed_tools"}), path)
    apath = join(path, "allowed_tools")
    allowed = as_obj(req(obj, "allowed_tools", dict, path), apath)
    check_keys(allowed, frozenset({"mode", "tools"}), apath)
    mode = req(allowed, "mode", str, apath)
    if mode not in ("auto", "required"):
        raise InvalidRequest(
            f"{join(apath, 'mode')}: expected auto or required, got {mode!r}", param=join(apath, "mode")
        )
    names = []
    for i, raw in enumerate(req(allowed, "tools", list, apath)):
        tpath = f"{apath}.tools[{i}]"
        entry = as_obj(raw, tpath)
        ttype = req(entry, "type", str, tpath)
        if ttype not in ("function", "custom"):
            raise unsupported(join(tpath, "type"), f"allowed tool type {ttype!r}")
        check_keys(entry, frozenset({"type", ttype}), tpath)
        inner = as_obj(req(entry, ttype, dict, tpath), join(tpath, ttype))
        check_keys(inner, CHOICE_FUNCTION_KEYS, join(tpath, ttype))
        names.append(req(inner, "name", str, join(tpath, ttype)))
    return {"mode": mode, "allowed": names}


def _response_format(raw: JSONObj) -> JSONObj:
    path = "response_format"
    check_keys(raw, FORMAT_KEYS, path)
    rtype = req(raw, "type", str, path)
    if rtype in ("text", "json_object"):
        return {"type": rtype}
    if rtype != "json_schema":
        raise InvalidRequest(f"{path}.type: unknown response format {rtype!r}", param=join(path, "type"))
    spath = join(path, "json_schema")
    js = as_obj(req(raw, "json_schema", dict, path), spath)
    check_keys(js, JSON_SCHEMA_KEYS, spath)
    return {
        "type": "json_schema",
        "name": opt(js, "name", str, spath),
        "description": opt(js, "description", str, spath),
        "schema": opt(js, "schema", dict, spath),
        "strict": opt(js, "strict", bool, spath),
    }


def _thinking(effort: str) -> JSONObj | None:
    if effort == "default":
        return None
    if effort == "none":
        return {"enabled": False}
    if effort not in _EFFORTS:
        raise InvalidRequest(
            f"reasoning_effort: expected none, minimal, low, medium, high or xhigh, got {effort!r}",
            param="reasoning_effort",
        )
    return {"effort": _EFFORTS[effort]}


_READ = frozenset(
    {
        "model",
        "messages",
        "n",
        "stream_options",
        "tools",
        "functions",
        "tool_choice",
        "function_call",
        "parallel_tool_calls",
        "max_completion_tokens",
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "stop",
        "response_format",
        "reasoning_effort",
        "stream",
        "user",
        "metadata",
    }
)
"""Top-level fields :func:`parse_request` reads itself; every other one is classed by
:data:`gateway.edges.fidelity.OPENAI_CHAT` (:func:`_native`)."""


_VERBATIM_EFFORTS = frozenset({"none", "xhigh"})
"""``reasoning_effort`` values the schema's effort has no place for (``none`` is thinking off,
``xhigh`` is read as ``high``): kept verbatim for an OpenAI Chat upstream too."""


def _native(data: JSONObj, extra: set[str]) -> JSONObj | None:
    """The ``Request.native`` dict of the fields in ``extra`` (in the client's order), after
    refusing by name those whose output the gateway does not relay (log probabilities, audio);
    a ``reasoning_effort`` of :data:`_VERBATIM_EFFORTS` is added as sent (no class path: other
    upstreams get the schema's form)."""
    if data.get("logprobs") is True:
        raise unsupported("logprobs", "log probabilities (logprobs: true)")
    top = data.get("top_logprobs")
    if top is not None and top != 0:
        raise unsupported("top_logprobs", "log probabilities (top_logprobs)")
    if data.get("audio") is not None:
        raise unsupported("audio", "audio output")
    modalities = data.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise unsupported("modalities", f'output modalities {modalities!r} (only ["text"])')
    native = native_fields(API, data, [k for k in data if k in extra], OPENAI_CHAT)
    effort = data.get("reasoning_effort")
    if effort in _VERBATIM_EFFORTS:
        native = native or {"api": API, "fields": {}, "paths": [], "serving": []}
        native["fields"]["reasoning_effort"] = effort
    return native


OWN_METADATA = ("_turnstile", "turnstile_")
"""Prefixes of ``metadata`` keys that speak to the gateway (``turnstile_session``: the session
id), never sent upstream."""


def _client_metadata(metadata: JSONObj) -> JSONObj:
    """``metadata`` less the gateway's own keys (:data:`OWN_METADATA`)."""
    if not any(type(k) is str and k.startswith(OWN_METADATA) for k in metadata):
        return metadata
    return {k: v for k, v in metadata.items() if not k.startswith(OWN_METADATA)}


def _max_tokens(body: JSONObj) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = opt(body, key, int, "")
        if value is not None:
            if value < 1:
                raise InvalidRequest(f"{key}: must be at least 1, got {value}", param=key)
            return value
    return None


def parse_request(body: bytes, limits: InputLimits = DEFAULT_LIMITS) -> Request:
    """Parse an OpenAI Chat Completions request body (JSON bytes) into a :class:`Request`.

    Messages get ``src`` = ``"messages[i]"``; tool calls ``"messages[i].tool_calls[j]"``
    (``...content[j]`` for a ``tool_use`` block, ``...function_call`` for a legacy call).
    Raises :class:`gateway.errors.InvalidRequest` with ``param`` naming the field for
    malformed JSON, wrong types, missing ``model``/``messages``, empty ``messages``, unknown
    roles or part types, and unsupported features (audio, files, non-function tools, n > 1,
    log probabilities),
    and :class:`gateway.errors.PayloadTooLarge` past the message, part or tool ``limits``
    (:func:`gateway.edges._bounds.check_bounds`; JSON nested too deep is an InvalidRequest).
    """
    data = load_body(body)
    check_bounds(data, body, limits, _FREE_FORM, tools=_TOOL_SITES)
    get = data.get
    model = get("model")
    if type(model) is not str:
        invalid(data, "model", str, "")
    if not model:
        raise InvalidRequest("model: must not be empty", param="model")
    raw_messages = get("messages")
    if type(raw_messages) is not list:
        invalid(data, "messages", list, "")
    if not raw_messages:
        raise InvalidRequest("messages: must contain at least one message", param="messages")
    n = get("n")
    if n is not None and check(n, int, "n") != 1:
        raise InvalidRequest(
            f"n: {n} choices per request are not relayed: a turn is one answer (the tool loop, the "
            "session log and the transcript keep one message); send n requests instead",
            param="n",
        )
    st = ChatState(limits.max_json_depth)
    messages: list[JSONObj] = []
    for i, raw in enumerate(raw_messages):
        path = f"messages[{i}]"
        if type(raw) is not dict:
            raise wrong_type(path, "an object", raw)
        m = parse_message(raw, i, path, st)
        if m is not None:
            messages.append(m)
    if st.bad_ids:
        raise refusal(st.bad_ids)
    if st.prefix_at is not None and st.prefix_at != f"messages[{len(raw_messages) - 1}]":
        where = st.prefix_at + ".prefix"
        raise InvalidRequest(f"{where}: only the last message can be a prefix to continue", param=where)
    out: JSONObj = {"model": model, "messages": messages}
    # Optional fields, checked in a fixed order (the first error wins); absent ones are left
    # to the schema's defaults.
    stream_options = get("stream_options")
    if stream_options is not None:
        if type(stream_options) is not dict:
            check(stream_options, dict, "stream_options")  # raises
        check_keys(stream_options, STREAM_OPTIONS_KEYS, "stream_options")
        if opt(stream_options, "include_obfuscation", bool, "stream_options"):  # as the Responses edge
            raise unsupported("stream_options.include_obfuscation", "obfuscation padding of stream events")
    metadata = get("metadata")
    if metadata is not None:
        out["metadata"] = metadata if type(metadata) is dict else check(metadata, dict, "metadata")
    has_mcp = False
    if "tools" in data or "functions" in data:
        out["tools"], has_mcp = _tools(data, st)
    if "tool_choice" in data or "function_call" in data or "parallel_tool_calls" in data:
        out["tool_choice"] = _tool_choice(data)
    if "max_completion_tokens" in data or "max_tokens" in data:
        out["max_output_tokens"] = _max_tokens(data)
    for key, typ in _NUMBERS:
        value = get(key)
        if value is not None:
            value = value if type(value) is typ else check(value, typ, key)
            if value or key not in _ZERO_ASKS_NOTHING:  # a penalty of 0 asks for nothing
                out[key] = value
    if "stop" in data:
        out["stop"] = str_list(data, "stop", "")
    rf = get("response_format")
    if rf is not None:
        out["response_format"] = _response_format(
            rf if type(rf) is dict else check(rf, dict, "response_format")
        )
    effort = get("reasoning_effort")
    if effort is not None:
        out["thinking"] = _thinking(effort if type(effort) is str else check(effort, str, "reasoning_effort"))

    stream = get("stream")
    if stream is not None:
        out["stream"] = stream if type(stream) is bool else check(stream, bool, "stream")
    if stream_options:
        out["include_usage"] = bool(opt(stream_options, "include_usage", bool, "stream_options"))
    user = get("user")
    if user is not None:
        out["user"] = user if type(user) is str else check(user, str, "user")
    if has_mcp:
        out["mcp_servers"] = mcp_server_entries(data)
    if b'"cache_control"' in body:
        out["cache_marks"] = True
    breakpoints = b'"prompt_cache_breakpoint"' in body
    if breakpoints:
        st.serving += own_paths(raw_messages)
    if breakpoints or st.message_fields:
        attach_own(messages, st.message_fields)
    extra = data.keys() - _READ
    if extra or effort in _VERBATIM_EFFORTS or st.native or st.tool_fields or metadata or st.serving:
        native = _native(data, extra)
        if st.native or st.tool_fields or metadata or st.serving:
            native = native or {"api": API, "fields": {}, "paths": [], "serving": []}
            sent = _client_metadata(metadata) if metadata else None
            if sent:  # verbatim for OpenAI Chat; elsewhere the schema's (target_fields)
                native["fields"]["metadata"] = sent
            if st.tool_fields:
                native["fields"]["tool_fields"] = st.tool_fields
            native["serving"] += st.serving
            native["paths"] += st.native
        if native is not None:
            out["native"] = native
    return validate_request(out, _FIELD_NAMES)
