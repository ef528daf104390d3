"""The thinking policy for the deployment being tried, noted on the turn.

Signed reasoning goes back only to the provider and model that signed it
(:func:`gateway.guards.thinking.apply_thinking_policy`, policy ``guards.foreign_thinking``). It
runs on the request that goes upstream: the target layer's for a turn without a session, the
window layer's context rebuilt from the session log for a bound one (whose history may hold
thinking signed by another provider: an earlier turn routed elsewhere, a Gemini or Responses
client's). What it costs the client is said: each repair is kept on the turn (transcript row),
thinking removed (foreign, ``foreign_thinking_stripped``) or turned off for the request
(``thinking_disabled``) is named ``thinking`` in ``x-turnstile-dropped``.
"""

from __future__ import annotations

from dataclasses import replace

import structlog

from gateway import invariants
from gateway.client_names import client_name
from gateway.config import Deployment, GuardPolicy
from gateway.deployments import provenance_of
from gateway.guards.common import Repair
from gateway.schema import Request
from gateway.turn import Turn

log = structlog.get_logger("turnstile.pipeline")

LEADING_THINKING_APIS = frozenset({"anthropic_messages"})
"""Wire APIs that refuse a tool-loop continuation with thinking on whose final assistant turn
does not start with thinking they signed (Anthropic, "Extended thinking" docs:
https://docs.claude.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks)."""

_NAMED = {"thinking_disabled": "thinking", "foreign_thinking_stripped": "thinking"}
"""Repairs that lose something the client sent, by the field they are named as."""


def fit_thinking(turn: Turn, request: Request, dep: Deployment, policy: GuardPolicy) -> Request:
    """``request`` with the thinking policy applied for ``dep`` (see the module docstring);
    the input itself when nothing changed. Raises :class:`gateway.errors.CapabilityError` under
    policy ``reject`` (HTTP 400 naming every foreign part)."""
    prepared, repairs = invariants.apply_thinking_policy(
        request, provenance_of(dep), policy, leading_thinking=dep.api in LEADING_THINKING_APIS
    )
    if not repairs:
        return prepared
    echoed = _echoed(request, dep.api)
    if echoed:
        repairs = [_as_echoed(r, dep.api) if _at(r) in echoed else r for r in repairs]
    turn.add_repairs(repairs)
    for r in repairs:
        field = _NAMED.get(r.code)
        if field is not None:
            turn.note_dropped(
                {"kind": "dropped", "field": field, "values": [], "deployment": dep.name, "reason": r.message}
            )
    log.info("thinking_policy_applied", request_id=turn.request_id, deployment=dep.name, repairs=len(repairs))
    return prepared


_REASONING_ECHO = ("reasoning_content", "reasoning")
"""An OpenAI Chat assistant message's own keys that carry its reasoning text back to an OpenAI
Chat upstream (DeepSeek, vLLM): the unsigned thinking read from them is not lost there."""


def _at(repair: Repair) -> str:
    """The message location of a repair's part location (``messages[1].content[0]`` -> ``messages[1]``)."""
    return (repair.location or "").partition(".content[")[0]


def _as_echoed(repair: Repair, api: str) -> Repair:
    """A thinking part removed from a message whose own reasoning key still carries its text to
    ``api``: nothing is lost, so the repair says so and is not named dropped."""
    if repair.code != "foreign_thinking_stripped":
        return repair
    return replace(
        repair,
        code="thinking_as_own_key",
        message=f"thinking at {repair.location} goes to {api} as the message's own reasoning key, as sent",
    )


def _echoed(request: Request, api: str) -> set[str]:
    """Locations (``src``, else ``messages[i]``) of the messages whose reasoning reaches an
    upstream of ``api`` as their own keys although the thinking part read from it is removed."""
    if api != "openai_chat":
        return set()
    return {
        m.src or f"messages[{i}]"
        for i, m in enumerate(request.messages)
        if m.own is not None and m.own.api == api and any(k in m.own.keys for k in _REASONING_ECHO)
    }


