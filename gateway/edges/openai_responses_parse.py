"""OpenAI Responses request body -> :class:`ResponsesRequest` (a :class:`gateway.schema.Request`).

Reference: https://platform.openai.com/docs/api-reference/responses/create. Every top-level
field is carried, translated, passed through to a Responses upstream or refused by name (HTTP
400); an unknown field is refused too.

* Translated: ``input`` (:mod:`gateway.edges.openai_responses_input`), ``instructions`` (a
  system message first), ``tools`` and the tools of ``additional_tools`` input items
  (:mod:`gateway.edges.openai_responses_tools`: ``function``; ``custom`` emulated as a function
  with one string argument ``input``; ``namespace`` groups flattened to ``<namespace>.<name>``;
  ``mcp`` naming a registered server -> the server-side tool loop), ``tool_choice``,
  ``parallel_tool_calls``, ``text.format`` (the structured-output field Chat's
  ``response_format`` maps to), ``reasoning.effort`` (as Chat's ``reasoning_effort``),
  ``max_output_tokens``, ``temperature``, ``top_p``, ``metadata``, ``user``
  (``safety_identifier`` when there is no ``user``), ``stream``.
* Carried for a Responses upstream (:attr:`gateway.schema.Request.native` of API
  ``openai_responses``, verbatim). Serving-only, so dropped and named toward another wire API
  (:data:`SERVING`): ``prompt_cache_key``, ``prompt_cache_retention``,
  ``prompt_cache_options``, ``client_metadata`` (Codex CLI's client details), ``service_tier``,
  ``image`` (image context compression), ``truncation`` (``auto``; ``disabled`` is the
  default), ``text.verbosity``, ``reasoning.summary`` (and the deprecated
  ``generate_summary``), ``reasoning.context``, ``reasoning.mode``, ``safety_identifier``
  when ``user`` is also given. Passed through, so refused toward another wire API
  (:data:`PASSED`: they change the answer): ``moderation`` (as Chat's ``moderation``) and
  ``access_programs``.
* Answered by the edge and the server: ``include: ["reasoning.encrypted_content"]`` (reasoning
  items carry their signed content), ``store`` (default true) and ``previous_response_id``
  (stored responses are sessions: :mod:`gateway.sessions.responses`; :func:`store_intent`,
  :func:`with_history`), ``stream_options.include_obfuscation: false``.
* Refused by name (:data:`REFUSED`): hosted tools, ``allowed_tools`` tool choices, other
  ``include`` values, ``item_reference`` items, ``conversation``, ``prompt``,
  ``background: true`` and ``background_options``, ``max_tool_calls``,
  ``context_management``, ``top_logprobs`` above 0,
  ``stream_options.include_obfuscation: true``.

The table of every field's class is :data:`gateway.edges.fidelity_responses.OPENAI_RESPONSES`
(``docs/fidelity.md``).

The parsed request keeps what the answer echoes (:class:`Echo`) on the edge's own
:class:`ResponsesRequest`, excluded from every dump.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

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
    check,
    client_path,
    invalid,
    join,
    load_body,
    opt,
    req,
    unsupported,
)
from gateway.edges._keys import check_keys
from gateway.edges.call_ids import refusal
from gateway.edges.openai_responses_input import InputState, attach_own, own_paths, parse_input
from gateway.edges.openai_responses_tools import Tools, add_tools, tool_choice
from gateway.errors import InvalidRequest
from gateway.providers.passthrough import serving_names
from gateway.schema import Request

API = "openai_responses"
"""The wire API name this edge's passthrough fields are keyed by."""

ENCRYPTED_REASONING = "reasoning.encrypted_content"

_EFFORTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}

_FIELD_NAMES = {"max_output_tokens": "max_output_tokens", "thinking": "reasoning.effort", "messages": "input"}

_FREE_FORM: tuple[FieldPattern, ...] = (
    ("metadata",),
    ("tools", "*", "parameters"),
    ("text", "format", "schema"),
    ("input", "*", "arguments"),
)

_PASSTHROUGH = ("prompt_cache_key", "prompt_cache_retention", "service_tier")
_PASSTHROUGH_OBJECTS = ("prompt_cache_options", "client_metadata", "image")
_PASSED_OBJECTS = ("moderation", "access_programs")

