"""OpenAI Responses ``input`` items -> message dicts in the shape of :mod:`gateway.schema`.

Reference: https://platform.openai.com/docs/api-reference/responses/create (``input``). The
rules, each a decision written here:

* ``input`` is a string (one user message) or a list of items. An item without ``type`` but
  with ``role`` is a message (the SDK's "easy input message").
* Messages: ``user`` (``input_text``, ``input_image`` by ``image_url`` with its ``detail``
  as sent), ``system`` and ``developer`` (``input_text``; both become system messages, a
  ``developer`` one marked so: the OpenAI adapters send it back as ``developer``, as for
  Chat's), ``assistant`` (``output_text``, ``refusal``, and ``input_text`` as the SDK allows).
  An ``input_image`` by ``file_id`` is refused by name (the schema has no slot for a stored
  image); ``input_file`` is a document (:mod:`gateway.edges.openai_files`); an
  ``input_audio`` part is refused by name (the SDK defines the type, but no input of the
  Responses API takes it).
* Assistant-side items that follow each other (``assistant`` messages, ``reasoning``,
  ``function_call``, ``custom_tool_call``) make ONE assistant message, in item order, so the
  pairing and ordering guards see the calls of one model turn together.
* ``function_call`` -> a tool call (id = ``call_id``, arguments byte-exact);
  ``custom_tool_call`` -> a tool call of the emulated function with one string argument
  (``{"input": ...}``, see :mod:`gateway.edges.openai_responses_parse`);
  ``function_call_output`` / ``custom_tool_call_output`` -> a tool result paired by
  ``call_id`` (``output`` a string or a list of ``input_text`` / ``input_image`` parts). A call
  item's ``id`` (``fc_...``) and ``status`` echo the gateway's own output and carry nothing, as
  do a call output's ``name`` and ``namespace`` (its call has them); a call output's
  ``status``, a call's and a call output's ``caller`` (a ``program`` one; ``direct`` asks for
  nothing), a call's ``async: true`` and a message's ``phase`` are carried to a Responses
  upstream on that item, as are the parts' ``prompt_cache_breakpoint``, ``input_file.detail``
  and ``output_text.annotations`` / ``logprobs`` (``own_keys``), dropped and named toward
  another wire API. Any key the SDK types do not define on an item or a part is refused by name.
* Every item's ``id`` (Codex CLI sends one on each: ``msg_…``, ``at_…``, ``ctc_…``) names the
  client's copy of it; the whole conversation comes every time, so it carries nothing and no
  upstream is sent it (as OpenAI reads items without ids when nothing is stored).
* ``reasoning``: ``encrypted_content`` is the signature of the thinking (a Turnstile envelope
  names its signer; a raw one is OpenAI's own, :data:`NATIVE`); its text is the
  ``reasoning_text`` content when given, else the ``summary_text`` parts joined by a blank
  line. Encrypted content without text is redacted thinking. Unsigned reasoning with text is
  unsigned thinking (the thinking guard treats it as foreign).
* ``additional_tools`` (``role: developer``, ``tools``): its tools join the request's tools
  (:mod:`gateway.edges.openai_responses_tools`); it makes no message (it has no content).
* A call item's ``namespace`` (a call of a member of a ``namespace`` tool) makes its name
  ``<namespace>.<name>``, the flattened name the tool is offered under.
* ``item_reference`` and every hosted-tool item (``web_search_call``, ``file_search_call``,
  ``computer_call``, ``mcp_call``, ...) are refused naming the type: stored items are reached
  through ``previous_response_id`` only, and no upstream here runs hosted tools; so are
  ``program`` / ``program_output`` (programmatic tool calling), ``compaction_trigger`` and
  ``configuration_update`` items.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.edges._bounds import check_embedded
from gateway.edges._common import (
    JSONObj,
    check,
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
from gateway.edges.openai_files import file_fields
from gateway.edges.signatures import ID_SEPARATOR, unwrap_signature, unwrap_tool_call_id
from gateway.errors import InvalidRequest
from gateway.providers.openai_responses_common import API
from gateway.schema import Provenance

NATIVE = Provenance(api="openai_responses", provider="openai", model="")
"""Who signed a raw ``encrypted_content`` a Responses client sends: OpenAI (any model)."""

CUSTOM_ARGUMENT = "input"
"""The one string argument of a custom tool emulated as a function."""

NAMESPACE_SEPARATOR = "."
"""Between a namespace's name and its member's in the flattened tool name
(:mod:`gateway.edges.openai_responses_tools`)."""

_ARGUMENTS_LEVEL = 3
"""Levels above a function call's parsed ``arguments``: body, input, item."""

