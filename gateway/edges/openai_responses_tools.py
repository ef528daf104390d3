"""OpenAI Responses tool definitions -> tool definition dicts in the shape of
:class:`gateway.schema.ToolDefinition`, and the names to map calls back with.

References: https://platform.openai.com/docs/api-reference/responses/create (``tools``,
``tool_choice``); the ``openai`` SDK's ``NamespaceTool`` and ``AdditionalTools`` types
(``openai/types/responses/``). The rules, each a decision written here:

* ``function`` tools are carried as they are; ``custom`` tools (free-form input, optional
  ``lark`` or ``regex`` grammar) are emulated as a function with one required string argument
  ``input``, the grammar described in the description (a regex grammar also as the argument's
  ``pattern``), the client's ``format`` kept as ``freeform`` for a Responses upstream to send
  the tool natively.
* A ``namespace`` tool is a group of ``function`` / ``custom`` tools (Codex CLI sends
  ``functions``, ``clock``, ``collaboration``, ``multi_agent_v1``). Its members are flattened
  into the request's tools under the name ``<namespace>.<name>`` (:data:`NAMESPACE_SEPARATOR`;
  OpenAI's function names cannot hold a dot, so no top-level tool meets it, and an upstream
  that refuses the dot gets ``<namespace>__<name>``, :class:`gateway.providers.naming.NameMap`).
  The namespace's description is put before each member's. A call of a member is rendered back
  as OpenAI answers it: ``name`` the member's, ``namespace`` the namespace's.
* An ``additional_tools`` input item (``role: developer``, ``tools``) adds its tools to the
  request's tools (the schema has no tools that appear mid-conversation; its position carries
  nothing else: the item has no content).
* ``mcp`` naming a registered server by ``server_label`` -> the server-side tool loop.
* Refused by name: hosted tools (no upstream here carries them; ``programmatic_tool_calling``
  too), unknown tool types, two tools of one (flattened) name, a namespace inside a namespace,
  the member options no upstream here honours (``defer_loading``, ``allowed_callers``,
  ``async``, ``output_schema`` when set), an ``mcp`` tool's remote-server and loading keys
  (:data:`MCP_REFUSED`, :data:`MCP_REFUSED_OPTIONS`), and any key the SDK types do not define
  on a tool, a namespace or its members, a custom tool's ``format`` or a tool choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.edges._bounds import InputLimits, ToolSite, check_tools
from gateway.edges._common import JSONObj, as_obj, check, join, opt, req, unsupported
from gateway.edges._keys import check_keys
from gateway.edges.openai_responses_input import CUSTOM_ARGUMENT, NAMESPACE_SEPARATOR
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.schema import freeform_note

HOSTED_TOOLS = (
    "web_search",
    "web_search_preview",
    "web_search_2025_08_26",
    "web_search_preview_2025_03_11",
    "file_search",
    "code_interpreter",
    "image_generation",
    "computer_use",
    "computer_use_preview",
    "computer",
    "local_shell",
    "shell",
    "apply_patch",
    "tool_search",
    "programmatic_tool_calling",
)

CLIENT_RUN_TOOLS = frozenset({"local_shell", "shell", "apply_patch"})
"""Tool types the client runs itself (Codex), whose calls come as their own output items
(``local_shell_call``, ``shell_call``, ``apply_patch_call``): refused by name, as their items
are not relayed yet (Codex declares the same tools as function / custom tools by default)."""

_MEMBER_OPTIONS = ("defer_loading", "allowed_callers", "async", "output_schema")


def _schema_of(tool: Any) -> Any:
    return tool.get("parameters") if type(tool) is dict else None


def _name_of(tool: Any) -> Any:
    return tool.get("name") if type(tool) is dict else None


@dataclass
class Tools:
    """The tools of one request as they are parsed: tool definition dicts (``defs``), MCP
    server ids (``servers``), the flattened names of custom tools (``custom``), and for each
    namespace member its ``(namespace, name)`` by flattened name (``namespaced``)."""

    defs: list[JSONObj] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)
    custom: set[str] = field(default_factory=set)
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    tool_fields: dict[str, JSONObj] = field(default_factory=dict)
    serving: list[str] = field(default_factory=list)
    _where: dict[str, str] = field(default_factory=dict)

    def own_keys(self, tool: JSONObj, path: str) -> None:
        """Keep ``tool``'s :data:`TOOL_OWN_KEYS` (non-null) by its name (``tool_fields``), their
        paths in ``serving``."""
        own = {k: tool[k] for k in TOOL_OWN_KEYS if tool.get(k) is not None}
        if own:
            self.tool_fields[tool["name"]] = own
            self.serving.extend(join(path, k) for k in own)

    def _add(self, d: JSONObj, path: str) -> None:
        name = d["name"]
        if name in self._where:
            npath = join(path, "name")
            raise InvalidRequest(f"{npath}: tool name {name!r} is also {self._where[name]}", param=npath)
        self._where[name] = path
        self.defs.append(d)


def custom_tool(tool: JSONObj, path: str) -> JSONObj:
    """A ``custom`` tool -> the function it is emulated as: one required string argument
    ``input``; the grammar (``format``) is described to the model, and a regex grammar is
    also the argument's ``pattern``. The client's ``format`` is kept as ``freeform`` (see
    :class:`gateway.schema.ToolDefinition`). Raises :class:`InvalidRequest` naming the field
    for a grammar other than ``lark`` / ``regex`` or a format other than ``text`` / ``grammar``."""
    name = req(tool, "name", str, path)
    description = opt(tool, "description", str, path) or ""
    prop: JSONObj = {"type": "string", "description": "The tool's free-form input."}
    fmt = opt(tool, "format", dict, path)
    if fmt is not None:
        fpath = join(path, "format")
        ftype = req(fmt, "type", str, fpath)
        check_keys(fmt, _GRAMMAR_KEYS if ftype == "grammar" else _TEXT_FORMAT_KEYS, fpath)
        if ftype == "grammar":
            syntax = req(fmt, "syntax", str, fpath)
            definition = req(fmt, "definition", str, fpath)
            if syntax == "regex":
                prop["pattern"] = definition
            elif syntax != "lark":
                spath = join(fpath, "syntax")
                raise InvalidRequest(f"{spath}: expected lark or regex, got {syntax!r}", param=spath)
        elif ftype != "text":
            tpath = join(fpath, "type")
            raise InvalidRequest(f"{tpath}: expected text or grammar, got {ftype!r}", param=tpath)
    freeform = fmt if fmt is not None else {"type": "text"}
    note = freeform_note(freeform)
    if note:
        description = f"{description}\n\n{note}" if description else note
    return {
        "name": name,
        "description": description or None,
        "freeform": freeform,
        "parameters": {
            "type": "object",
            "properties": {CUSTOM_ARGUMENT: prop},
            "required": [CUSTOM_ARGUMENT],
            "additionalProperties": False,
        },
    }


_FUNCTION_KEYS = frozenset(
    {
        "type",
        "name",
        "description",
        "parameters",
        "strict",
        "defer_loading",
        "output_schema",
        "allowed_callers",
        "async",
    }
)
_CUSTOM_KEYS = frozenset(
    {"type", "name", "description", "format", "defer_loading", "allowed_callers", "async"}
)
"""Keys of a ``function`` / ``custom`` tool (``FunctionToolParam``, ``CustomToolParam``); any
other is refused by name (:mod:`gateway.edges._keys`)."""
_NAMESPACE_KEYS = frozenset({"type", "name", "description", "tools"})
_GRAMMAR_KEYS = frozenset({"type", "syntax", "definition"})
_TEXT_FORMAT_KEYS = frozenset({"type"})
"""Keys of a ``namespace`` tool (``NamespaceToolParam``) and of a custom tool's ``format``
(``Grammar``, ``Text``)."""
MCP_READ = frozenset({"type", "server_label", "require_approval"})
MCP_REFUSED = (
    "server_url",
    "connector_id",
    "tunnel_id",
    "headers",
    "authorization",
    "allowed_tools",
    "server_description",
)
MCP_REFUSED_OPTIONS = ("defer_loading", "allowed_callers")
"""Keys of an ``mcp`` tool (``tool_param.Mcp``): the ones read (``server_label`` names a
registered server), the ones of a remote server OpenAI would call itself (refused by name when
set), and the options of how the upstream loads and calls its tools, refused when they ask for
something (the gateway offers a registered server's tools itself); any other key is refused by
name."""
TOOL_OWN_KEYS = ("defer_loading", "output_schema", "allowed_callers", "async")
"""A tool's SDK keys the schema has no place for: carried to a Responses upstream on that tool
(``NativeFields.fields["tool_fields"]``), dropped and named toward another wire API (tool search
loading, the declared output's schema, programmatic callers, asynchronous calls steer how the
upstream serves the tool, not its definition)."""


def _function_tool(tool: JSONObj, path: str) -> JSONObj:
    params = opt(tool, "parameters", dict, path)
    return {
        "name": req(tool, "name", str, path),
        "description": opt(tool, "description", str, path),
        "parameters": params if params is not None else {"type": "object", "properties": {}},
        "strict": opt(tool, "strict", bool, path),
    }


def _mcp_tool(tool: JSONObj, path: str) -> str:
    """An ``mcp`` tool naming a registered server -> its id (``server_label``). Fields of a
    remote MCP server OpenAI would call itself, and tool loading options, are refused by name
    (:data:`MCP_REFUSED`, :data:`MCP_REFUSED_OPTIONS`), as is any key the SDK does not define."""
    for key in MCP_REFUSED:
        if tool.get(key) is not None:
            raise unsupported(
                join(path, key), f"{key} on an mcp tool (the gateway runs registered MCP servers only)"
            )
    for key in MCP_REFUSED_OPTIONS:
        if tool.get(key) not in (None, False, []):
            raise unsupported(
                join(path, key),
                f"{key} on an mcp tool (the gateway offers a registered server's tools itself)",
            )
    check_keys(tool, MCP_READ | frozenset(MCP_REFUSED) | frozenset(MCP_REFUSED_OPTIONS), path)
    approval = tool.get("require_approval")
    if approval is not None and approval != "never":
        raise unsupported(
            join(path, "require_approval"),
            "require_approval other than 'never' (the gateway runs registered servers' tools under "
            "their trust tiers, without asking)",
        )
    label = req(tool, "server_label", str, path)
    if not label:
        lpath = join(path, "server_label")
        raise InvalidRequest(f"{lpath}: must name a registered MCP server", param=lpath)
    return label


def _namespace(tool: JSONObj, path: str, out: Tools, limits: InputLimits) -> None:
    """A ``namespace`` tool -> its members, flattened into ``out`` (module doc)."""
    check_keys(tool, _NAMESPACE_KEYS, path)
    ns = req(tool, "name", str, path)
    if not ns or NAMESPACE_SEPARATOR in ns:
        npath = join(path, "name")
        raise InvalidRequest(
            f"{npath}: a namespace name must be non-empty and hold no {NAMESPACE_SEPARATOR!r}", param=npath
        )
    about = opt(tool, "description", str, path) or ""
    members = req(tool, "tools", list, path)
    mpath = join(path, "tools")
    check_tools(members, ToolSite(mpath, "parameters", _schema_of, _name_of), limits)
    for i, raw in enumerate(members):
        ipath = join(mpath, i)
        member = as_obj(raw, ipath)
        mtype = req(member, "type", str, ipath)
        if mtype in ("function", "custom"):
            check_keys(member, _FUNCTION_KEYS if mtype == "function" else _CUSTOM_KEYS, ipath)
        for key in _MEMBER_OPTIONS:
            if member.get(key) not in (None, False, []):
                raise unsupported(
                    join(ipath, key), f"{key} on a namespace's tool (no upstream here honours it)"
                )
        if mtype == "function":
            d = _function_tool(member, ipath)
        elif mtype == "custom":
            d = custom_tool(member, ipath)
        else:
            tpath = join(ipath, "type")
            raise InvalidRequest(
                f"{tpath}: a namespace holds function and custom tools, got {mtype!r}", param=tpath
            )
        name = d["name"]
        flat = f"{ns}{NAMESPACE_SEPARATOR}{name}"
        d["name"] = flat
        if about:
            d["description"] = f"{about}\n\n{d['description']}" if d["description"] else about
        out._add(d, ipath)
        out.namespaced[flat] = (ns, name)
        if mtype == "custom":
            out.custom.add(flat)


def add_tools(raw: Any, path: str, out: Tools, limits: InputLimits) -> None:
    """A list of Responses tools at ``path`` (``tools``, or an ``additional_tools`` item's
    ``tools``) -> tool definition dicts and MCP servers in ``out``. Raises
    :class:`InvalidRequest` naming the field for what the module doc refuses, and
    :class:`PayloadTooLarge` past ``limits.max_request_tools`` tools in all."""
    tools = check(raw, list, path)
    for i, t in enumerate(tools):
        tpath = join(path, i)
        tool = as_obj(t, tpath)
        ttype = req(tool, "type", str, tpath)
        if ttype == "function":
            check_keys(tool, _FUNCTION_KEYS, tpath)
            out._add(_function_tool(tool, tpath), tpath)
            out.own_keys(tool, tpath)
        elif ttype == "custom":
            check_keys(tool, _CUSTOM_KEYS, tpath)
            d = custom_tool(tool, tpath)
            out._add(d, tpath)
            out.custom.add(d["name"])
            out.own_keys(tool, tpath)
        elif ttype == "namespace":
            _namespace(tool, tpath, out, limits)
        elif ttype == "mcp":
            label = _mcp_tool(tool, tpath)
            if label not in out.servers:
                out.servers.append(label)
        elif ttype in HOSTED_TOOLS:
            if ttype in CLIENT_RUN_TOOLS:
                raise unsupported(
                    join(tpath, "type"),
                    f"the tool {ttype!r} (the client runs it, but its call and output items are not "
                    "relayed between client and upstream; declare it as a function or custom tool)",
                )
            raise unsupported(join(tpath, "type"), f"the hosted tool {ttype!r} (no upstream here carries it)")
        else:
            kpath = join(tpath, "type")
            raise InvalidRequest(f"{kpath}: unknown tool type {ttype!r}", param=kpath)
    if len(out.defs) > limits.max_request_tools:
        raise PayloadTooLarge(
            f"{path}: {len(out.defs)} tools with the namespaces' members; at most {limits.max_request_tools} "
            "are accepted per request (limit server.max_request_tools)",
            param=path,
        )


CHOICE_KEYS = frozenset({"type", "name", "namespace"})
"""Keys of a ``function`` / ``custom`` tool choice (``ToolChoiceFunctionParam``,
``ToolChoiceCustomParam``), and ``namespace`` naming a member of a ``namespace`` tool (as its
calls do)."""


def tool_choice(data: JSONObj) -> JSONObj | None:
    """``tool_choice`` and ``parallel_tool_calls`` -> a tool choice dict (a ``custom`` tool is
    chosen by name as a function is; a member of a namespace by ``namespace`` and ``name``;
    ``allowed_tools`` the names it allows); hosted choices are refused naming the field."""
    parallel = opt(data, "parallel_tool_calls", bool, "")
    raw = data.get("tool_choice")
    if raw is None:
        return {"parallel": parallel} if parallel is not None else None
    if type(raw) is str:
        if raw not in ("auto", "none", "required"):
            raise InvalidRequest(
                f"tool_choice: expected auto, none or required, got {raw!r}", param="tool_choice"
            )
        return {"mode": raw, "parallel": parallel}
    obj = as_obj(raw, "tool_choice")
    ctype = req(obj, "type", str, "tool_choice")
    if ctype == "function" or ctype == "custom":
        check_keys(obj, CHOICE_KEYS, "tool_choice")
        name = req(obj, "name", str, "tool_choice")
        ns = opt(obj, "namespace", str, "tool_choice")
        if ns:
            name = f"{ns}{NAMESPACE_SEPARATOR}{name}"
        return {"mode": "tool", "name": name, "parallel": parallel}
    if ctype == "allowed_tools":  # {"type", "mode", "tools": [{"type": "function" | "custom", "name"}]}
        check_keys(obj, frozenset({"type", "mode", "tools"}), "tool_choice")
        mode = req(obj, "mode", str, "tool_choice")
        if mode not in ("auto", "required"):
            raise InvalidRequest(
                f"tool_choice.mode: expected auto or required, got {mode!r}", param="tool_choice.mode"
            )
        names = []
        for i, raw_tool in enumerate(req(obj, "tools", list, "tool_choice")):
            tpath = f"tool_choice.tools[{i}]"
            entry = as_obj(raw_tool, tpath)
            ttype = req(entry, "type", str, tpath)
            if ttype not in ("function", "custom"):
                raise unsupported(join(tpath, "type"), f"allowed tool type {ttype!r}")
            check_keys(entry, frozenset({"type", "name", "namespace"}), tpath)
            name = req(entry, "name", str, tpath)
            ns = opt(entry, "namespace", str, tpath)
            names.append(f"{ns}{NAMESPACE_SEPARATOR}{name}" if ns else name)
        return {"mode": mode, "allowed": names, "parallel": parallel}
    raise unsupported("tool_choice.type", f"tool_choice type {ctype!r}")
