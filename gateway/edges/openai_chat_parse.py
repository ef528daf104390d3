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
other keys are carried to an OpenAI Chat upstream on that message / tool
(``NativeFields.fields["message_fields"]`` / ``["tool_fields"]``) and dropped or refused by
name toward another wire API; a part's ``prompt_cache_breakpoint`` goes on the part
(``own_keys``), an assistant's ``reasoning_content`` / ``reasoning`` back on its message.

Empty text parts are dropped (handed case C07). Tool-call ids carrying a Turnstile signature
envelope (:mod:`gateway.edges.signatures`) are unwrapped in calls and results.

How it works: one pass over the decoded body checks every field by hand (errors name the
field, :mod:`gateway.edges._common`) and assembles plain dicts and lists in the shape of
:mod:`gateway.schema` (``role``/``type`` discriminator keys, ``src`` locations); the result is
validated once, by :func:`gateway.edges._common.validate_request`.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from gateway.edges._bounds import (
    DEFAULT_LIMITS,
    FieldPattern,
    InputLimits,
    ToolSite,
    check_bounds,
    check_embedded,
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
    parse_arguments,
    parse_data_uri,
    req,
    str_list,
    unsupported,
    validate_request,
    wrong_type,
)
from gateway.edges._keys import check_keys
from gateway.edges.call_ids import BadIds, plain_call_id, refusal
from gateway.edges.fidelity import OPENAI_CHAT, native_fields
from gateway.edges.openai_chat_keys import (
    AUDIO_KEYS,
    BREAKPOINT,
    CALL_FUNCTION_KEYS,
    CALL_KEYS,
    CHOICE_FUNCTION_KEYS,
    CHOICE_KEYS,
    FILE_KEYS,
    FORMAT_KEYS,
    FUNCTION_KEYS,
    IMAGE_URL_KEYS,
    JSON_SCHEMA_KEYS,
    LEGACY_FUNCTION_KEYS,
    MESSAGE_KEYS,
    MESSAGE_SERVING,
    PART_KEYS,
    STREAM_OPTIONS_KEYS,
    TOOL_KEYS,
    TOOL_SERVING,
)
from gateway.edges.openai_chat_reasoning import reasoning_details, thinking_blocks, thinking_text, unwrap_sig
from gateway.edges.openai_files import chat_audio, chat_file
from gateway.edges.signatures import ID_SEPARATOR, unwrap_tool_call_id
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

_ARGUMENTS_LEVEL = 6
"""Levels above a tool call's parsed ``arguments``: body, messages, message, tool_calls, call,
function."""

_NUMBERS = (
    ("temperature", float),
    ("top_p", float),
    ("top_k", int),
    ("seed", int),
    ("presence_penalty", float),
    ("frequency_penalty", float),
)
_ZERO_ASKS_NOTHING = frozenset({"presence_penalty", "frequency_penalty"})
_USER_PARTS = ("text", "image_url", "file", "input_audio")
_RESULT_PARTS = ("text", "image_url")
_TEXT_PARTS = ("text",)
_ASSISTANT_PARTS = ("text", "refusal")


def legacy_call_id(msg_index: int, name: str, arguments: str) -> str:
    """Deterministic id for a legacy ``function_call`` (which has none):
    ``"call_" + sha256(f"{msg_index}\\n{name}\\n{arguments}")[:24]``."""
    digest = hashlib.sha256(f"{msg_index}\n{name}\n{arguments}".encode()).hexdigest()
    return "call_" + digest[:24]


def _image(obj: JSONObj, path: str) -> JSONObj:
    """An ``image_url`` part -> an image part dict (``url``, or base64 ``data`` and
    ``media_type`` split from a data URI; ``detail`` as sent)."""
    value = obj.get("image_url")
    ipath = join(path, "image_url")
    if value is None:
        raise missing(ipath)
    detail = None
    if isinstance(value, str):
        url = value
    else:
        image = as_obj(value, ipath)
        check_keys(image, IMAGE_URL_KEYS, ipath)
        url = req(image, "url", str, ipath)
        detail = opt(image, "detail", str, ipath)
        if detail == "auto":
            detail = None  # asks for nothing: OpenAI's default
        ipath = join(ipath, "url")
    cache = opt(obj, "cache_control", dict, path)
    if url.startswith("data:"):
        parsed = parse_data_uri(url)
        if parsed is None:
            raise InvalidRequest(f"{ipath}: data URI must be base64 encoded", param=ipath)
        return {
            "type": "image",
            "data": parsed[1],
            "media_type": parsed[0],
            "detail": detail,
            "cache_control": cache,
        }
    if url.startswith(("http://", "https://")):
        return {"type": "image", "url": url, "detail": detail, "cache_control": cache}
    raise InvalidRequest(f"{ipath}: expected an http(s) URL or a base64 data URI", param=ipath)