_ASSISTANT_ITEMS = ("reasoning", "function_call", "custom_tool_call")
_OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output")
_HOSTED_ITEMS = (
    "file_search_call",
    "web_search_call",
    "computer_call",
    "computer_call_output",
    "image_generation_call",
    "code_interpreter_call",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "mcp_call",
    "tool_search_call",
    "tool_search_output",
    "compaction",
)
_REFUSED_ITEMS = {
    "program": "a program input item (programmatic tool calling: the programs an upstream ran are "
    "not relayed)",
    "program_output": "a program_output input item (programmatic tool calling: the programs an upstream "
    "ran are not relayed)",
    "compaction_trigger": "a compaction_trigger input item (server-side compaction; the gateway compacts "
    "sessions itself)",
    "configuration_update": "a configuration_update input item (send reasoning and text settings at the "
    "top level of the request)",
}
"""Input item types of the SDK that no upstream here can take, refused naming the type."""


_BREAKPOINT = "prompt_cache_breakpoint"
_PART_KEYS = {
    "input_text": frozenset({"type", "text", _BREAKPOINT}),
    "input_image": frozenset({"type", "image_url", "file_id", "detail", _BREAKPOINT}),
    "input_file": frozenset({"type", "file_data", "file_id", "file_url", "filename", "detail", _BREAKPOINT}),
    "output_text": frozenset({"type", "text", "annotations", "logprobs", "parsed"}),
    "refusal": frozenset({"type", "refusal"}),
}
"""Keys of each content part type (the SDK's ``Response*Param`` types); any other is refused by
name (:mod:`gateway.edges._keys`)."""
_ITEM_KEYS = {
    "message": frozenset({"type", "role", "content", "id", "status", "phase"}),
    "function_call": frozenset(
        {
            "type",
            "id",
            "call_id",
            "name",
            "arguments",
            "namespace",
            "status",
            "async",
            "caller",
            "parsed_arguments",
        }
    ),
    "custom_tool_call": frozenset(
        {"type", "id", "call_id", "name", "input", "namespace", "status", "async", "caller"}
    ),
    "function_call_output": frozenset(
        {"type", "id", "call_id", "output", "status", "name", "namespace", "caller"}
    ),
    "custom_tool_call_output": frozenset(
        {"type", "id", "call_id", "output", "namespace", "status", "caller"}
    ),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
}
"""Keys of each input item type this edge reads (the SDK's ``ResponseInputItemParam``
members, and ``status`` on custom tool items as the answer's output items carry it: Codex CLI
sends them back so); any other is refused by name. ``parsed_arguments`` (on a function call)
and ``parsed`` (on an output text part) are the openai SDK's ``parse()`` results, which it
sends back when a client passes ``response.output`` on as input: echoes of ``arguments`` and
``text``, read as those."""
_SUMMARY_KEYS = frozenset({"type", "text"})


class InputState(BadIds):
    """Per-request parse state: tool names by call id (for results), the nesting limit, and
    the ids no upstream accepts (:class:`gateway.edges.call_ids.BadIds`)."""

    __slots__ = ("additional_tools", "depth", "names", "native", "owned", "serving")

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.names: dict[str, str] = {}
        self.depth = depth
        self.additional_tools: list[tuple[str, Any]] = []  # (path of the tools list, the list)
        self.serving: list[str] = []  # paths of items' own keys, dropped and named elsewhere
        self.native: list[str] = []  # paths of items' own keys, refused elsewhere
        self.owned = False  # an item or part carries own keys: messages get ``own``


