"""Gemini ``tools``, ``toolConfig`` and ``generationConfig`` -> the parts of
:class:`gateway.schema.Request` they set (tools, tool choice, sampling, output limit, stop
sequences, structured output, thinking), and the fields carried only to a Gemini upstream
(:class:`Native` -> :class:`gateway.schema.NativeFields`). The rules (what is translated,
carried or refused) are listed in :mod:`gateway.edges.gemini_parse`.

Keys are read in either spelling (:func:`camel`): the REST API takes camelCase and snake_case
(protobuf JSON), and the python SDK sends some fields snake_case (``parameters_json_schema``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from gateway.edges._bounds import DEFAULT_LIMITS, InputLimits, ToolSite, check_tools
from gateway.edges._common import JSONObj, as_obj, check, join, opt, req, unsupported
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.providers.gemini_common import API

TRANSLATED_GENERATION = frozenset(
    {
        "temperature",
        "topP",
        "topK",
        "candidateCount",
        "maxOutputTokens",
        "stopSequences",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "thinkingConfig",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
    }
)
UNRELAYED_TOOLS = frozenset({"codeExecution", "computerUse", "fileSearch", "retrieval", "mcpServers"})
"""Built-in tools whose results Gemini answers with parts the gateway does not relay
(``executableCode``, ``codeExecutionResult``, ...): refused rather than lost."""
PASSED_TOOLS = frozenset(
    {
        "googleSearch",
        "googleSearchRetrieval",
        "urlContext",
        "googleMaps",
        "enterpriseWebSearch",
        "parallelAiSearch",
    }
)
"""Built-in tools answered in text (grounding metadata not relayed yet): carried to a Gemini
upstream, refused toward another wire API. A ``Tool`` key in neither set is carried the same
way (a newer built-in tool)."""
DECLARATION_KEYS = frozenset({"name", "description", "parameters", "parametersJsonSchema"})
DECLARATION_REFUSED = ("response", "responseJsonSchema", "behavior")
"""Keys of a ``FunctionDeclaration`` read, and refused by name (a declared response schema and
non-blocking calls have no place in the other APIs' tools)."""
FUNCTION_CALLING_KEYS = frozenset({"mode", "allowedFunctionNames"})
FUNCTION_CALLING_REFUSED = ("streamFunctionCallArguments",)
"""Keys of ``functionCallingConfig`` read, and refused when they ask for something (streamed
call arguments: the gateway hands calls over whole)."""
THINKING_KEYS = frozenset({"thinkingBudget", "includeThoughts", "thinkingLevel"})
"""Keys of ``thinkingConfig``."""
UNRELAYED_GENERATION = frozenset(
    {"responseLogprobs", "logprobs", "speechConfig", "imageConfig", "audioTimestamp", "responseModalities"}
)
"""``generationConfig`` keys whose output (log probabilities, audio, images) the gateway does
not relay: refused by name (``responseModalities`` only when it asks for more than text)."""
_MODES = {"AUTO": "auto", "NONE": "none", "ANY": "required", "VALIDATED": "auto", "MODE_UNSPECIFIED": "auto"}
_LEVELS = {"MINIMAL": "minimal", "LOW": "low", "MEDIUM": "medium", "HIGH": "high"}


def camel(obj: JSONObj, path: str = "") -> JSONObj:
    """``obj`` (at ``path``) with its snake_case keys spelled camelCase (``function_call`` ->
    ``functionCall``), one level only: the REST API takes both spellings (protobuf JSON), and
    the python SDK sends some fields snake_case (``parameters_json_schema``). Free-form values
    below (arguments, schemas' property names) are not touched. Raises
    :class:`InvalidRequest` naming both when one field comes in both spellings
    (``generationConfig`` and ``generation_config``): one would otherwise win unseen."""
    if not any("_" in k for k in obj):
        return obj
    out: JSONObj = {}
    spelled: dict[str, str] = {}  # camelCase key -> the spelling it came in
    for k, v in obj.items():
        key = _CAMEL.sub(_upper, k) if "_" in k else k
        first = spelled.setdefault(key, k)
        if first != k:
            raise InvalidRequest(
                f"{join(path, first)} and {join(path, k)}: the same field in two spellings; send one",
                param=join(path, k),
            )
        out[key] = v
    return out


def _upper(m: re.Match[str]) -> str:
    return m.group(1).upper()


_CAMEL = re.compile(r"(?<=[a-z0-9])_([a-z])")


def obj(value: Any, path: str) -> JSONObj:
    """``value`` checked to be an object, keys camelCase (:func:`camel`)."""
    return camel(as_obj(value, path), path)


# ---------------------------------------------------------------------------- schemas

_GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL", "TYPE_UNSPECIFIED"}


def json_schema_from_gemini(schema: Any) -> Any:
    """A Gemini ``Schema`` (ai.google.dev/api/caching#Schema) as JSON Schema: ``type`` values
    lower-cased (``"STRING"`` -> ``"string"``), ``nullable: true`` -> ``"null"`` added to the
    type, ``example`` -> ``examples: [example]``, ``propertyOrdering`` -> the order of
    ``properties``; recursive over ``properties``, ``items`` and ``anyOf``. Every other keyword
    is the same in both and kept. The Gemini request builder's normaliser turns the result back
    into the same ``Schema`` (:func:`gateway.providers.gemini_schema.to_gemini_schema`)."""
    if type(schema) is not dict:
        return schema
    schema = camel(schema)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and type(value) is str and value.upper() in _GEMINI_TYPES:
            out["type"] = "object" if value.upper() == "TYPE_UNSPECIFIED" else value.lower()
        elif key == "properties" and type(value) is dict:
            out["properties"] = {k: json_schema_from_gemini(v) for k, v in value.items()}
        elif key == "items":
            out["items"] = json_schema_from_gemini(value)
        elif key == "anyOf" and type(value) is list:
            out["anyOf"] = [json_schema_from_gemini(v) for v in value]
        elif key == "example":
            out["examples"] = [value]
        elif key in ("nullable", "propertyOrdering"):
            continue  # applied below
        else:
            out[key] = value
    if schema.get("nullable") is True:
        t = out.get("type")
        if type(t) is str:
            out["type"] = [t, "null"]
        elif "anyOf" in out:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    order = schema.get("propertyOrdering")
    props = out.get("properties")
    if type(order) is list and type(props) is dict:
        ranked = [k for k in order if k in props] + [k for k in props if k not in order]
        out["properties"] = {k: props[k] for k in ranked}
    return out


# ---------------------------------------------------------------------------- tools and config


class Native:
    """The fields carried only to a Gemini upstream, collected while parsing: ``paths`` are
    fields with no place in the schema (refused toward another wire API); a key set by
    :meth:`verbatim` is the client's own form of a field the schema also carries (another
    wire API gets the schema's translation)."""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.paths: list[str] = []
        self.serving: list[str] = []

    def add(self, key: str, value: Any, path: str) -> None:
        """Carry top-level field ``key`` (the client's ``path``) as it is."""
        self.fields[key] = value
        self.paths.append(path)

    def add_serving(self, key: str, value: Any) -> None:
        """Carry top-level field ``key`` as it is; toward another wire API it is dropped and
        named (``NativeFields.serving``)."""
        self.fields[key] = value
        self.serving.append(key)

    def add_to(self, key: str, sub: str, value: Any, path: str) -> None:
        """Carry ``key.sub`` (``generationConfig.seed``; the client's ``path``) as it is."""
        self.fields.setdefault(key, {})[sub] = value
        self.paths.append(path)

    def verbatim(self, key: str, sub: str, value: Any) -> None:
        """Carry ``key.sub`` (``generationConfig.thinkingConfig``) as the client sent it to a
        Gemini upstream, which gets it instead of the schema's translation; no path is
        recorded: another wire API gets the translation, so nothing is refused there."""
        self.fields.setdefault(key, {})[sub] = value

    def dump(self) -> JSONObj | None:
        """The :class:`gateway.schema.NativeFields` dict, or None when nothing is carried."""
        if not self.fields:
            return None
        return {"api": API, "fields": self.fields, "paths": self.paths, "serving": self.serving}


def _declaration(raw: Any, path: str) -> JSONObj:
    decl = obj(raw, path)
    for key in decl:
        if key not in DECLARATION_KEYS:
            kpath = join(path, key)
            if key in DECLARATION_REFUSED:
                raise unsupported(kpath, f"the function declaration field {key!r}")
            raise InvalidRequest(f"{kpath}: unknown field {key!r}", param=kpath)
    params = opt(decl, "parametersJsonSchema", dict, path)
    if params is None:
        gemini = opt(decl, "parameters", dict, path)
        params = json_schema_from_gemini(gemini) if gemini is not None else None
    elif decl.get("parameters") is not None:
        ppath = join(path, "parameters")
        raise InvalidRequest(f"{ppath}: give parameters or parametersJsonSchema, not both", param=ppath)
    return {
        "name": req(decl, "name", str, path),
        "description": opt(decl, "description", str, path),
        "parameters": params if params is not None else {"type": "object", "properties": {}},
    }


def _field(decl: Any, key: str) -> Any:
    return decl.get(key) if type(decl) is dict else None


_SCHEMA_FIELDS = ("parametersJsonSchema", "parameters")


def _check_declarations(decls: list[Any], path: str, limits: InputLimits) -> None:
    """:func:`gateway.edges._bounds.check_tools` for one ``functionDeclarations`` list at
    ``path``: its count and each declaration's schema (either field)."""
    for key in _SCHEMA_FIELDS:
        site = ToolSite(path, key, functools.partial(_field, key=key), functools.partial(_field, key="name"))
        check_tools(decls, site, limits)


def tools(data: JSONObj, native: Native, limits: InputLimits = DEFAULT_LIMITS) -> tuple[list[JSONObj], bool]:
    """Tool definition dicts of ``tools[].functionDeclarations`` (a single Tool object is read
    as a list of one), and whether an ``{"type": "mcp"}`` entry is there (read by
    :func:`gateway.edges._common.mcp_server_entries`). Other built-in tools go to ``native``;
    those answered with parts the gateway does not relay raise :class:`InvalidRequest`. More
    than ``limits.max_request_tools`` declarations (in one list or in all), or a declaration
    schema past ``limits.max_tool_schema_nodes``, raise :class:`PayloadTooLarge` (413)."""
    out: list[JSONObj] = []
    builtin: list[JSONObj] = []
    has_mcp = False
    tools = data.get("tools")
    if type(tools) is dict:  # one Tool for the repeated field: the API takes it (pydantic-ai cassettes)
        tools = [tools]
    for i, raw in enumerate(check(tools, list, "tools") if tools is not None else ()):
        path = join("tools", i)
        tool = obj(raw, path)
        if tool.get("type") == "mcp":  # Turnstile's own entry: a registered MCP server's tools
            has_mcp = True
            continue
        for key, value in tool.items():
            if key == "functionDeclarations":
                dpath = join(path, key)
                decls = check(value, list, dpath)
                _check_declarations(decls, dpath, limits)
                for k, decl in enumerate(decls):
                    out.append(_declaration(decl, join(dpath, k)))
                if len(out) > limits.max_request_tools:
                    raise PayloadTooLarge(
                        f"tools: {len(out)} function declarations; at most {limits.max_request_tools} are "
                        "accepted per request (limit server.max_request_tools)",
                        param="tools",
                    )
            elif key in UNRELAYED_TOOLS:
                raise unsupported(
                    join(path, key),
                    f"the built-in tool {key!r} (Gemini answers it with parts the gateway does not relay)",
                )
            else:
                builtin.append({key: value})
                native.paths.append(join(path, key))
    if builtin:
        native.fields["tools"] = builtin
    return out, has_mcp


def tool_choice(data: JSONObj, native: Native, declared: set[str]) -> tuple[JSONObj | None, bool]:
    """The tool choice of ``toolConfig`` (None when it sets none), and whether its mode is
    ``VALIDATED`` (the tools are then made strict for other wire APIs; a Gemini upstream gets
    ``functionCallingConfig.mode: VALIDATED`` as sent, :meth:`Native.verbatim`)."""
    cfg = opt(data, "toolConfig", dict, "")
    if cfg is None:
        return None, False
    cfg = camel(cfg, "toolConfig")
    choice: JSONObj | None = None
    validated = False
    for key, value in cfg.items():
        path = join("toolConfig", key)
        if key != "functionCallingConfig":
            native.add_to("toolConfig", key, value, path)
            continue
        fcc = obj(value, path)
        mode = opt(fcc, "mode", str, path) or "AUTO"
        if mode not in _MODES:
            mpath = join(path, "mode")
            raise InvalidRequest(f"{mpath}: expected AUTO, ANY, NONE or VALIDATED, got {mode!r}", param=mpath)
        names = opt(fcc, "allowedFunctionNames", list, path) or []
        npath = join(path, "allowedFunctionNames")
        for n, name in enumerate(names):
            check(name, str, join(npath, n))
        for k in fcc:
            if k not in FUNCTION_CALLING_KEYS:
                kpath = join(path, k)
                if k in FUNCTION_CALLING_REFUSED:
                    if fcc[k] in (None, False):
                        continue
                    raise unsupported(kpath, f"{k} (the gateway hands tool calls over whole)")
                raise InvalidRequest(f"{kpath}: unknown field {k!r}", param=kpath)
        if names and mode not in ("ANY", "VALIDATED"):
            raise InvalidRequest(f"{npath}: allowed only with mode ANY or VALIDATED", param=npath)
        if mode == "ANY" and len(set(names)) > 1 and set(names) == declared:
            names = []  # every declared function: any call (pydantic-ai sends this for ANY)
        if len(set(names)) > 1:
            raise unsupported(npath, "allowedFunctionNames naming some but not all of several functions")
        if names and mode == "ANY":
            choice = {"mode": "tool", "name": names[0]}
        elif names:
            raise unsupported(npath, "allowedFunctionNames with mode VALIDATED")
        else:
            choice = {"mode": _MODES[mode]}
        validated = mode == "VALIDATED"
        if validated:
            native.verbatim("toolConfig", "functionCallingConfig", {"mode": "VALIDATED"})
    return choice, validated


def _thinking(cfg: JSONObj) -> JSONObj | None:
    path = "generationConfig.thinkingConfig"
    for key in cfg:
        if key not in THINKING_KEYS:
            raise InvalidRequest(f"{join(path, key)}: unknown field {key!r}", param=join(path, key))
    budget = opt(cfg, "thinkingBudget", int, path)
    level = opt(cfg, "thinkingLevel", str, path)
    include = opt(cfg, "includeThoughts", bool, path)
    if budget is not None and level is not None:
        raise InvalidRequest(f"{path}: give thinkingBudget or thinkingLevel, not both", param=path)
    if level is not None:
        if level.upper() not in _LEVELS:
            lpath = join(path, "thinkingLevel")
            raise InvalidRequest(
                f"{lpath}: expected MINIMAL, LOW, MEDIUM or HIGH, got {level!r}", param=lpath
            )
        return {"effort": _LEVELS[level.upper()]}
    if budget == 0:
        return {"enabled": False}
    if budget is not None and budget > 0:
        return {"budget_tokens": budget}
    if budget is not None and budget != -1:
        bpath = join(path, "thinkingBudget")
        raise InvalidRequest(f"{bpath}: expected -1 (dynamic), 0 (off) or a positive budget", param=bpath)
    return {"enabled": True} if include or budget == -1 else None


def generation(data: JSONObj, out: JSONObj, native: Native) -> None:
    """Set the schema fields ``generationConfig`` translates into ``out`` (the request dict
    being assembled: sampling, ``max_output_tokens``, ``stop``, ``response_format``,
    ``thinking``); its other keys go to ``native``, or raise :class:`InvalidRequest` naming
    them when their output is not relayed (module docstring of :mod:`gateway.edges.gemini_parse`)."""
    gen = opt(data, "generationConfig", dict, "")
    if not gen:
        return
    path = "generationConfig"
    gen = camel(gen, path)
    for key, value in gen.items():
        if key in TRANSLATED_GENERATION or value is None or value is False:
            continue
        if key in UNRELAYED_GENERATION:
            if key == "responseModalities" and value in (["TEXT"], ["text"]):
                continue  # the default: text only
            raise unsupported(join(path, key), f"{key} (that output is not relayed yet)")
        native.add_to("generationConfig", key, value, join(path, key))
    for key, field, typ in (
        ("temperature", "temperature", float),
        ("topP", "top_p", float),
        ("topK", "top_k", int),
        ("maxOutputTokens", "max_output_tokens", int),
        ("seed", "seed", int),
        ("presencePenalty", "presence_penalty", float),
        ("frequencyPenalty", "frequency_penalty", float),
    ):
        value = gen.get(key)
        if key == "topK" and type(value) is float and value.is_integer():  # the SDKs type topK as a float
            value = int(value)
        value = opt({key: value}, key, typ, path)
        if value is not None and (value or not key.endswith("Penalty")):  # a penalty of 0 asks for nothing
            out[field] = value
    if out.get("max_output_tokens") is not None and out["max_output_tokens"] < 1:
        raise InvalidRequest(
            f"{path}.maxOutputTokens: must be at least 1, got {out['max_output_tokens']}",
            param="generationConfig.maxOutputTokens",
        )
    count = opt(gen, "candidateCount", int, path)
    if count is not None and count != 1:
        raise unsupported(join(path, "candidateCount"), "candidateCount other than 1")
    stops = opt(gen, "stopSequences", list, path)
    if stops:
        for k, s in enumerate(stops):
            check(s, str, join(join(path, "stopSequences"), k))
        out["stop"] = list(stops)
    mime = opt(gen, "responseMimeType", str, path)
    schema = opt(gen, "responseJsonSchema", dict, path)
    gschema = opt(gen, "responseSchema", dict, path)
    if schema is not None and gschema is not None:
        raise InvalidRequest(
            f"{path}: give responseSchema or responseJsonSchema, not both",
            param=join(path, "responseJsonSchema"),
        )
    if mime == ENUM_MIME:
        key = "responseSchema" if gschema is not None else "responseJsonSchema"
        _enum_output(gschema if gschema is not None else schema, key, path, native)
        return _thinking_config(gen, path, out, native)
    if schema is None and gschema is not None:
        schema = json_schema_from_gemini(gschema)
    if schema is not None and mime != "application/json":
        mpath = join(path, "responseMimeType")
        raise InvalidRequest(
            f"{mpath}: a response schema needs responseMimeType application/json", param=mpath
        )
    if mime is not None and mime not in ("text/plain", "application/json"):
        raise unsupported(join(path, "responseMimeType"), f"responseMimeType {mime!r}")
    if schema is not None:
        out["response_format"] = {"type": "json_schema", "schema": schema}
        # A Gemini upstream gets the client's schema in the client's own slot, untouched
        # (``responseJsonSchema``'s JSON Schema constructs, ``responseSchema.propertyOrdering``).
        key = "responseSchema" if gschema is not None else "responseJsonSchema"
        native.verbatim("generationConfig", key, gschema if gschema is not None else schema)
    elif mime == "application/json":
        out["response_format"] = {"type": "json_object"}
    _thinking_config(gen, path, out, native)


ENUM_MIME = "text/x.enum"
"""Gemini's enum output: the answer is one of the schema's ``enum`` strings, as bare text
(https://ai.google.dev/gemini-api/docs/structured-output#enums)."""


def _enum_output(schema: JSONObj | None, key: str, path: str, native: Native) -> None:
    """``responseMimeType: text/x.enum`` with its string-enum schema (in the client's slot
    ``key``): carried as sent to a Gemini upstream; no other wire API
    answers with a bare enum value, so toward one the request is refused naming
    ``responseMimeType``. Raises :class:`InvalidRequest` when the schema is not a string enum."""
    mpath = join(path, "responseMimeType")
    enum = schema.get("enum") if schema is not None else None
    if type(enum) is not list or not enum or not all(type(v) is str for v in enum):
        raise InvalidRequest(
            f"{mpath}: {ENUM_MIME} needs a response schema whose enum lists the answer strings",
            param=mpath,
        )
    native.add_to("generationConfig", "responseMimeType", ENUM_MIME, mpath)
    native.verbatim("generationConfig", key, schema)  # in the client's slot (``key``)


def _thinking_config(gen: JSONObj, path: str, out: JSONObj, native: Native) -> None:
    """A ``thinkingConfig``: the schema's ``thinking`` in ``out``; a Gemini upstream gets the
    client's own form (``native``)."""
    thinking = opt(gen, "thinkingConfig", dict, path)
    if thinking is not None:
        thinking = camel(thinking, join(path, "thinkingConfig"))
        out["thinking"] = _thinking(thinking)
        # A Gemini upstream gets the client's thinkingConfig as sent (``thinkingLevel``,
        # ``includeThoughts: false``, ``thinkingBudget: -1``), not the gateway's rebuild of it.
        native.verbatim("generationConfig", "thinkingConfig", thinking)