_HANDLED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "reasoning",
        "max_output_tokens",
        "temperature",
        "top_p",
        "include",
        "metadata",
        "user",
        "safety_identifier",
        "truncation",
        "store",
        "previous_response_id",
        "stream",
        "stream_options",
        *_PASSTHROUGH,
        *_PASSTHROUGH_OBJECTS,
        *_PASSED_OBJECTS,
    }
)

_REFUSED = {
    "conversation": "conversation (this gateway keeps no conversations objects; send the whole conversation "
    "in input)",
    "prompt": "prompt templates (send the prompt's text in instructions and input)",
    "max_tool_calls": "max_tool_calls (no upstream limit of hosted tool calls here)",
    "context_management": "context_management (server-side compaction items; the gateway compacts sessions "
    "itself)",
}

SERVING = frozenset({*_PASSTHROUGH, *_PASSTHROUGH_OBJECTS, "truncation"})
"""Top-level fields carried verbatim to a Responses upstream and dropped and named toward
another wire API (``safety_identifier`` too when ``user`` is given; ``text.verbosity`` and the
``reasoning`` keys but ``effort`` likewise)."""
PASSED = frozenset(_PASSED_OBJECTS)
"""Top-level fields carried verbatim to a Responses upstream and refused toward another wire
API (``NativeFields.paths``)."""
REFUSED = frozenset({*_REFUSED, "background", "background_options", "top_logprobs"})
"""Top-level fields refused by name when they ask for something (a null, ``background:
false``, ``top_logprobs: 0`` or empty ``background_options`` asks for nothing)."""


class ResponsesRequest(Request):
    """A :class:`Request` parsed by the Responses edge, with what its answer echoes
    (``echo``: the client's own ``tools``, ``tool_choice``, ``text``, ``reasoning``, ...,
    and ``custom_tools``, the names of custom tools to map calls back to). ``echo`` is the
    edge's alone: never dumped, never read below the edge."""

    echo: dict[str, Any] = Field(default_factory=dict, exclude=True)


FORMAT_KEYS = {
    "text": frozenset({"type"}),
    "json_object": frozenset({"type"}),
    "json_schema": frozenset({"type", "name", "description", "schema", "strict"}),
}
"""Keys of each ``text.format`` type (``ResponseFormatText``, ``ResponseFormatJSONObject``,
``ResponseFormatTextJSONSchemaConfigParam``); any other is refused by name."""
TEXT_KEYS = frozenset({"format", "verbosity"})
REASONING_KEYS = frozenset({"effort", "summary", "generate_summary", "context", "mode"})
STREAM_OPTIONS_KEYS = frozenset({"include_obfuscation"})
"""Keys of ``text`` (``ResponseTextConfigParam``), ``reasoning`` (``Reasoning``) and
``stream_options`` (``StreamOptions``)."""


def _text_format(text: JSONObj, out: JSONObj, extra: JSONObj) -> None:
    fmt = opt(text, "format", dict, "text")
    if fmt is not None:
        ftype = req(fmt, "type", str, "text.format")
        if ftype in FORMAT_KEYS:
            check_keys(fmt, FORMAT_KEYS[ftype], "text.format")
        if ftype in ("text", "json_object"):
            out["response_format"] = {"type": ftype}
        elif ftype == "json_schema":
            out["response_format"] = {
                "type": "json_schema",
                "name": req(fmt, "name", str, "text.format"),
                "description": opt(fmt, "description", str, "text.format"),
                "schema": req(fmt, "schema", dict, "text.format"),
                "strict": opt(fmt, "strict", bool, "text.format"),
            }
        else:
            raise InvalidRequest(f"text.format.type: unknown text format {ftype!r}", param="text.format.type")
    verbosity = opt(text, "verbosity", str, "text")
    if verbosity is not None:
        if verbosity not in ("low", "medium", "high"):
            raise InvalidRequest(
                f"text.verbosity: expected low, medium or high, got {verbosity!r}", param="text.verbosity"
            )
        extra["text"] = {"verbosity": verbosity}
    for key in text:
        if key not in TEXT_KEYS:
            raise InvalidRequest(f"text.{key}: unknown field", param=f"text.{key}")