def _part(part: JSONObj, ppath: str, allowed: tuple[str, ...]) -> JSONObj | None:
    """Check one content part (already checked to be an object) of a type in ``allowed`` and
    return its part dict; None for an empty text part (dropped, handed case C07)."""
    kind = req(part, "type", str, ppath)
    if kind not in allowed:
        if kind in ("input_audio", "file", "audio") and allowed is _RESULT_PARTS:
            raise unsupported(join(ppath, "type"), f"content part type {kind!r} in a tool message")
        if kind == "audio":
            raise unsupported(join(ppath, "type"), f"content part type {kind!r}")
        raise InvalidRequest(
            f"{join(ppath, 'type')}: unknown content part type {kind!r} here (expected one of "
            f"{', '.join(allowed)})",
            param=join(ppath, "type"),
        )
    check_keys(part, PART_KEYS[kind], ppath)
    out: JSONObj
    if kind == "text" or kind == "refusal":
        text = req(part, kind, str, ppath)
        if not text:
            return None
        cache = part.get("cache_control")
        if cache is None:
            out = {"type": "text", "text": text}
        elif type(cache) is not dict:
            raise wrong_type(join(ppath, "cache_control"), "an object", cache)
        else:
            out = {"type": "text", "text": text, "cache_control": cache}
    elif kind == "file":
        inner = part.get("file")
        if type(inner) is dict:
            check_keys(inner, FILE_KEYS, join(ppath, "file"))
        out = chat_file(part, ppath)
    elif kind == "input_audio":
        inner = part.get("input_audio")
        if type(inner) is dict:
            check_keys(inner, AUDIO_KEYS, join(ppath, "input_audio"))
        return chat_audio(part, ppath)
    else:
        out = _image(part, ppath)
    bp = part.get(BREAKPOINT)
    if bp is not None:
        out["own_keys"] = {BREAKPOINT: bp}  # for an OpenAI Chat upstream (_own_paths, _attach_own)
    return out


def _parts(content: Any, path: str, allowed: tuple[str, ...]) -> list[JSONObj]:
    """Check a ``content`` string or parts list allowing part types ``allowed``: part dicts."""
    if type(content) is str:
        return [{"type": "text", "text": content}] if content else []
    if type(content) is not list:
        raise wrong_type(path, "a string or an array of content parts", content)
    out: list[JSONObj] = []
    for i, raw in enumerate(content):
        if type(raw) is dict and len(raw) == 2 and raw.get("type") == "text":
            text = raw.get("text")
            if type(text) is str:  # the common case, checked inline
                if text:
                    out.append({"type": "text", "text": text})
                continue
        ppath = f"{path}[{i}]"
        if type(raw) is not dict:
            raise wrong_type(ppath, "an object", raw)
        part = _part(raw, ppath, allowed)
        if part is not None:
            out.append(part)
    return out


def _attach_own(messages: list[JSONObj], fields: dict[str, JSONObj]) -> None:
    """Set ``own`` (:class:`gateway.schema.OwnKeys`) on each message dict that has keys of its
    own (``fields``: message path -> keys) or parts with ``own_keys``: they travel with the
    message, through the session log too, to an OpenAI Chat upstream only."""
    for m in messages:
        keys = fields.get(m["src"]) if fields else None
        if keys or any("own_keys" in p for p in m["content"]):
            m["own"] = {"api": API, "keys": keys or {}}