def _text(part: JSONObj, path: str, key: str = "text") -> JSONObj | None:
    text = req(part, key, str, path)
    return {"type": "text", "text": text} if text else None


def _image(part: JSONObj, path: str) -> JSONObj:
    """An ``input_image`` part -> an image part dict."""
    if part.get("file_id") is not None:
        raise unsupported(join(path, "file_id"), "an input_image by file_id (this gateway stores no files)")
    detail = opt(part, "detail", str, path)
    if detail == "auto":
        detail = None  # asks for nothing: OpenAI's default
    url = req(part, "image_url", str, path)
    upath = join(path, "image_url")
    if url.startswith("data:"):
        parsed = parse_data_uri(url)
        if parsed is None:
            raise InvalidRequest(f"{upath}: data URI must be base64 encoded", param=upath)
        return {"type": "image", "data": parsed[1], "media_type": parsed[0], "detail": detail}
    if url.startswith(("http://", "https://")):
        return {"type": "image", "url": url, "detail": detail}
    raise InvalidRequest(f"{upath}: expected an http(s) URL or a base64 data URI", param=upath)


def _user_part(part: JSONObj, path: str) -> JSONObj | None:
    kind = req(part, "type", str, path)
    if kind == "input_text":
        return _text(part, path)
    if kind == "input_image":
        return _image(part, path)
    if kind == "input_file":
        out = file_fields(part, path, "file_url")
        out["src"] = path
        return out
    if kind == "input_audio":
        raise unsupported(
            join(path, "type"),
            "an input_audio part (the Responses API takes no audio input; send audio through "
            "Chat Completions)",
        )
    raise InvalidRequest(
        f"{join(path, 'type')}: unknown content part type {kind!r} here "
        "(expected input_text, input_image or input_file)",
        param=join(path, "type"),
    )


def _parts(content: Any, path: str, role: str) -> list[JSONObj]:
    """A message's ``content`` (string or parts list) -> part dicts; empty text dropped."""
    if type(content) is str:
        return [{"type": "text", "text": content}] if content else []
    if type(content) is not list:
        raise wrong_type(path, "a string or an array of content parts", content)
    out: list[JSONObj] = []
    for i, raw in enumerate(content):
        ppath = join(path, i)
        if type(raw) is not dict:
            raise wrong_type(ppath, "an object", raw)
        kind = raw.get("type")
        if len(raw) != 2 or "text" not in raw:
            known = _PART_KEYS.get(kind) if type(kind) is str else None
            if known is not None:
                check_keys(raw, known, ppath)
        if role == "user":
            part = _user_part(raw, ppath)
        elif kind == "input_text" or (role == "assistant" and kind == "output_text"):
            part = _text(raw, ppath)
        elif role == "assistant" and kind == "refusal":
            part = _text(raw, ppath, "refusal")
        else:
            kind = req(raw, "type", str, ppath)
            allowed = "output_text, refusal or input_text" if role == "assistant" else "input_text"
            raise InvalidRequest(
                f"{join(ppath, 'type')}: content part type {kind!r} is not allowed in a {role} message "
                f"(expected {allowed})",
                param=join(ppath, "type"),
            )
        if part is not None:
            if _BREAKPOINT in raw or len(raw) > 2:
                _own_keys(raw, part)
            out.append(part)
    return out


def _own_keys(raw: JSONObj, part: JSONObj) -> None:
    """Set ``part["own_keys"]``: the part's :data:`_OWN_KEYS` (``prompt_cache_breakpoint``, an
    ``input_file``'s ``detail``, an ``output_text``'s ``annotations`` / ``logprobs``) that ask for
    something, for a Responses upstream (their paths: :func:`own_paths`; :func:`attach_own` marks
    the message)."""
    own = {k: raw[k] for k in _OWN_KEYS.get(str(raw.get("type")), ()) if raw.get(k) not in _NOTHING}
    if own:
        part["own_keys"] = own


def attach_own(messages: list[JSONObj], api: str) -> None:
    """Mark each message dict with a part carrying ``own_keys`` as holding keys of ``api``
    (``own``, keys of its own or none): the Responses adapter then sets them, also on a context
    rebuilt from the session log."""
    for m in messages:
        if "own" not in m and any("own_keys" in p for p in m["content"]):
            m["own"] = {"api": api, "keys": {}}


