"""The server-side tool loop: the gateway runs registered MCP tools itself for a chat turn.

A request names MCP servers (``Request.mcp_servers``, from a dialect's ``{"type": "mcp",
"server": "<id>"}`` tool entry) or its model alias attaches them (``ModelAlias.mcp_servers``).
Their available tools are offered to the model under their exposed names
(``<server>__<tool>``), and the loop runs

    model -> tool calls -> execution through the MCP registry (trust tiers) -> results -> model

until the model gives a final answer or ``tool_loop.max_steps`` model requests were made.

Decisions (each one a rule, documented here):

* **Step limit.** The last allowed model request is sent with tool choice ``none`` (asking for a
  final answer). If the model calls the loop's tools anyway, those calls are withheld
  (``withheld_tool_calls``, reason :data:`STEP_LIMIT_REASON`), never run.
* **Client tools.** When a message calls a tool the client itself defined, the loop stops and
  returns that message as the answer; the client runs its tools (no call of that message is
  run by the gateway).
* **Truncated calls** (invariant 3). A call withheld by the truncation guard (the upstream
  stopped for length or used up its output budget, or the arguments are not complete JSON) is
  never executed: it is put
  back into the assistant message as a call with empty arguments (``{}``: the cut-off raw text
  is not valid JSON for any upstream; it stays in that step's transcript row under
  ``withheld``) and gets an error result saying why; then the model is asked again.
* **Unknown tools** get an error result naming the tools the turn has.
* **Ids unique per turn.** A call whose id the turn already used (an upstream reusing an id in
  a later step) is renamed ``<id>_s<step>`` before it enters the history
  (:mod:`gateway.tool_loop_ids`: the rule and where each id is seen).
* **Pairing** (invariants 2 and 4). Every call gets exactly one result
  (:mod:`gateway.tool_exec`), placed in call order. Before every model request the pairing
  guard runs with the strict policy as an assertion: a violation is the gateway's bug and
  raises :class:`gateway.errors.ToolLoopGuardViolation` (HTTP 500) naming the ids, before
  anything goes upstream.
* **Recording.** Each step's assistant message and its results (call order) are appended to
  the bound session, and each model request is a transcript row ``<request id>.step<n>``
  (request = the step's messages, response = the step's answer). The turn's own row holds the
  client's request and the final answer, with usage summed over all steps.
* **Confirmation.** A chat request has no channel to ask a person, so a ``confirm``-tier call
  becomes an error result naming the exact action and how to pre-approve it.
* **Who may run what.** With ``mcp.clients`` configured, the caller's key (read by the server,
  :func:`mcp_servers.clients.caller`) decides which tools are offered and may run, exactly as
  on ``/mcp``: no matching key is a 401, a server the caller may see none of is a 403 naming
  it, and a call of a tool the caller may not see is answered like an unknown tool.
* **Offered tools.** The attached tools are added before validation (:func:`offer`), so a
  ``tool_choice`` naming one of them, or ``required`` with only MCP tools, is valid. A forced
  choice (``required`` or a named tool) applies to the first model request; later ones use
  ``auto``, since the gateway has run the forced call (else the model could never answer).

Streaming lives in :mod:`gateway.tool_loop_stream`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import structlog

from gateway import accounting, invariants
from gateway.config import GuardPolicy
from gateway.errors import (
    AuthenticationRequired,
    GuardViolation,
    InvalidRequest,
    PermissionDenied,
    ToolLoopGuardViolation,
)
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    Response,
    ToolCallPart,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    WithheldToolCall,
)
from gateway.tool_exec import (
    CallRunner,
    OnDone,
    Ordering,
    error_result,
    execute_calls,
    in_call_order,
    mcp_runner,
)
from gateway.tool_loop_ids import TurnCallIds
from mcp_servers.clients import EVERYTHING, Visibility

if TYPE_CHECKING:
    from gateway.config import Deployment
    from gateway.pipeline import Pipeline, TurnContext

log = structlog.get_logger("turnstile.tool_loop")

STRICT = GuardPolicy(pairing="reject", ordering="strict")
"""The policy of the pre-request assertion: nothing is repaired or reordered silently."""

STEP_LIMIT_REASON = "the gateway's tool loop reached its step limit; this call was not run"

Tamper = Callable[[list[ToolResultMessage]], list[ToolResultMessage]]
"""Fault injection for tests: rewrites a step's results before they enter the history."""

