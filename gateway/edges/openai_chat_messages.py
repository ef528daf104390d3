"""OpenAI Chat Completions ``messages`` -> message dicts in the shape of :mod:`gateway.schema`
(the parse of :mod:`gateway.edges.openai_chat_parse`, which owns the top-level fields).

Per message: its parts checked against the SDK's part keys (a key the SDK types do not define
is refused by name), tool calls (ids unwrapped from Turnstile's signature envelope, legacy
``function_call`` given a stable id), the tolerated extensions (``reasoning_content`` /
``reasoning``, ``reasoning_details``, ``thinking_blocks``, Anthropic-style blocks, message and
part ``cache_control``), and the message's own keys (:class:`gateway.schema.OwnKeys`: vendor
keys, an assistant's ``audio``, a part's ``prompt_cache_breakpoint``) kept on the message for an
OpenAI Chat upstream, their paths named for the other wire APIs (:class:`ChatState`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from gateway.edges._bounds import check_embedded
from gateway.edges._common import (
    JSONObj,
    as_obj,
    check,
    invalid,
    join,
    missing,
    opt,
    parse_arguments,
    parse_data_uri,
    req,
    unsupported,
    wrong_type,
)
from gateway.edges._keys import check_keys
from gateway.edges.call_ids import BadIds, plain_call_id
from gateway.edges.openai_chat_keys import (
    AUDIO_KEYS,
    BREAKPOINT,
    CALL_FUNCTION_KEYS,
    CALL_KEYS,
    FILE_KEYS,
    IMAGE_URL_KEYS,
    MESSAGE_KEYS,
    MESSAGE_SERVING,
    PART_KEYS,
)
from gateway.edges.openai_chat_reasoning import reasoning_details, thinking_blocks, thinking_text, unwrap_sig
from gateway.edges.openai_files import chat_audio, chat_file
from gateway.edges.signatures import ID_SEPARATOR, unwrap_tool_call_id
from gateway.errors import InvalidRequest
from gateway.providers.openai_common import API

__all__ = ["ChatState", "attach_own", "legacy_call_id", "own_paths", "parse_message"]

_ARGUMENTS_LEVEL = 6
"""Levels above a tool call's parsed ``arguments``: body, messages, message, tool_calls, call,
function."""

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
        out["own_keys"] = {BREAKPOINT: bp}  # for an OpenAI Chat upstream (own_paths, attach_own)
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


def attach_own(messages: list[JSONObj], fields: dict[str, JSONObj]) -> None:
    """Set ``own`` (:class:`gateway.schema.OwnKeys`) on each message dict that has keys of its
    own (``fields``: message path -> keys) or parts with ``own_keys``: they travel with the
    message, through the session log too, to an OpenAI Chat upstream only."""
    for m in messages:
        keys = fields.get(m["src"]) if fields else None
        if keys or any("own_keys" in p for p in m["content"]):
            m["own"] = {"api": API, "keys": keys or {}}


def own_paths(raw_messages: list[Any]) -> list[str]:
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


_MARKABLE = frozenset({"text", "image", "document", "tool_call"})
"""Part types a prompt-cache mark can sit on (Anthropic marks text, image, document and
``tool_use`` blocks; not thinking, nor audio, which no Anthropic block holds)."""


def _message_cache(msg: JSONObj, parts: list[JSONObj], path: str) -> None:
    """A message-level ``cache_control`` goes on the message's last part that can carry it
    (:data:`_MARKABLE`), unless that part has its own. Raises :class:`InvalidRequest` naming it
    when the message has parts and none can carry it (an assistant's thinking only)."""
    cache = msg.get("cache_control")
    if cache is None:
        return
    if type(cache) is not dict:
        raise wrong_type(join(path, "cache_control"), "an object", cache)
    for part in reversed(parts):
        if part["type"] in _MARKABLE:
            if part.get("cache_control") is None:
                part["cache_control"] = cache
            return
    if parts:
        where = join(path, "cache_control")
        raise InvalidRequest(f"{where}: no part of the message can carry a cache mark", param=where)


def _raw_arguments(fn: JSONObj, path: str) -> str:
    value = fn.get("arguments")
    if value is None:
        return "{}"
    if type(value) is str:
        return value
    if type(value) is dict:
        return orjson.dumps(value).decode()
    raise wrong_type(join(path, "arguments"), "a string", value)


class ChatState(BadIds):
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
        "prefix_at",
        "serving",
        "short",
        "tool_fields",
    )

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.message_fields: dict[str, JSONObj] = {}  # message path -> its SDK keys kept verbatim
        self.prefix_at: str | None = None  # the assistant message with Mistral's ``prefix: true``
        self.serving: list[str] = []  # their paths, dropped and named toward another wire API
        self.native: list[str] = []  # their paths, refused toward another wire API
        self.tool_fields: dict[str, JSONObj] = {}  # tool name -> its entry's own keys
        self.names: dict[str, str] = {}
        self.legacy_pending: list[tuple[str, str]] = []
        self.depth = depth
        self.short = 2 * (depth - _ARGUMENTS_LEVEL)  # arguments text this long cannot nest too deep