_OWN_KEYS = {
    "input_text": (_BREAKPOINT,),
    "input_image": (_BREAKPOINT,),
    "input_file": (_BREAKPOINT, "detail"),
    "output_text": ("annotations", "logprobs"),
}
"""Per part type, the SDK keys no schema field holds, carried on the part (``own_keys``)."""
_NOTHING: tuple[Any, ...] = (None, [])
"""Values that ask for nothing (an answer's ``annotations: []`` sent back)."""
_ITEM_OWN_KEYS: dict[str, tuple[str, ...]] = {
    "message": ("phase", "status"),
    "function_call": ("status", "async", "caller"),
    "custom_tool_call": ("status", "async", "caller"),
    "function_call_output": ("status", "caller"),
    "custom_tool_call_output": ("status", "caller"),
}
"""Per input item type, its SDK keys no schema field holds: a message's ``phase``
(``commentary`` / ``final_answer``) and ``status``, a call's ``status``, ``async`` and
``caller``, a call output's ``status`` and ``caller``, unless the value asks for nothing
(:data:`_ASKS_NOTHING`: the answer's own echo). Carried verbatim to a Responses upstream
on that item (an assistant message's on its text parts' ``own_keys``, a call's on the tool-call
part's, any other's on the message's ``own``); toward another wire API dropped and named,
except a ``program`` caller (code the server ran made the call), which is refused there like
Anthropic's ``tool_use.caller`` (:func:`_item_own_keys`)."""
_ASKS_NOTHING: dict[str, tuple[Any, ...]] = {
    "async": (False,),
    "caller": ({"type": "direct"},),
    "status": ("completed",),
}
"""Values of :data:`_ITEM_OWN_KEYS` keys that ask for nothing (echoes of an answer's items:
accepted, carried nowhere, never named)."""


def _item_own_keys(item: JSONObj, kind: str, path: str, st: InputState) -> JSONObj | None:
    """The item's :data:`_ITEM_OWN_KEYS` keys (non-null), verbatim, or None; their paths go to
    ``st`` (``serving``: dropped and named toward another wire API; ``native``: a ``program``
    caller, refused there)."""
    own: JSONObj | None = None
    for key in _ITEM_OWN_KEYS.get(kind, ()):
        value = item.get(key)
        if value is None:
            continue
        if value in _ASKS_NOTHING.get(key, ()):
            continue  # an echo that asks for nothing: carried nowhere (docs/fidelity.md)
        if own is None:
            own = {}
        own[key] = value
        if key == "caller":
            check(value, dict, join(path, key))
            st.native.append(join(path, key))
        else:
            st.serving.append(join(path, key))
    if own is not None:
        st.owned = True
    return own


def own_paths(raw: Any) -> list[str]:
    """The paths of the :data:`_OWN_KEYS` keys (non-null) in the ``input`` items' content and
    outputs: carried to a Responses upstream on the part, dropped and named toward another
    (an item's own keys: :func:`_item_own_keys`)."""
    out: list[str] = []
    if type(raw) is not list:
        return out
    for i, item in enumerate(raw):
        if type(item) is not dict:
            continue
        for key in ("content", "output"):
            parts = item.get(key)
            if type(parts) is list:
                for j, part in enumerate(parts):
                    if type(part) is dict:
                        for k in _OWN_KEYS.get(str(part.get("type")), ()):
                            if part.get(k) not in _NOTHING:
                                out.append(f"input[{i}].{key}[{j}].{k}")
    return out


def _call_id(item: JSONObj, path: str, st: InputState) -> str:
    raw = req(item, "call_id", str, path)
    call_id = unwrap_tool_call_id(raw)[0] if ID_SEPARATOR in raw else raw
    if plain_call_id(call_id) is None:
        st.check_id(call_id, join(path, "call_id"))
    return call_id