StepRecorder = Callable[[int, Request, Response, list[Message]], Awaitable[None]]
"""``(step number, step request, step response, messages appended)``."""


# ---------------------------------------------------------------------------- tools of a turn


_ALIAS_SERVERS: dict[int, tuple[Any, dict[str, list[str]]]] = {}


def _alias_servers(config: Any) -> dict[str, list[str]]:
    """Alias name -> its MCP server ids (aliases without servers left out), made once per
    configuration object (kept referenced, so its id cannot be reused while cached)."""
    hit = _ALIAS_SERVERS.get(id(config))
    if hit is None or hit[0] is not config:
        if len(_ALIAS_SERVERS) > 64:  # bounded: one config per gateway; tests make many
            _ALIAS_SERVERS.clear()
        by_alias: dict[str, list[str]] = {}
        for alias in config.models:
            if alias.mcp_servers:
                by_alias.setdefault(alias.name, []).extend(alias.mcp_servers)
        hit = _ALIAS_SERVERS[id(config)] = (config, by_alias)
    return hit[1]


def servers_for(gw: Any, request: Request) -> list[str]:
    """MCP server ids of a turn: those the request names, then its alias's, without repeats."""
    extra = _alias_servers(gw.config).get(request.model)
    if not extra:
        return list(request.mcp_servers)
    ids = list(request.mcp_servers)
    ids += [s for s in dict.fromkeys(extra) if s not in ids]
    return ids


def active(gw: Any, request: Request) -> bool:
    """Whether the turn runs the server-side tool loop (it has MCP servers attached)."""
    return bool(servers_for(gw, request))


def attach_tools(
    gw: Any, request: Request, visibility: Visibility = EVERYTHING
) -> tuple[Request, frozenset[str]]:
    """``request`` with the available tools of its MCP servers that ``visibility`` (the caller's
    ``mcp.clients`` entry) may see added (exposed names), and the set of those names.

    Raises :class:`AuthenticationRequired` (401) when clients are configured and the caller's
    key matches none; :class:`PermissionDenied` (403, naming the server) for a server none of
    whose known tools the caller may see; :class:`InvalidRequest` (``param="tools"``) for a
    server that is not registered (the message lists the registered servers the caller may
    see), when the MCP registry is not running, or when an exposed name clashes with a tool the
    client defined."""
    ids = servers_for(gw, request)
    runtime = getattr(gw, "mcp", None)
    if runtime is None:
        raise InvalidRequest(
            "tools: MCP servers were named, and this gateway's MCP registry is not running", param="tools"
        )
    if not visibility.authenticated:
        raise AuthenticationRequired(
            f"this request attaches MCP servers ({', '.join(ids)}), and this gateway shows MCP tools only "
            "to its configured clients: send a client key (Authorization: Bearer <key>, x-api-key or "
            "x-goog-api-key)",
            param="tools",
        )
    registry = runtime.registry
    known = registry.tools(include_unavailable=True)
    defs: list[ToolDefinition] = []
    for sid in ids:
        if registry.spec(sid) is None:
            seen = sorted({t.server for t in known if visibility.allows(t.exposed)})
            if visibility.client is None:
                seen = registry.server_ids()
            raise InvalidRequest(
                f"tools: MCP server {sid!r} is not registered (registered: {', '.join(seen) or 'none'})",
                param="tools",
            )
        mine = [t for t in known if t.server == sid]
        if mine and not any(visibility.allows(t.exposed) for t in mine):
            raise PermissionDenied(
                f"tools: MCP server {sid!r} is not available to client {visibility.client!r}: its key may "
                "see none of that server's tools",
                param="tools",
            )
        for t in mine:
            if t.available and visibility.allows(t.exposed):
                defs.append(
                    ToolDefinition(
                        name=t.exposed, description=t.tool.description, parameters=dict(t.tool.input_schema)
                    )
                )
    client = {t.name for t in request.tools}
    clash = sorted(client & {d.name for d in defs})
    if clash:
        raise InvalidRequest(
            f"tools: {', '.join(clash)} is both a client tool and an MCP tool of this turn", param="tools"
        )
    names = frozenset(d.name for d in defs)
    return request.model_copy(update={"tools": [*request.tools, *defs]}), names