def _own_paths(raw_messages: list[Any]) -> list[str]:
    """The paths of the content parts' ``prompt_cache_breakpoint`` keys (non-null): carried on
    the part to an OpenAI Chat upstream (``own_keys``), dropped and named toward another."""
    out: list[str] = []
    for i, msg in enumerate(raw_messages):
        content = msg.get("content") if type(msg) is dict else None
        if type(content) is list:
            for j, part in enumerate(content):
                if type(part) is dict and part.get(BREAKPOINT) is not None:
                    out.append(f"messages[{i}].content[{j}].{BREAKPOINT}")
    return out


def _message_cache(msg: JSONObj, parts: list[JSONObj], path: str) -> None:
    """A message-level ``cache_control`` goes on the message's last part, unless that part
    has its own."""
    cache = msg.get("cache_control")
    if cache is None:
        return
    if type(cache) is not dict:
        raise wrong_type(join(path, "cache_control"), "an object", cache)
    if parts and parts[-1].get("cache_control") is None:
        parts[-1]["cache_control"] = cache


def _raw_arguments(fn: JSONObj, path: str) -> str:
    value = fn.get("arguments")
    if value is None:
        return "{}"
    if type(value) is str:
        return value
    if type(value) is dict:
        return orjson.dumps(value).decode()
    raise wrong_type(join(path, "arguments"), "a string", value)


class _State(BadIds):
    """Per-request parse state: names of calls by id, unanswered legacy calls, the nesting
    limit (levels) for arguments sent as JSON text, and the tool-call ids no upstream accepts
    (``(location, id, reason)``, refused after the messages are read:
    :mod:`gateway.edges.call_ids`)."""

    __slots__ = (
        "depth",
        "legacy_pending",
        "message_fields",
        "names",
        "native",
        "serving",
        "short",
        "tool_fields",
    )

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.message_fields: dict[str, JSONObj] = {}  # message path -> its SDK keys kept verbatim
        self.serving: list[str] = []  # their paths, dropped and named toward another wire API
        self.native: list[str] = []  # their paths, refused toward another wire API
        self.tool_fields: dict[str, JSONObj] = {}  # tool name -> its entry's own keys
        self.names: dict[str, str] = {}
        self.legacy_pending: list[tuple[str, str]] = []
        self.depth = depth
        self.short = 2 * (depth - _ARGUMENTS_LEVEL)  # arguments text this long cannot nest too deep


def _tool_call(id_raw: str, name: str, raw: str, src: str, st: _State) -> JSONObj:
    """A tool-call part dict (id unwrapped from a signature envelope); records the call's
    name for the results that follow."""
    if ID_SEPARATOR in id_raw:
        call_id, sig, prov = unwrap_tool_call_id(id_raw)
    else:
        call_id, sig, prov = id_raw, None, None
    if plain_call_id(call_id) is None:
        st.check_id(call_id, src + ".id")
    st.names.setdefault(call_id, name)
    return {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": parse_arguments(raw),
        "raw_arguments": raw,
        "signature": sig,
        "provenance": prov,
        "src": src,
    }


def _assistant_block(part: JSONObj, ppath: str, st: _State) -> JSONObj | None:
    """One part of an assistant ``content`` list: Anthropic-style ``tool_use``, ``thinking``
    and ``redacted_thinking`` blocks (handed case C05) besides text and refusal parts."""
    kind = req(part, "type", str, ppath)
    if kind in ("tool_use", "thinking", "redacted_thinking"):
        check_keys(part, PART_KEYS[kind], ppath)
    if kind == "tool_use":
        raw_input = part.get("input")
        if raw_input is None:
            raw_input = {}
        args = orjson.dumps(as_obj(raw_input, join(ppath, "input"))).decode()
        return _tool_call(req(part, "id", str, ppath), req(part, "name", str, ppath), args, ppath, st)
    if kind == "thinking":
        sig, prov = unwrap_sig(opt(part, "signature", str, ppath), join(ppath, "signature"))
        return {"type": "thinking", "text": thinking_text(part, ppath), "signature": sig, "provenance": prov}
    if kind == "redacted_thinking":
        data, prov = unwrap_sig(req(part, "data", str, ppath), join(ppath, "data"))
        return {"type": "redacted_thinking", "data": data or "", "provenance": prov}
    return _part(part, ppath, _ASSISTANT_PARTS)


