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
  the bound session, and each model request becomes a transcript row ``<request id>.step<n>``
  (request = the step's messages, response = the step's answer), written by the record layer
  with the turn's own row, which holds the client's request and the final answer, with usage
  summed over all steps (the :class:`ToolLoop`'s ``record`` callback; the tool loop layer,
  :mod:`gateway.layers.tool_loop`, gives it).
* **Confirmation.** A chat request has no channel to ask a person, so a ``confirm``-tier call
  becomes an error result naming the exact action and how to pre-approve it.
* **Who may run what.** With ``mcp.clients`` configured, the caller's key (read
  :func:`mcp_servers.clients.caller`, in the access layer) decides which tools are offered
  and may run (:mod:`gateway.mcp_tools`), exactly as
  on ``/mcp``: no matching key is a 401, a server the caller may see none of is a 403 naming
  it, and a call of a tool the caller may not see is answered like an unknown tool.
* **Offered tools.** The attached tools are added before validation
  (:func:`gateway.mcp_tools.offer`, in the guards layer), so a
  ``tool_choice`` naming one of them, or ``required`` with only MCP tools, is valid. A forced
  choice (``required`` or a named tool) applies to the first model request; later ones use
  ``auto``, since the gateway has run the forced call (else the model could never answer).

Streaming lives in :mod:`gateway.tool_loop_stream`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

from gateway import accounting, invariants
from gateway.config import GuardPolicy
from gateway.errors import (
    GuardViolation,
    ToolLoopGuardViolation,
)
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    Response,
    ToolCallPart,
    ToolChoice,
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
)
from gateway.tool_loop_ids import TurnCallIds

log = structlog.get_logger("turnstile.tool_loop")

STRICT = GuardPolicy(pairing="reject", ordering="strict")
"""The policy of the pre-request assertion: nothing is repaired or reordered silently."""

STEP_LIMIT_REASON = "the gateway's tool loop reached its step limit; this call was not run"

Tamper = Callable[[list[ToolResultMessage]], list[ToolResultMessage]]
"""Fault injection for tests: rewrites a step's results before they enter the history."""

StepRecorder = Callable[[int, Request, Response, list[Message]], Awaitable[None]]
"""``(step number, step request, step response, messages appended)``."""


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
    if w.reason == invariants.INCOMPLETE_REASON:
        return f"not executed: the arguments of {w.name!r} were not complete JSON."
    return f"not executed: the arguments of {w.name!r} were refused: {w.reason}."


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
            replaced_call_ids=resp.replaced_call_ids,
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


def assert_paired(request: Request, *, session_bound: bool = False) -> None:
    """The pre-request assertion: strict pairing and ordering over ``request`` (of a
    ``session_bound`` turn, a client's tool result whose call is only in the session's history
    is not an offence: the session layer paired it). Raises :class:`ToolLoopGuardViolation`
    naming every offending call id."""
    try:
        invariants.check_request(request, STRICT, defer_unmatched_results=session_bound)
    except GuardViolation as err:
        log.error("tool_loop_guard_violation", problems=[p.message for p in err.problems])
        raise ToolLoopGuardViolation(err.problems) from None


# ---------------------------------------------------------------------------- the loop


class ToolLoop:
    """The loop over an injected model (``ask``) and tool ``runner`` (see the module doc).

    ``order`` and ``tamper`` exist for the fault-injection tests; production code leaves them.
    ``session_bound``: the turn is bound to a session, whose history the client need not
    resend (:func:`assert_paired`).
    """

    def __init__(
        self,
        *,
        loop_tools: frozenset[str],
        client_tools: frozenset[str],
        runner: CallRunner,
        max_steps: int = 8,
        timeout_s: float = 120.0,
        keepalive_s: float = 15.0,
        order: Ordering = in_call_order,
        tamper: Tamper | None = None,
        record: StepRecorder | None = None,
        session_bound: bool = False,
    ) -> None:
        self.loop_tools = loop_tools
        self.client_tools = client_tools
        self.runner = runner
        self.max_steps = max_steps
        self.timeout_s = timeout_s
        self.keepalive_s = keepalive_s
        self.order = order
        self.tamper = tamper
        self.record = record
        self.session_bound = session_bound
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
        assert_paired(req, session_bound=self.session_bound)
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
