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

import structlog

from gateway import invariants
from gateway.config import Deployment, GuardPolicy
from gateway.deployments import provenance_of
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
    turn.add_repairs(repairs)
    for r in repairs:
        field = _NAMED.get(r.code)
        if field is not None:
            turn.note_dropped(
                {"kind": "dropped", "field": field, "values": [], "deployment": dep.name, "reason": r.message}
            )
    log.info("thinking_policy_applied", request_id=turn.request_id, deployment=dep.name, repairs=len(repairs))
    return prepared