def fit_claude_thinking(turn: Turn, request: Request, dep: Deployment) -> Request:
    """``request`` made acceptable to an Anthropic deployment ``dep`` when the gateway turns its
    thinking into Claude's extended thinking (a client of another dialect: ``reasoning_effort``,
    ``thinkingConfig``, ``reasoning.effort``; an Anthropic client's own ``thinking`` goes as sent).
    Claude's rules (Anthropic "Extended thinking" docs, feature compatibility: thinking is not
    compatible with ``temperature`` or ``top_k`` changes nor forced tool use; ``top_p`` only from
    0.95 to 1; ``budget_tokens`` at least 1024 and below ``max_tokens``):

    * forced tool use (tool choice ``required`` or a named tool): thinking off for the request;
    * ``temperature`` other than 1, ``top_p`` below 0.95, ``top_k``: not sent;
    * the client's output limit (``max_output_tokens``: tokens of thinking and answer, as in
      OpenAI's ``max_completion_tokens``) is kept, never raised: the thinking budget is at most
      half of it (never below 1024); at a limit of 1024 tokens or less thinking is off.

    Each is named in ``x-turnstile-dropped`` (``thinking``, ``temperature``, ... as the client's
    dialect names them: a Gemini client's ``generationConfig.temperature``). Call it before
    the deployment's own output limit is filled in. The input itself when nothing applies."""
    from gateway.providers.anthropic_messages import MIN_THINKING_BUDGET, thinking_budget

    cfg = request.thinking
    if cfg is None or not cfg.enabled or not dep.supports_thinking or _own_claude_thinking(request):
        return request
    update: dict[str, object] = {}
    choice = request.tool_choice
    limit = request.max_output_tokens
    off = None
    if choice is not None and request.tools and choice.mode in ("required", "tool"):
        off = "Claude takes no forced tool use with thinking on"
    elif limit is not None and limit <= MIN_THINKING_BUDGET:
        off = f"an output limit of {limit} tokens leaves no room for Claude's smallest thinking budget (1024)"
    if off is not None:
        update["thinking"] = cfg.model_copy(update={"enabled": False})
        _note(turn, dep, "thinking", [], f"thinking off for this request: {off}")
    else:
        if limit is not None and thinking_budget(request) >= limit:
            budget = max(MIN_THINKING_BUDGET, limit // 2)
            update["thinking"] = cfg.model_copy(update={"budget_tokens": budget, "effort": None})
        for field, value, ok in (
            ("temperature", request.temperature, request.temperature in (None, 1, 1.0)),
            ("top_p", request.top_p, request.top_p is None or request.top_p >= 0.95),
            ("top_k", request.top_k, request.top_k is None),
        ):
            if not ok:
                update[field] = None
                name = client_name(turn.dialect, field)
                _note(turn, dep, name, [value], f"Claude takes no {name} {value} with thinking on")
    return request.model_copy(update=update) if update else request


def note_unforced_output(turn: Turn, request: Request, dep: Deployment) -> None:
    """Name the client's structured-output field (``response_format``, ``output_config.format``,
    ...) in ``x-turnstile-dropped`` when an Anthropic deployment ``dep`` gets it as an output tool
    it cannot force because thinking is on (:func:`gateway.providers.anthropic_output.unforced_output`:
    a model without the native slot): the answer may come as prose."""
    from gateway.providers.anthropic_output import unforced_output

    if unforced_output(request, dep):
        name = client_name(turn.dialect, "response_format")
        _note(
            turn,
            dep,
            name,
            [],
            f"{dep.model} has no native structured output and takes no forced tool use with thinking on: "
            "the output tool is offered, not forced (the answer may be prose); turn thinking off to force it",
        )


def fit_openai_reasoning(turn: Turn, request: Request, dep: Deployment) -> Request:
    """``request`` without its thinking when ``dep`` (an OpenAI Chat or Responses deployment)
    serves a model without reasoning (``supports_thinking: false``, or litellm's table knows the
    model as one without: :func:`gateway.providers.openai_responses_common.is_reasoning_model`;
    OpenAI refuses ``reasoning_effort`` / ``reasoning.effort`` for it, "Unsupported parameter:
    'reasoning.effort' is not supported with this model."). Reasoning the client asked for is
    then named in ``x-turnstile-dropped`` by the client's name (``reasoning_effort``,
    ``reasoning.effort``, ``thinking``, ``generationConfig.thinkingConfig``), the same for both
    OpenAI APIs; thinking off asks for nothing there and is not named. The input itself when
    the model reasons (both builders send the effort: :func:`gateway.providers.wire_common.openai_effort`)."""
    from gateway.providers.openai_responses_common import is_reasoning_model

    cfg = request.thinking
    if cfg is None or is_reasoning_model(dep):
        return request
    if cfg.enabled:
        name = client_name(turn.dialect, "thinking")
        _note(turn, dep, name, [], f"{dep.model} has no reasoning (deployment {dep.name})")
    return request.model_copy(update={"thinking": None})


def _own_claude_thinking(request: Request) -> bool:
    """Whether the request is an Anthropic client's with its own ``thinking`` or effort (sent as
    it is: :func:`gateway.providers.anthropic_messages.merge_native`)."""
    native = request.native
    return (
        native is not None
        and native.api == "anthropic_messages"
        and ("thinking" in native.fields or "output_config" in native.fields)
    )


def _note(turn: Turn, dep: Deployment, field: str, values: list[object], reason: str) -> None:
    turn.note_dropped(
        {"kind": "dropped", "field": field, "values": values, "deployment": dep.name, "reason": reason}
    )
    log.info("fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=[field])