def _tool_calls(calls: list[Any], path: str, st: _State, content: list[JSONObj]) -> None:
    """Append the part dicts of an assistant message's ``tool_calls`` to ``content``."""
    for j, raw in enumerate(calls):
        tpath = f"{path}.tool_calls[{j}]"
        if type(raw) is not dict:
            raise wrong_type(tpath, "an object", raw)
        check_keys(raw, CALL_KEYS, tpath)
        ctype = raw.get("type")
        if ctype is not None and ctype != "function":
            if type(ctype) is not str:
                raise wrong_type(join(tpath, "type"), "a string", ctype)
            raise unsupported(join(tpath, "type"), f"tool call type {ctype!r}")
        fn = raw.get("function")
        if type(fn) is not dict:
            invalid(raw, "function", dict, tpath)
        check_keys(fn, CALL_FUNCTION_KEYS, tpath + ".function")
        call_id = raw.get("id")
        if type(call_id) is not str:
            invalid(raw, "id", str, tpath)
        name = fn.get("name")
        if type(name) is not str:
            invalid(fn, "name", str, tpath + ".function")
        arguments = fn.get("arguments")
        if type(arguments) is not str:
            arguments = _raw_arguments(fn, tpath + ".function")
        content.append(_tool_call(call_id, name, arguments, tpath, st))
        cache = raw.get("cache_control")
        if cache is not None:
            content[-1]["cache_control"] = check(cache, dict, join(tpath, "cache_control"))
        if len(arguments) > st.short:
            where = tpath + ".function.arguments"
            check_embedded(content[-1]["arguments"], arguments, st.depth, _ARGUMENTS_LEVEL, where)


_REASONING_KEYS = ("reasoning_content", "reasoning")
"""An assistant message's reasoning text keys (DeepSeek, vLLM, OpenRouter): read as unsigned
thinking for other wire APIs, and sent back as sent on that message to an OpenAI Chat upstream
(``message_fields``; the OpenAI Chat adapter renders no thinking of its own)."""


def _assistant(msg: JSONObj, i: int, path: str, st: _State) -> JSONObj:
    content: list[JSONObj] = []
    get = msg.get
    audio = get("audio")
    if audio is not None:
        check(audio, dict, join(path, "audio"))
        st.message_fields.setdefault(path, {})["audio"] = audio
        st.serving.append(join(path, "audio"))
    details = get("reasoning_details")
    if details is not None:
        content.extend(reasoning_details(details, join(path, "reasoning_details")))
    blocks = get("thinking_blocks")
    if blocks is not None and not content:
        content.extend(thinking_blocks(blocks, join(path, "thinking_blocks")))
    thought = get("reasoning_content")
    if thought is not None and type(thought) is not str:
        raise wrong_type(join(path, "reasoning_content"), "a string", thought)
    if not thought:
        thought = get("reasoning")
        if thought is not None and type(thought) is not str:
            raise wrong_type(join(path, "reasoning"), "a string", thought)
    if thought and not content:  # reasoning_details / thinking_blocks carry the same text, signed
        content.append({"type": "thinking", "text": thought})
    for key in _REASONING_KEYS:
        value = get(key)
        if type(value) is str and value:  # verbatim for an OpenAI Chat upstream (DeepSeek, vLLM)
            st.message_fields.setdefault(path, {})[key] = value
    raw_content = get("content")
    if type(raw_content) is str:
        if raw_content:
            content.append({"type": "text", "text": raw_content})
    elif type(raw_content) is list:
        cpath = path + ".content"
        for j, raw in enumerate(raw_content):
            ppath = f"{cpath}[{j}]"
            if type(raw) is not dict:
                raise wrong_type(ppath, "an object", raw)
            block = _assistant_block(raw, ppath, st)
            if block is not None:
                content.append(block)
    elif raw_content is not None:
        raise wrong_type(path + ".content", "a string or an array of content parts", raw_content)
    refusal = get("refusal")
    if refusal is not None:
        if type(refusal) is not str:
            raise wrong_type(join(path, "refusal"), "a string", refusal)
        if refusal and not raw_content:
            content.append({"type": "text", "text": refusal})
    name = get("name")
    if name is not None and type(name) is not str:
        raise wrong_type(join(path, "name"), "a string", name)
    calls = get("tool_calls")
    if calls is not None:
        if type(calls) is not list:
            raise wrong_type(join(path, "tool_calls"), "an array", calls)
        _tool_calls(calls, path, st, content)
    legacy = get("function_call")
    if legacy is not None:
        if type(legacy) is not dict:
            raise wrong_type(join(path, "function_call"), "an object", legacy)
        fpath = join(path, "function_call")
        fname = req(legacy, "name", str, fpath)
        raw = _raw_arguments(legacy, fpath)
        call_id = legacy_call_id(i, fname, raw)
        arguments = parse_arguments(raw)
        check_embedded(arguments, raw, st.depth, 4, fpath + ".arguments")  # body, messages, message, call
        content.append(
            {
                "type": "tool_call",
                "id": call_id,
                "name": fname,
                "arguments": arguments,
                "raw_arguments": raw,
                "src": fpath,
            }
        )
        st.names.setdefault(call_id, fname)
        st.legacy_pending.append((call_id, fname))
    if "cache_control" in msg:
        _assistant_cache(msg, content, path)
    if name is not None:
        return {"role": "assistant", "content": content, "name": name, "src": path}
    return {"role": "assistant", "content": content, "src": path}