def _tool_call(id_raw: str, name: str, raw: str, src: str, st: ChatState) -> JSONObj:
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


def _assistant_block(part: JSONObj, ppath: str, st: ChatState) -> JSONObj | None:
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


def _tool_calls(calls: list[Any], path: str, st: ChatState, content: list[JSONObj]) -> None:
    """Append the part dicts of an assistant message's ``tool_calls`` to ``content``."""
    for j, raw in enumerate(calls):
        tpath = f"{path}.tool_calls[{j}]"
        if type(raw) is not dict:
            raise wrong_type(tpath, "an object", raw)
        check_keys(raw, CALL_KEYS, tpath)
        ctype = raw.get("type")
        if ctype is not None and ctype != "function":
            if ctype == "custom":  # a custom tool's call: its free-form input is the argument "input"
                _custom_call(raw, tpath, st, content)
                continue
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


def _custom_call(raw: JSONObj, tpath: str, st: ChatState, content: list[JSONObj]) -> None:
    """Append the part dict of a ``custom`` tool call (``{"id", "type": "custom", "custom":
    {"name", "input"}}``): a call of the emulated function with ``{"input": <text>}``
    (:class:`gateway.schema.ToolDefinition` ``freeform``)."""
    cpath = join(tpath, "custom")
    custom = as_obj(req(raw, "custom", dict, tpath), cpath)
    check_keys(custom, frozenset({"name", "input"}), cpath)
    text = req(custom, "input", str, cpath)
    arguments = orjson.dumps({"input": text}).decode()
    content.append(
        _tool_call(req(raw, "id", str, tpath), req(custom, "name", str, cpath), arguments, tpath, st)
    )


_REASONING_KEYS = ("reasoning_content", "reasoning")
"""An assistant message's reasoning text keys (DeepSeek, vLLM, OpenRouter): read as unsigned
thinking for other wire APIs, and sent back as sent on that message to an OpenAI Chat upstream
(``message_fields``; the OpenAI Chat adapter renders no thinking of its own)."""


def _assistant(msg: JSONObj, i: int, path: str, st: ChatState) -> JSONObj:
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
        if refusal:  # its text for every target; the key itself, as sent, for an OpenAI Chat upstream
            content.append({"type": "text", "text": refusal})
            st.message_fields.setdefault(path, {})["refusal"] = refusal
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
        _message_cache(msg, content, path)
    if name is not None:
        return {"role": "assistant", "content": content, "name": name, "src": path}
    return {"role": "assistant", "content": content, "src": path}


def _message_extras(msg: JSONObj, known: frozenset[str], path: str, st: ChatState) -> None:
    """Keep a message's keys outside ``known`` (non-null) for an OpenAI Chat upstream, by the
    message's path, and name them for the other wire APIs (refused: :data:`MESSAGE_SERVING`)."""
    extra = {k: v for k, v in msg.items() if k not in known and v is not None}
    if extra:
        st.message_fields.setdefault(path, {}).update(extra)
        for k in extra:
            if k == "prefix" and extra[k] is True and msg.get("role") == "assistant":
                st.prefix_at = (
                    path  # a prefill: Anthropic continues it too (the target layer names it elsewhere)
                )
                continue
            (st.serving if k in MESSAGE_SERVING else st.native).append(join(path, k))


def _name(msg: JSONObj, path: str) -> str | None:
    """A message's participant ``name`` (a string or null)."""
    name = msg.get("name")
    if name is not None and type(name) is not str:
        raise wrong_type(join(path, "name"), "a string", name)
    return name


def parse_message(msg: JSONObj, i: int, path: str, st: ChatState) -> JSONObj | None:
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
        if content is None:  # required by the SDK type; OpenAI refuses null, no target can send it
            raise missing(join(path, "content"))
        parts = _parts(content, path + ".content", _USER_PARTS)
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