def offer(gw: Any, ctx: TurnContext) -> Request:
    """The turn's request as the guards and the model see it: for a turn with MCP servers
    attached, ``ctx.request`` with their tools added (:func:`attach_tools`, for the caller's
    ``ctx.mcp_visibility``) and ``ctx.loop_tools`` set to their names, so that validation (a
    ``tool_choice`` naming an MCP tool) counts them as offered; any other turn's request as it
    is (``ctx.loop_tools`` stays None). Raises as :func:`attach_tools`."""
    request = ctx.request
    if not request.mcp_servers and request.model not in _alias_servers(gw.config):
        return request
    prepared, ctx.loop_tools = attach_tools(gw, request, ctx.mcp_visibility)
    return prepared


# ---------------------------------------------------------------------------- one step


@dataclass
class Step:
    """What to do after one model answer: ``final`` (return ``response``) or ``tools`` (run
    ``calls``; ``blocked`` maps call ids that must not run to their error text)."""

    kind: Literal["final", "tools"]
    response: Response
    assistant: AssistantMessage
    calls: list[ToolCallPart] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)


def _blocked_text(w: WithheldToolCall) -> str:
    if w.reason.startswith(invariants.BUDGET_REASON):
        return (
            f"not executed: the model used up its output token limit while writing the arguments of "
            f"{w.name!r} ({w.reason[len(invariants.BUDGET_REASON) :].strip(' ()')}), so they may be cut "
            "short even though they parse. Call the tool again with complete arguments (shorter if "
            "needed)."
        )
    if invariants.is_length_reason(w.reason):
        return (
            f"not executed: the model stopped for length (its output token limit) while writing the "
            f"arguments of {w.name!r}, so they are incomplete. Call the tool again with complete arguments."
        )
    return f"not executed: the arguments of {w.name!r} were not complete JSON ({w.reason})."


def plan_step(
    resp: Response, loop_tools: frozenset[str], client_tools: frozenset[str], *, last: bool
) -> Step:
    """Decide what follows ``resp`` (see the module docstring for the rules)."""
    calls = resp.message.tool_calls
    withheld = resp.withheld_tool_calls
    if any(c.name in client_tools for c in calls) or any(w.name in client_tools for w in withheld):
        return Step("final", resp, resp.message)
    if not calls and not withheld:
        return Step("final", resp, resp.message)
    if last:
        kept = [p for p in resp.message.content if not (isinstance(p, ToolCallPart) and p.name in loop_tools)]
        limited = [
            WithheldToolCall(id=c.id, name=c.name, raw_arguments=c.raw_arguments, reason=STEP_LIMIT_REASON)
            for c in calls
            if c.name in loop_tools
        ]
        n_kept = sum(isinstance(p, ToolCallPart) for p in kept)
        all_withheld = [*withheld, *limited]
        final = Response(
            id=resp.id,
            model=resp.model,
            message=AssistantMessage(content=kept),
            stop_reason=invariants.stop_after_withholding(resp.stop_reason, n_kept, len(all_withheld)),
            usage=resp.usage,
            withheld_tool_calls=all_withheld,
        )
        return Step("final", final, final.message)
    blocked: dict[str, str] = {}
    for c in calls:
        if c.name not in loop_tools:
            blocked[c.id] = f"unknown tool {c.name!r}: this turn's tools are {', '.join(sorted(loop_tools))}"
    readded = [ToolCallPart(id=w.id, name=w.name, arguments={}, raw_arguments="{}") for w in withheld]
    for w in withheld:
        blocked[w.id] = _blocked_text(w)
    assistant = AssistantMessage(content=[*resp.message.content, *readded])
    return Step("tools", resp, assistant, calls=assistant.tool_calls, blocked=blocked)


