"""Structured output on the Anthropic Messages API: the request's ``response_format`` in its
native slot, or a forced output tool where the model has none; and the tool's call mapped back
to the plain JSON text the client asked for.

Reference: https://platform.claude.com/docs/en/build-with-claude/structured-outputs (GA:
``output_config: {format: {type: "json_schema", schema}}``, no beta header) and
https://docs.anthropic.com/en/docs/build-with-claude/tool-use (``tool_choice``).

* ``json_schema`` on a model with the slot (:func:`gateway.providers.anthropic_schema.has_native_output`,
  or ``deployment.structured_output: native``): ``output_config.format`` with the schema
  normalised by :func:`gateway.providers.anthropic_schema.to_anthropic_schema`. Claude answers
  with one text block holding the JSON.
* ``json_schema`` on an older model (or ``structured_output: tool``, or a schema the native
  slot cannot state): one extra tool, :data:`OUTPUT_TOOL` (renamed when the client has a tool of
  that name), whose ``input_schema`` is the client's schema as sent (tool schemas take full JSON
  Schema); a schema whose root is not an object is wrapped as ``{value: <schema>}``.
  ``tool_choice`` forces it (``{"type": "tool"}``) when the client offers no tools or asked for
  ``none``; with client tools and ``auto``/``required`` it is ``any`` (a client tool or the
  answer), and a client's named choice is kept. With extended thinking on, Anthropic refuses a
  forced choice ("Thinking may not be enabled when tool_choice forces tool use"), so the choice
  is ``auto`` and the tool's description asks for it.
* A client's strict tool (``strict: true``) on a model with the slot: ``strict: true`` on the
  tool with its schema normalised the same way (:func:`strict_input_schema`); elsewhere the tool
  goes without it.
* The format's ``description`` (no slot in either form) becomes the schema's root
  ``description`` when the schema has none (:func:`gateway.providers.wire_common.described_schema`).
* ``json_object`` (any JSON object, no schema): Anthropic has no native form of it; it is
  emulated by the same output tool with ``input_schema: {"type": "object"}`` on every model
  (the tool's input is always a JSON object, which is exactly what ``json_object`` promises).

Mapping back (whole answers here, streams in :mod:`gateway.providers.anthropic_stream`): the
output tool's call becomes a text part holding its input as compact JSON (the ``value`` of a
wrapped schema), and the stop reason ``tool_use`` becomes ``stop`` when it was the only call;
the client never sees the tool.
"""

from __future__ import annotations

from typing import Any

from gateway.config import Deployment
from gateway.providers import wire_common
from gateway.providers.anthropic_schema import SchemaNotExpressible, has_native_output, to_anthropic_schema
from gateway.providers.naming import NameMap
from gateway.providers.wire import CallContext
from gateway.schema import Request

__all__ = ["OUTPUT_TOOL", "add_output", "map_back_parts", "output_text", "unforced_output"]

OUTPUT_TOOL = "json_output"
"""Name of the forced tool that carries a structured answer."""

_DESCRIPTION = (
    "Give your final answer by calling this tool: its input is the answer, as JSON matching the "
    "requested schema. Do not answer in prose."
)


def _native(deployment: Deployment) -> bool:
    mode = deployment.structured_output
    return mode == "native" if mode is not None else has_native_output(deployment.model)


def strict_input_schema(parameters: dict[str, Any], deployment: Deployment) -> dict[str, Any] | None:
    """The ``input_schema`` of a client's strict tool (OpenAI ``strict: true``, Anthropic
    ``strict: true``: strict tool use, part of structured outputs on the same models) on
    ``deployment``: ``parameters`` normalised as ``output_config.format`` schemas are
    (:func:`gateway.providers.anthropic_schema.to_anthropic_schema`), sent with ``strict: true``;
    None when the model has no structured outputs or the schema cannot be stated there (the tool
    then goes without ``strict``, and the target layer names ``strict`` as dropped). Never raises."""
    if not _native(deployment):
        return None
    try:
        return to_anthropic_schema(parameters)
    except SchemaNotExpressible:
        return None