def _function_call(item: JSONObj, path: str, st: InputState) -> JSONObj:
    raw_id = req(item, "call_id", str, path)
    if ID_SEPARATOR in raw_id:
        call_id, sig, prov = unwrap_tool_call_id(raw_id)
    else:
        call_id, sig, prov = raw_id, None, None
    if plain_call_id(call_id) is None:
        st.check_id(call_id, join(path, "call_id"))
    name = req(item, "name", str, path)
    namespace = opt(item, "namespace", str, path)
    if namespace:
        name = f"{namespace}{NAMESPACE_SEPARATOR}{name}"
    if item.get("type") == "custom_tool_call":
        raw = orjson.dumps({CUSTOM_ARGUMENT: req(item, "input", str, path)}).decode()
        arguments = parse_arguments(raw)
    else:
        raw = req(item, "arguments", str, path)
        arguments = parse_arguments(raw)
        check_embedded(arguments, raw, st.depth, _ARGUMENTS_LEVEL, join(path, "arguments"))
    st.names.setdefault(call_id, name)
    return {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "raw_arguments": raw,
        "signature": sig,
        "provenance": prov,
        "src": path,
    }


def _reasoning(item: JSONObj, path: str) -> JSONObj | None:
    """A ``reasoning`` item -> a thinking (or redacted thinking) part dict; None when it holds
    neither text nor encrypted content."""
    texts: list[str] = []
    for key, kind in (("content", "reasoning_text"), ("summary", "summary_text")):
        parts = opt(item, key, list, path)
        for i, raw in enumerate(parts or ()):
            ppath = join(join(path, key), i)
            if type(raw) is not dict:
                raise wrong_type(ppath, "an object", raw)
            check_keys(raw, _SUMMARY_KEYS, ppath)
            ptype = req(raw, "type", str, ppath)
            if ptype != kind:
                raise InvalidRequest(
                    f"{join(ppath, 'type')}: expected {kind}, got {ptype!r}", param=join(ppath, "type")
                )
            texts.append(req(raw, "text", str, ppath))
        if texts:
            break  # the full reasoning text wins over its summary
    text = "\n\n".join(texts)
    encrypted = opt(item, "encrypted_content", str, path)
    if not encrypted:
        return {"type": "thinking", "text": text} if text else None
    epath = join(path, "encrypted_content")
    try:
        sig, prov = unwrap_signature(encrypted)
    except ValueError as exc:
        raise InvalidRequest(f"{epath}: damaged Turnstile signature envelope ({exc})", param=epath) from None
    if not text:
        return {"type": "redacted_thinking", "data": sig, "provenance": prov or NATIVE}
    return {"type": "thinking", "text": text, "signature": sig, "provenance": prov or NATIVE}


def _tool_output(item: JSONObj, path: str, st: InputState) -> JSONObj:
    call_id = _call_id(item, path, st)
    opt(item, "namespace", str, path)  # the call's namespace again: its call (by call_id) has it
    output = item.get("output")
    opath = join(path, "output")
    if output is None:
        raise missing(opath)
    parts = _parts(output, opath, "user")
    for k, part in enumerate(parts):
        if part["type"] == "document":
            fpath = part.get("src") or join(opath, k)
            raise unsupported(join(fpath, "type"), "an input_file in a function call output")
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": parts,
        "name": st.names.get(call_id),
        "src": path,
    }