def assert_paired(request: Request) -> None:
    """The pre-request assertion: strict pairing and ordering over ``request``. Raises
    :class:`ToolLoopGuardViolation` naming every offending call id."""
    try:
        invariants.check_request(request, STRICT)
    except GuardViolation as err:
        log.error("tool_loop_guard_violation", problems=[p.message for p in err.problems])
        raise ToolLoopGuardViolation(err.problems) from None


# ---------------------------------------------------------------------------- the loop


class ToolLoop:
    """The loop over an injected model (``ask``) and tool ``runner`` (see the module doc).

    ``order`` and ``tamper`` exist for the fault-injection tests; production code leaves them.
    """

    def __init__(
        self,
        *,
        loop_tools: frozenset[str],
        client_tools: frozenset[str],
        runner: CallRunner,
        max_steps: int = 8,
        timeout_s: float = 120.0,
        order: Ordering = in_call_order,
        tamper: Tamper | None = None,
        record: StepRecorder | None = None,
    ) -> None:
        self.loop_tools = loop_tools
        self.client_tools = client_tools
        self.runner = runner
        self.max_steps = max_steps
        self.timeout_s = timeout_s
        self.order = order
        self.tamper = tamper
        self.record = record
        self.usage = Usage()

    def step_request(self, request: Request, messages: Sequence[Message], step: int) -> Request:
        """The request of model step ``step`` (1-based) over ``messages``; the last allowed step
        asks for a final answer (tool choice ``none``). Asserts pairing before returning."""
        update: dict[str, Any] = {"messages": list(messages)}
        choice = request.tool_choice
        if step == self.max_steps and step > 1:
            update["tool_choice"] = ToolChoice(mode="none")
        elif step > 1 and choice is not None and choice.mode in ("required", "tool"):
            update["tool_choice"] = choice.model_copy(update={"mode": "auto", "name": None})
        req = request.model_copy(update=update)
        assert_paired(req)
        return req

    def plan(self, resp: Response, step: int) -> Step:
        """:func:`plan_step` for step ``step``; adds the step's usage to the running total."""
        self.usage = accounting.merge_usage(self.usage, resp.usage)
        return plan_step(resp, self.loop_tools, self.client_tools, last=step >= self.max_steps)

    async def run_tools(self, step: Step, on_done: OnDone | None = None) -> list[ToolResultMessage]:
        """Results of every call of ``step``, one each, in call order (blocked calls get their
        error result without running)."""

        async def run(call: ToolCallPart) -> ToolResultMessage:
            if call.id in step.blocked:
                return error_result(call, step.blocked[call.id])
            return await self.runner(call)

        results = await execute_calls(
            step.calls, run, timeout_s=self.timeout_s, order=self.order, on_done=on_done
        )
        return self.tamper(results) if self.tamper is not None else results

    def final(self, step: Step) -> Response:
        """The answer returned to the client: the last step's, with usage summed over steps."""
        return step.response.model_copy(update={"usage": self.usage})

    async def run(self, request: Request, ask: Callable[[Request, int], Awaitable[Response]]) -> Response:
        """Run the loop without streaming; ``ask(step_request, step)`` calls the model."""
        messages: list[Message] = list(request.messages)
        ids = TurnCallIds(messages)
        for n in range(1, self.max_steps + 1):
            step_req = self.step_request(request, messages, n)
            resp = await ask(step_req, n)
            step = self.plan(ids.claim_response(resp, n), n)
            if step.kind == "final":
                if self.record is not None:
                    await self.record(n, step_req, step.response, [])
                return self.final(step)
            results = await self.run_tools(step)
            appended: list[Message] = [step.assistant, *results]
            messages += appended
            log.info(
                "tool_loop_step",
                step=n,
                calls=[c.name for c in step.calls],
                errors=sum(r.is_error for r in results),
            )
            if self.record is not None:
                await self.record(n, step_req, resp, appended)
        raise AssertionError("unreachable: the last step is always final")  # pragma: no cover