def _tool_name(tools: list[dict[str, Any]], names: NameMap) -> str:
    """:data:`OUTPUT_TOOL`, or ``json_output_<n>`` when a client tool has that name upstream
    or a client tool name maps back from it."""
    taken = {t.get("name") for t in tools}
    name, n = OUTPUT_TOOL, 1
    while name in taken or names.from_upstream_name(name) != name:
        n += 1
        name = f"{OUTPUT_TOOL}_{n}"
    return name


def unforced_output(request: Request, deployment: Deployment) -> bool:
    """Whether :func:`add_output` will offer the output tool without forcing it: the format needs
    the tool (``json_object``, a model without the native slot, a schema the slot cannot state)
    and thinking is on (Anthropic refuses a forced choice with it), so Claude may answer in prose.
    The target layer names the format dropped then. Never raises."""
    fmt = request.response_format
    thinking = request.thinking
    if fmt is None or fmt.type == "text" or thinking is None or not thinking.enabled:
        return False
    if not deployment.supports_thinking:
        return False
    schema = wire_common.described_schema(fmt) if fmt.type == "json_schema" else None
    if schema is None or not _native(deployment):
        return True
    try:
        to_anthropic_schema(schema)
    except SchemaNotExpressible:
        return True
    return False


def add_output(body: dict[str, Any], request: Request, deployment: Deployment, ctx: CallContext) -> None:
    """Put ``request.response_format`` into the Messages ``body`` (a dict being built by
    :func:`gateway.providers.anthropic_messages.to_wire_body`, ``tools``/``tool_choice``/
    ``thinking`` already set), as the module docstring says; records the output tool's name in
    ``ctx`` when one is used. ``text`` (or no format) changes nothing. Never raises."""
    fmt = request.response_format
    if fmt is None or fmt.type == "text":
        return
    schema = wire_common.described_schema(fmt) if fmt.type == "json_schema" else None
    if schema is not None and _native(deployment):
        try:
            native = to_anthropic_schema(schema)
        except SchemaNotExpressible:
            native = None  # the forced tool takes any JSON Schema
        if native is not None:
            cfg = body.setdefault("output_config", {})
            cfg["format"] = {"type": "json_schema", "schema": native}
            return
    if schema is None:
        input_schema: dict[str, Any] = {"type": "object"}
    elif schema.get("type") == "object":
        input_schema = schema
    else:
        input_schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
        ctx.output_wrapped = True
    tools = body.setdefault("tools", [])
    name = _tool_name(tools, ctx.names)
    ctx.output_tool = name
    tools.append({"name": name, "description": _DESCRIPTION, "input_schema": input_schema})
    body["tool_choice"] = _output_choice(body, request, name)


def _output_choice(body: dict[str, Any], request: Request, name: str) -> dict[str, Any]:
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        return {"type": "auto"}  # a forced choice is refused with thinking on
    current = body.get("tool_choice")
    client = request.tool_choice
    parallel = client.parallel if client is not None else None
    if request.tools and (client is None or client.mode in ("auto", "required")):
        out: dict[str, Any] = {"type": "any"}
    elif request.tools and client is not None and client.mode == "tool" and current is not None:
        return dict(current)
    else:
        out = {"type": "tool", "name": name}
    if parallel is False:
        out["disable_parallel_tool_use"] = True
    return out


def output_text(arguments: Any, wrapped: bool) -> str:
    """The JSON text a call of the output tool stands for: its ``arguments`` (a dict) as
    compact JSON, or their ``value`` when the schema was wrapped. Never raises."""
    value = arguments.get("value") if wrapped and isinstance(arguments, dict) else arguments
    return wire_common.dumps_arguments(value)


def map_back_parts(parts: list[dict[str, Any]], ctx: CallContext, stop_reason: Any) -> Any:
    """Replace, in ``parts`` (part dicts of a whole answer), each call of ``ctx.output_tool``
    with a text part of its JSON; returns the raw stop reason to map (``end_turn`` instead of
    ``tool_use`` when no other tool call is left). ``parts`` is changed in place."""
    name = ctx.output_tool
    if name is None:
        return stop_reason
    calls = 0
    for i, part in enumerate(parts):
        if part.get("type") == "tool_call":
            if part.get("name") == name:
                parts[i] = {"type": "text", "text": output_text(part.get("arguments"), ctx.output_wrapped)}
            else:
                calls += 1
    if stop_reason == "tool_use" and calls == 0:
        return "end_turn"
    return stop_reason