def _assistant_cache(msg: JSONObj, content: list[JSONObj], path: str) -> None:
    """An assistant message's message-level ``cache_control`` goes on its last text or tool-call
    part (what an Anthropic upstream can mark), unless that part has its own. Raises
    :class:`InvalidRequest` naming it when the message has no such part (thinking only)."""
    cache = msg.get("cache_control")
    if cache is None:
        return
    if type(cache) is not dict:
        raise wrong_type(join(path, "cache_control"), "an object", cache)
    for part in reversed(content):
        if part["type"] == "text" or part["type"] == "tool_call":
            part.setdefault("cache_control", cache)
            return
    where = join(path, "cache_control")
    raise InvalidRequest(f"{where}: the message has no text or tool call to mark", param=where)


def _message_extras(msg: JSONObj, known: frozenset[str], path: str, st: _State) -> None:
    """Keep a message's keys outside ``known`` (non-null) for an OpenAI Chat upstream, by the
    message's path, and name them for the other wire APIs (refused: :data:`MESSAGE_SERVING`)."""
    extra = {k: v for k, v in msg.items() if k not in known and v is not None}
    if extra:
        st.message_fields.setdefault(path, {}).update(extra)
        for k in extra:
            (st.serving if k in MESSAGE_SERVING else st.native).append(join(path, k))


def _name(msg: JSONObj, path: str) -> str | None:
    """A message's participant ``name`` (a string or null)."""
    name = msg.get("name")
    if name is not None and type(name) is not str:
        raise wrong_type(join(path, "name"), "a string", name)
    return name