# ---------------------------------------------------------------------------- pipeline glue


def build(
    pipeline: Pipeline, ctx: TurnContext, request: Request, **overrides: Any
) -> tuple[ToolLoop, Request]:
    """The :class:`ToolLoop` of a turn over the gateway's MCP registry, and its request.
    ``request`` already carries the MCP tools :func:`offer` attached (names in
    ``ctx.loop_tools``); calls run with the caller's ``ctx.mcp_visibility``. ``overrides``
    replace :class:`ToolLoop` arguments (tests)."""
    gw = pipeline.gw
    prepared = request
    if ctx.loop_tools is None:  # not offered yet (a caller that skipped the guards)
        prepared, ctx.loop_tools = attach_tools(gw, request, ctx.mcp_visibility)
    names = ctx.loop_tools
    cfg = gw.config.tool_loop
    kwargs: dict[str, Any] = {
        "loop_tools": names,
        "client_tools": frozenset(t.name for t in prepared.tools) - names,
        "runner": mcp_runner(gw.mcp.endpoint, visibility=ctx.mcp_visibility),
        "max_steps": cfg.max_steps,
        "timeout_s": cfg.call_timeout_s,
        "record": recorder(pipeline, ctx),
        **overrides,
    }
    return ToolLoop(**kwargs), prepared


def recorder(pipeline: Pipeline, ctx: TurnContext) -> StepRecorder:
    """Appends a step to the bound session (its messages) and to the transcript (a row)."""
    gw = pipeline.gw

    async def record(n: int, step_req: Request, resp: Response, appended: list[Message]) -> None:
        if appended and ctx.session_id and gw.sessions is not None:
            from gateway.sessions.turns import record_messages

            await record_messages(gw, ctx, appended)  # under the turn's own leaf
        if gw.transcript is None:
            return
        from gateway.transcript import TurnRecord

        dep: Deployment | None = ctx.deployment
        await gw.transcript.append(
            TurnRecord(
                request_id=f"{ctx.request_id}.step{n}",
                ts=time.time(),
                client_dialect=ctx.dialect,
                requested_model=ctx.request.model,
                stream=step_req.stream,
                status=200,
                deployment=dep.name if dep else None,
                api=dep.api if dep else None,
                stop_reason=resp.stop_reason,
                usage=resp.usage.model_dump(),
                cost_usd=resp.usage.cost_usd,
                withheld=[w.model_dump() for w in resp.withheld_tool_calls],
                request=step_req.model_dump(mode="json", exclude_none=True),
                response=resp.model_dump(mode="json"),
            )
        )

    return record


async def complete(
    pipeline: Pipeline, ctx: TurnContext, request: Request, candidates: list[Deployment]
) -> Response:
    """A non-streaming turn through the loop: every step goes through the pipeline's fallback,
    session-context and truncation path (``Pipeline._complete_with_fallback``)."""
    loop, prepared = build(pipeline, ctx, request)

    async def ask(step_req: Request, n: int) -> Response:
        return await pipeline._complete_with_fallback(ctx, step_req, candidates)

    return await loop.run(prepared, ask)