def _reasoning(reasoning: JSONObj, out: JSONObj, extra: JSONObj) -> None:
    effort = opt(reasoning, "effort", str, "reasoning")
    if effort is not None:
        if effort == "none":
            out["thinking"] = {"enabled": False}
        elif effort in _EFFORTS:
            out["thinking"] = {"effort": _EFFORTS[effort]}
        else:
            raise InvalidRequest(
                f"reasoning.effort: expected none, minimal, low, medium, high or xhigh, got {effort!r}",
                param="reasoning.effort",
            )
    carried: JSONObj = {}
    if effort == "none" or effort == "xhigh":
        carried["effort"] = effort  # verbatim for a Responses upstream (the schema: off / high)
    for key in ("context", "mode"):
        value = opt(reasoning, key, str, "reasoning")
        if value is not None:
            carried[key] = value
    for key in ("summary", "generate_summary"):
        value = opt(reasoning, key, str, "reasoning")
        if value is not None:
            if value not in ("auto", "concise", "detailed"):
                raise InvalidRequest(
                    f"reasoning.{key}: expected auto, concise or detailed, got {value!r}",
                    param=f"reasoning.{key}",
                )
            carried[key] = value
    if carried:
        extra["reasoning"] = carried
    for key in reasoning:
        if key not in REASONING_KEYS:
            raise InvalidRequest(f"reasoning.{key}: unknown field", param=f"reasoning.{key}")


def _include(raw: Any) -> bool:
    """Whether ``include`` asks for the reasoning's encrypted content; other values refused."""
    wanted = False
    for i, value in enumerate(check(raw, list, "include")):
        path = join("include", i)
        check(value, str, path)
        if value != ENCRYPTED_REASONING:
            raise unsupported(path, f"include value {value!r}")
        wanted = True
    return wanted


_OWN_MARKERS = (
    b'"prompt_cache_breakpoint"',
    b'"input_file"',
    b'"phase"',
    b'"status"',
    b'"annotations"',
    b'"logprobs"',
    b'"caller"',
    b'"async"',
)
"""Bytes of a body that may hold an input part's or item's own keys (:func:`own_paths`)."""


def _refuse(data: JSONObj) -> None:
    """Refuse the top-level fields this edge does not carry (a null or a default value of one
    is accepted: it asks for nothing), and every field it does not know, by name."""
    for key in data:
        if key in _HANDLED:
            continue
        value = data[key]
        if key in _REFUSED:
            if value is not None:
                raise unsupported(key, _REFUSED[key])
        elif key == "background":
            if value is not None and check(value, bool, key):
                raise unsupported(key, "background responses (answers are streamed or returned whole)")
        elif key == "background_options":
            if value is not None and check(value, dict, key):
                raise unsupported(
                    key,
                    "background execution options (background responses are not run; answers are "
                    "streamed or returned whole)",
                )
        elif key == "top_logprobs":
            if value is not None and check(value, int, key) != 0:
                raise unsupported(key, "top_logprobs (no log probabilities are carried)")
        else:
            raise InvalidRequest(f"{key}: unknown field of a Responses request", param=key)


def _key(value: Any, key: str) -> Any:
    return value.get(key) if type(value) is dict else None


_TOOL_SITES = tool_sites(
    ToolSite("tools", "parameters", lambda t: _key(t, "parameters"), lambda t: _key(t, "name"))
)
"""Where tool definitions are (function tools: ``parameters`` at the top of the tool), for
:func:`gateway.edges._bounds.check_tools`."""


METADATA_LIMITS = (16, 64, 512)
"""OpenAI's bounds on ``metadata``: pairs, key length, value length (characters;
https://platform.openai.com/docs/api-reference/responses/create#responses-create-metadata)."""