def _message(msg: JSONObj, i: int, path: str, st: _State) -> JSONObj | None:
    """One message (already checked to be an object) -> its message dict; None for a system
    message left without text."""
    role = msg.get("role")
    known = MESSAGE_KEYS.get(role) if type(role) is str else None
    if known is not None and not msg.keys() <= known:
        _message_extras(msg, known, path, st)
    if role == "assistant":
        return _assistant(msg, i, path, st)
    if role == "tool":
        call_id = msg.get("tool_call_id")
        if type(call_id) is not str:
            invalid(msg, "tool_call_id", str, path)
        if ID_SEPARATOR in call_id:
            call_id = unwrap_tool_call_id(call_id)[0]
        if plain_call_id(call_id) is None:
            st.check_id(call_id, path + ".tool_call_id")
        content = msg.get("content")
        if type(content) is str:
            parts = [{"type": "text", "text": content}] if content else []
        else:
            parts = [] if content is None else _parts(content, path + ".content", _RESULT_PARTS)
        name = msg.get("name")
        if name is not None and type(name) is not str:
            raise wrong_type(join(path, "name"), "a string", name)
        cache = msg.get("cache_control")
        if cache is not None and type(cache) is not dict:
            raise wrong_type(join(path, "cache_control"), "an object", cache)
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "content": parts,
            "name": name or st.names.get(call_id),
            "cache_control": cache,
            "src": path,
        }
    if role == "user":
        content = msg.get("content")
        parts = [] if content is None else _parts(content, path + ".content", _USER_PARTS)
        if "cache_control" in msg:
            _message_cache(msg, parts, path)
        if "name" in msg:
            return {"role": "user", "content": parts, "name": _name(msg, path), "src": path}
        return {"role": "user", "content": parts, "src": path}
    if role == "system" or role == "developer":
        content = msg.get("content")
        if content is None:
            raise missing(join(path, "content"))
        parts = _parts(content, path + ".content", _TEXT_PARTS)
        if "cache_control" in msg:
            _message_cache(msg, parts, path)
        if not parts:
            return None
        out: JSONObj = {"role": "system", "content": parts, "src": path}
        if role == "developer":
            out["developer"] = True
        if "name" in msg:
            out["name"] = _name(msg, path)
        return out
    if role == "function":
        name = req(msg, "name", str, path)
        content = msg.get("content")
        parts = [] if content is None else _parts(content, path + ".content", _TEXT_PARTS)
        if st.legacy_pending:
            match = next(
                (k for k in range(len(st.legacy_pending) - 1, -1, -1) if st.legacy_pending[k][1] == name), -1
            )
            call_id = st.legacy_pending.pop(match)[0]
        else:
            call_id = legacy_call_id(i, name, "<result without call>")
        return {"role": "tool", "tool_call_id": call_id, "content": parts, "name": name, "src": path}
    role = req(msg, "role", str, path)  # raises when missing or not a string
    raise InvalidRequest(
        f"{join(path, 'role')}: unknown role {role!r} (expected system, developer, user, assistant, tool "
        "or function)",
        param=join(path, "role"),
    )


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


def _tools(body: JSONObj, st: _State) -> tuple[list[JSONObj], bool]:
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


def _tool_extras(tool: JSONObj, name: str, path: str, st: _State) -> None:
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
    if ctype != "function":
        raise unsupported(join(path, "type"), f"tool_choice type {ctype!r}")
    check_keys(obj, CHOICE_KEYS, path)
    fpath = join(path, "function")
    fn = as_obj(req(obj, "function", dict, path), fpath)
    check_keys(fn, CHOICE_FUNCTION_KEYS, fpath)
    return {"mode": "tool", "name": req(fn, "name", str, fpath), "parallel": parallel}


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
        raise unsupported("n", "n other than 1")
    st = _State(limits.max_json_depth)
    messages: list[JSONObj] = []
    for i, raw in enumerate(raw_messages):
        path = f"messages[{i}]"
        if type(raw) is not dict:
            raise wrong_type(path, "an object", raw)
        m = _message(raw, i, path, st)
        if m is not None:
            messages.append(m)
    if st.bad_ids:
        raise refusal(st.bad_ids)
    out: JSONObj = {"model": model, "messages": messages}
    # Optional fields, checked in a fixed order (the first error wins); absent ones are left
    # to the schema's defaults.
    stream_options = get("stream_options")
    if stream_options is not None:
        if type(stream_options) is not dict:
            check(stream_options, dict, "stream_options")  # raises
        check_keys(stream_options, STREAM_OPTIONS_KEYS, "stream_options")
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
        st.serving += _own_paths(raw_messages)
    if breakpoints or st.message_fields:
        _attach_own(messages, st.message_fields)
    extra = data.keys() - _READ
    if extra or effort in _VERBATIM_EFFORTS or st.native or st.tool_fields or metadata or st.serving:
        native = _native(data, extra)
        if st.native or st.tool_fields or metadata or st.serving:
            native = native or {"api": API, "fields": {}, "paths": [], "serving": []}
            if metadata:  # verbatim for OpenAI Chat; elsewhere the schema's (target_fields)
                native["fields"]["metadata"] = metadata
            if st.tool_fields:
                native["fields"]["tool_fields"] = st.tool_fields
            native["serving"] += st.serving
            native["paths"] += st.native
        if native is not None:
            out["native"] = native
    return validate_request(out, _FIELD_NAMES)
