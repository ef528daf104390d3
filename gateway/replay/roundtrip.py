"""Convert an internal request to every upstream wire API and read it back.

For each target (``openai_chat``, ``anthropic_messages``, ``gemini``): apply the thinking
policy for that target (as the pipeline does), ``build_request``, then read the built body
back as what it means (the OpenAI and Anthropic bodies with the client edges, which parse the
same formats; Gemini with :mod:`gateway.providers.recorded.gemini_read`), map rewritten tool
names and ids back, and compare facet by facet (:mod:`gateway.replay.compare`). A structured
answer an Anthropic body asks for through the forced output tool
(:mod:`gateway.providers.anthropic_output`) is read back as the response format it stands for:
the tool is taken out, its input schema is the format's schema, and the tool choice is the
request's (the forced choice is that format's translation, not a choice of the client's).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from gateway import invariants
from gateway.config import Deployment, GuardPolicy
from gateway.deployments import provenance_of
from gateway.edges import anthropic_messages as edge_anthropic
from gateway.edges import openai_chat as edge_openai
from gateway.errors import GuardViolation, TurnstileError
from gateway.providers import anthropic_messages, gemini, openai_chat
from gateway.providers.naming import NameMap
from gateway.providers.recorded import gemini_read
from gateway.providers.wire import CallContext
from gateway.replay.compare import POLICY, Difference, diff
from gateway.replay.report import Report
from gateway.schema import AssistantMessage, Request, ResponseFormat, ToolCallPart, ToolResultMessage

TARGETS: dict[str, tuple[ModuleType, Deployment]] = {
    "openai_chat": (openai_chat, Deployment(name="rt-openai", api="openai_chat", model="gpt-4o")),
    "anthropic_messages": (
        anthropic_messages,
        Deployment(name="rt-anthropic", api="anthropic_messages", model="claude-sonnet-4-5"),
    ),
    "gemini": (gemini, Deployment(name="rt-gemini", api="gemini", model="gemini-2.5-pro")),
}
_POLICY = GuardPolicy()


@dataclass
class TargetResult:
    """What one conversion did: the differences found (each with its ``limit`` explanation,
    empty for a loss) or ``refused``, the message of the error the target raised."""

    target: str
    differences: list[Difference]
    refused: str | None = None


def _map_back(req: Request, names: NameMap) -> Request:
    msgs = []
    changed = False
    for m in req.messages:
        if isinstance(m, AssistantMessage):
            parts = []
            for p in m.content:
                if isinstance(p, ToolCallPart):
                    cid, name = names.from_upstream_id(p.id), names.from_upstream_name(p.name)
                    if (cid, name) != (p.id, p.name):
                        p = p.model_copy(update={"id": cid, "name": name})
                        changed = True
                parts.append(p)
            m = m.model_copy(update={"content": parts})
        elif isinstance(m, ToolResultMessage):
            cid = names.from_upstream_id(m.tool_call_id)
            if cid != m.tool_call_id:
                m = m.model_copy(update={"tool_call_id": cid})
                changed = True
        msgs.append(m)
    tools = [t.model_copy(update={"name": names.from_upstream_name(t.name)}) for t in req.tools]
    tc = req.tool_choice
    if tc is not None and tc.name:
        tc = tc.model_copy(update={"name": names.from_upstream_name(tc.name)})
    del changed
    return req.model_copy(update={"messages": msgs, "tools": tools, "tool_choice": tc})


def read_back(target: str, body: bytes, names: NameMap, dep: Deployment) -> Request:
    """The request a built ``target`` body means, names and ids mapped back."""
    if target == "openai_chat":
        return _map_back(edge_openai.parse_request(body), names)
    if target == "anthropic_messages":
        return _map_back(edge_anthropic.parse_request(body), names)
    return _map_back(gemini_read.read_request(body, names, dep), names)


def _output_tool_back(back: Request, prepared: Request, ctx: CallContext) -> Request:
    """``back`` with the output tool read as the response format it carries (module docstring)."""
    tool = next((t for t in back.tools if t.name == ctx.output_tool), None)
    if tool is None:
        return back
    schema = tool.parameters
    if ctx.output_wrapped:
        schema = schema.get("properties", {}).get("value", schema)
    fmt = (
        ResponseFormat(type="json_object")
        if prepared.response_format is not None and prepared.response_format.type == "json_object"
        else ResponseFormat(type="json_schema", schema=schema)
    )
    tools = [t for t in back.tools if t.name != ctx.output_tool]
    return back.model_copy(
        update={"tools": tools, "tool_choice": prepared.tool_choice, "response_format": fmt}
    )


def round_trip(request: Request, targets: tuple[str, ...] = tuple(TARGETS)) -> list[TargetResult]:
    """Convert ``request`` (already guarded) to each target and back; see module docstring.

    A :class:`TurnstileError` raised while building (content the target cannot take) is
    reported as ``refused``; any other exception propagates (a crash).
    """
    out: list[TargetResult] = []
    for target in targets:
        wire, dep = TARGETS[target]
        try:
            prepared, _ = invariants.apply_thinking_policy(request, provenance_of(dep), _POLICY)
            up, ctx = wire.build_request(prepared, dep, None)
        except TurnstileError as err:
            out.append(TargetResult(target, [], refused=err.message))
            continue
        try:
            back = read_back(target, up.body, ctx.names, dep)
        except TurnstileError as err:
            out.append(TargetResult(target, [], refused=f"the body built for it is not valid: {err.message}"))
            continue
        if ctx.output_tool is not None:
            back = _output_tool_back(back, prepared, ctx)
        diffs = diff(prepared, back, target)
        if prepared is not request:
            for d in diff(request, prepared, target):
                d.limit = d.limit or POLICY
                diffs.append(d)
        out.append(TargetResult(target, diffs))
    return out


def record_round_trip(
    report: Report, request: Request, source: str, where: str, seen: set[tuple[str, ...]]
) -> None:
    """Convert ``request`` (pairing repaired first, so a finding already reported does not
    stop the conversion) to every target and back, and put each refusal, loss and target-API
    limit in ``report`` once per (target, facet, value) in ``seen``."""
    try:
        guarded = invariants.check_request(request, GuardPolicy(pairing="repair")).request
    except GuardViolation:
        guarded = request
    report.counts["round_trips"] += 1
    for res in round_trip(guarded):
        if res.refused is not None:
            key = (res.target, "refused", res.refused)
            if key not in seen:
                seen.add(key)
                report.finding("target_refused", source, where, None, f"{res.target}: {res.refused}")
            continue
        for d in res.differences:
            key = (res.target, d.facet, d.before)
            if key in seen:
                continue
            seen.add(key)
            if d.limit:
                report.limit(res.target, d.facet, d.limit, {"file": source, "where": where})
            else:
                report.loss(source, where, res.target, d.facet, d.before, d.after)