def parse_input(raw: Any, st: InputState) -> list[JSONObj]:
    """The ``input`` field (a string or a list of items) -> message dicts (``src`` =
    ``input[i]``; an assistant message made of several items has the first one's). Raises
    :class:`InvalidRequest` naming the field for wrong types, unknown roles or item types,
    and the refused features listed in the module doc."""
    if type(raw) is str:
        return [{"role": "user", "content": [{"type": "text", "text": raw}], "src": "input"}]
    if type(raw) is not list:
        raise wrong_type("input", "a string or an array of input items", raw)
    out: list[JSONObj] = []
    assistant: JSONObj | None = None  # the assistant message being assembled
    for i, item in enumerate(raw):
        path = join("input", i)
        if type(item) is not dict:
            raise wrong_type(path, "an object", item)
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"
        if type(kind) is not str:
            kind = req(item, "type", str, path)  # raises
        known = _ITEM_KEYS.get(kind)
        if known is not None:
            check_keys(item, known, path)
        role = item.get("role") if kind == "message" else None
        if kind in _ASSISTANT_ITEMS or role == "assistant":
            if assistant is None:
                assistant = {"role": "assistant", "content": [], "src": path}
                out.append(assistant)
            if kind == "reasoning":
                part = _reasoning(item, path)
                if part is not None:
                    assistant["content"].append(part)
            elif kind == "message":
                parts = _parts(item.get("content") or "", join(path, "content"), "assistant")
                own = _item_own_keys(item, kind, path, st)
                if own is not None:
                    for part in parts:  # the item's phase and status go with its text (module doc)
                        if part["type"] == "text":
                            part["own_keys"] = {**part.get("own_keys", {}), **own}
                assistant["content"] += parts
            else:
                call = _function_call(item, path, st)
                own = _item_own_keys(item, kind, path, st) if len(item) > 4 else None
                if own is not None:
                    call["own_keys"] = own
                assistant["content"].append(call)
            continue
        assistant = None
        if kind in _OUTPUT_ITEMS or kind == "message":
            msg = _tool_output(item, path, st) if kind in _OUTPUT_ITEMS else _message(item, path, role)
            if msg is not None:
                own = _item_own_keys(item, kind, path, st) if len(item) > 3 else None
                if own is not None:
                    msg["own"] = {"api": API, "keys": own}
                out.append(msg)
        elif kind == "additional_tools":
            _additional_tools(item, path, st)
        elif kind == "item_reference":
            raise unsupported(
                join(path, "type"),
                "an item_reference input item (send the item itself, or continue a stored response "
                "with previous_response_id)",
            )
        elif kind in _HOSTED_ITEMS:
            if kind.startswith(("local_shell_call", "shell_call", "apply_patch_call")):
                raise unsupported(
                    join(path, "type"),
                    f"a {kind} input item (the calls of client-run tools are not relayed yet; send them "
                    "as function_call / custom_tool_call items)",
                )
            raise unsupported(join(path, "type"), f"a {kind} input item (no upstream here runs hosted tools)")
        elif kind in _REFUSED_ITEMS:
            raise unsupported(join(path, "type"), _REFUSED_ITEMS[kind])
        else:
            raise InvalidRequest(
                f"{join(path, 'type')}: unknown input item type {kind!r}", param=join(path, "type")
            )
    return out


def _additional_tools(item: JSONObj, path: str, st: InputState) -> None:
    """An ``additional_tools`` item: its ``tools`` are kept in ``st`` for the request's tools
    (:mod:`gateway.edges.openai_responses_tools`); ``role`` must be ``developer`` (the only one
    OpenAI accepts) and ``id`` echoes the client's own; any other field is refused by name."""
    role = req(item, "role", str, path)
    if role != "developer":
        rpath = join(path, "role")
        raise InvalidRequest(
            f"{rpath}: an additional_tools item's role is developer, got {role!r}", param=rpath
        )
    opt(item, "id", str, path)
    for key in item:
        if key not in ("type", "id", "role", "tools"):
            kpath = join(path, key)
            raise InvalidRequest(f"{kpath}: unknown field of an additional_tools item", param=kpath)
    st.additional_tools.append((join(path, "tools"), req(item, "tools", list, path)))


def _message(item: JSONObj, path: str, role: Any) -> JSONObj | None:
    """A user, system or developer message item -> its message dict; None for a system
    message left without text."""
    if role is None:
        raise missing(join(path, "role"))
    content = item.get("content")
    cpath = join(path, "content")
    if content is None:
        raise missing(cpath)
    if role == "user":
        return {"role": "user", "content": _parts(content, cpath, "user"), "src": path}
    if role == "system" or role == "developer":
        parts = _parts(content, cpath, "system")
        if not parts:
            return None
        if role == "developer":
            return {"role": "system", "content": parts, "developer": True, "src": path}
        return {"role": "system", "content": parts, "src": path}
    rpath = join(path, "role")
    check(role, str, rpath)
    raise InvalidRequest(
        f"{rpath}: unknown role {role!r} (expected user, assistant, system or developer)", param=rpath
    )