def _metadata(metadata: JSONObj) -> JSONObj:
    """``metadata`` as OpenAI takes it — at most 16 string values, keys up to 64 characters,
    values up to 512 — else :class:`InvalidRequest` naming the entry (an upstream would refuse
    it, or the gateway would have to leave it out)."""
    pairs, key_len, value_len = METADATA_LIMITS
    if len(metadata) > pairs:
        raise InvalidRequest(f"metadata: at most {pairs} pairs, got {len(metadata)}", param="metadata")
    for key, value in metadata.items():
        path = f"metadata.{key}"
        if len(key) > key_len:
            raise InvalidRequest(
                f"metadata: a key longer than {key_len} characters: {key[:80]!r}", param="metadata"
            )
        if type(value) is not str:
            raise InvalidRequest(f"{path}: expected a string, got {type(value).__name__}", param=path)
        if len(value) > value_len:
            raise InvalidRequest(f"{path}: longer than {value_len} characters", param=path)
    return metadata


def parse_request(body: bytes, limits: InputLimits = DEFAULT_LIMITS) -> ResponsesRequest:
    """Parse an OpenAI Responses request body (JSON bytes) into a :class:`ResponsesRequest`.

    Messages get ``src`` = ``"input[i]"`` (``"instructions"`` for the instructions); tool
    calls ``"input[i]"``. Raises :class:`gateway.errors.InvalidRequest` naming the field for
    malformed JSON, wrong types, a missing ``model`` or ``input``, unknown roles, item and
    part types, unknown fields and the refused features of the module doc, and
    :class:`gateway.errors.PayloadTooLarge` past the item or part ``limits``.
    """
    data = load_body(body)
    check_bounds(data, body, limits, _FREE_FORM, messages_key="input", tools=_TOOL_SITES)
    _refuse(data)
    model = data.get("model")
    if type(model) is not str:
        invalid(data, "model", str, "")
    if not model:
        raise InvalidRequest("model: must not be empty", param="model")
    if data.get("input") is None:
        invalid(data, "input", list, "")
    st = InputState(limits.max_json_depth)
    messages = parse_input(data["input"], st)
    if st.bad_ids:
        raise refusal(st.bad_ids)
    echo: dict[str, Any] = {"custom_tools": set(), "namespaced": {}, "include_encrypted": False}
    extra: JSONObj = {}
    instructions = opt(data, "instructions", str, "")
    echo["instructions"] = instructions
    if instructions:
        messages.insert(
            0, {"role": "system", "content": [{"type": "text", "text": instructions}], "src": "instructions"}
        )
    if not messages:
        raise InvalidRequest("input: must contain at least one item", param="input")
    out: JSONObj = {"model": model, "messages": messages}
    metadata = opt(data, "metadata", dict, "")
    if metadata is not None:
        out["metadata"] = _metadata(metadata)
    tools = Tools()
    if data.get("tools") is not None:
        add_tools(data["tools"], "tools", tools, limits)
    for path, raw in st.additional_tools:
        add_tools(raw, path, tools, limits)
    if tools.defs or data.get("tools") is not None:
        out["tools"] = tools.defs
    if tools.servers:
        out["mcp_servers"] = tools.servers
    echo["custom_tools"] = tools.custom
    echo["namespaced"] = tools.namespaced
    if "tool_choice" in data or "parallel_tool_calls" in data:
        out["tool_choice"] = tool_choice(data)
    max_out = opt(data, "max_output_tokens", int, "")
    if max_out is not None:
        if max_out < 1:
            raise InvalidRequest(
                f"max_output_tokens: must be at least 1, got {max_out}", param="max_output_tokens"
            )
        out["max_output_tokens"] = max_out
    for key in ("temperature", "top_p"):
        value = data.get(key)
        if value is not None:
            out[key] = check(value, float, key)
    text = opt(data, "text", dict, "")
    if text is not None:
        _text_format(text, out, extra)
    reasoning = opt(data, "reasoning", dict, "")
    if reasoning is not None:
        _reasoning(reasoning, out, extra)
    if data.get("include") is not None:
        echo["include_encrypted"] = _include(data["include"])
    user = opt(data, "user", str, "")
    safety = opt(data, "safety_identifier", str, "")
    if user is not None:
        out["user"] = user
        if safety is not None:
            extra["safety_identifier"] = safety
    elif safety is not None:
        out["user"] = safety
    for key in _PASSTHROUGH:
        value = opt(data, key, str, "")
        if value is not None:
            extra[key] = value
    for key in _PASSTHROUGH_OBJECTS:
        value = opt(data, key, dict, "")
        if value is not None:
            extra[key] = value
    passed: JSONObj = {}
    for key in _PASSED_OBJECTS:
        value = opt(data, key, dict, "")
        if value:  # {} asks for nothing
            passed[key] = value
    truncation = opt(data, "truncation", str, "")
    if truncation is not None:
        if truncation not in ("auto", "disabled"):
            raise InvalidRequest(
                f"truncation: expected auto or disabled, got {truncation!r}", param="truncation"
            )
        if truncation == "auto":
            extra["truncation"] = truncation
    store = opt(data, "store", bool, "")
    echo["store"] = True if store is None else store  # OpenAI's default: stored
    echo["previous_response_id"] = opt(data, "previous_response_id", str, "")
    stream = opt(data, "stream", bool, "")
    if stream is not None:
        out["stream"] = stream
    options = opt(data, "stream_options", dict, "")
    if options is not None:
        for key, value in options.items():
            if key not in STREAM_OPTIONS_KEYS:
                raise InvalidRequest(f"stream_options.{key}: unknown field", param=f"stream_options.{key}")
            if check(value, bool, "stream_options.include_obfuscation"):
                raise unsupported(
                    "stream_options.include_obfuscation", "obfuscation padding of stream events"
                )
    if stream:
        out["include_usage"] = True  # response.completed always carries the usage
    part_paths = own_paths(data["input"]) if any(marker in body for marker in _OWN_MARKERS) else None
    if part_paths or st.owned:
        attach_own(messages, API)
    if part_paths:
        tools.serving += part_paths
    tools.serving += st.serving
    if extra or passed or tools.tool_fields or tools.serving or st.native:
        serving = [n for n in serving_names(extra) if n != "reasoning.effort"] + tools.serving
        if tools.tool_fields:
            extra["tool_fields"] = tools.tool_fields
        out["native"] = {
            "api": API,
            "fields": {**extra, **passed},
            "serving": serving,
            "paths": sorted(passed) + st.native,
        }
    echo["raw"] = {k: data.get(k) for k in ("tools", "tool_choice", "text", "reasoning", "truncation")}
    echo["service_tier"] = data.get("service_tier")
    echo["parallel_tool_calls"] = data.get("parallel_tool_calls")
    out["echo"] = echo
    return _validate(out)


def _validate(data: JSONObj) -> ResponsesRequest:
    """The one validation of the assembled request (see
    :func:`gateway.edges._common.validate_request`)."""
    try:
        return ResponsesRequest.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        path = client_path(err["loc"], data, _FIELD_NAMES)
        raise InvalidRequest(f"{path or 'body'}: invalid value ({err['msg']})", param=path or None) from None


def store_intent(request: Request) -> tuple[bool, str | None]:
    """``(store, previous_response_id)`` of a parsed request (``(False, None)`` for a request
    another edge parsed)."""
    if not isinstance(request, ResponsesRequest):
        return False, None
    return bool(request.echo.get("store")), request.echo.get("previous_response_id")


def with_history(
    request: ResponsesRequest, history: list[Any], *, response_id: str | None, stored: bool
) -> ResponsesRequest:
    """``request`` continuing ``history`` (the stored chain of its previous response: schema
    messages, put after the instructions and before the new input items), answered as
    ``response_id`` (None: an id from the upstream's) and echoing ``store: stored``."""
    head = [m for m in request.messages if m.src == "instructions"]
    rest = [m for m in request.messages if m.src != "instructions"]
    echo = {**request.echo, "response_id": response_id, "store": stored}
    update: dict[str, Any] = {"messages": [*head, *history, *rest], "echo": echo}
    if any(m.own is not None for m in history):
        update["logged_own"] = True
    return request.model_copy(update=update)


def parse_input_tokens(body: bytes, limits: InputLimits = DEFAULT_LIMITS) -> ResponsesRequest:
    """``POST /v1/responses/input_tokens``: the same body as a response (what would be sent),
    parsed the same way; ``stream`` is irrelevant there. Raises as :func:`parse_request`."""
    return parse_request(body, limits)
