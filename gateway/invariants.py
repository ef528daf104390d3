"""Invariant guards: pure checks and repairs applied before and after every upstream call.

This module is the public face; the implementation lives in :mod:`gateway.guards`, split
by concept. Everything here works on :mod:`gateway.schema` objects only: no provider field
and no provider SDK appear above the adapters.

Before the upstream call (over a :class:`~gateway.schema.Request`):

* :func:`check_request` — invariants 2 and 4: every tool call has exactly one result,
  placed right after its assistant message in call order (reject / repair / reorder per
  :class:`~gateway.config.GuardPolicy`); returns a :class:`GuardOutcome`.
* :func:`apply_thinking_policy` — signed thinking goes back only to the model that signed
  it; foreign thinking is stripped, sent as text, or rejected.

After it (over a :class:`~gateway.schema.Response` or its stream):

* :func:`check_truncation` — invariant 3: tool calls whose arguments were not fully
  received (stop reason, output usage against the output budget, JSON completeness) are
  withheld, never forwarded as executable; first, every tool-call id the edge would refuse
  from a client is replaced by a safe one (:mod:`gateway.guards.upstream_ids`).
* :class:`StreamTruncationGuard` — the same for a stream: tool-call events are held until
  the stop reason is known.
* :func:`collect` — a Response from a complete event stream.
"""

from __future__ import annotations

from gateway.guards.collect import collect
from gateway.guards.common import GuardOutcome, Repair, call_location, result_location
from gateway.guards.pairing import MISSING_RESULT_TEXT, check_request
from gateway.guards.thinking import (
    THINKING_CLOSE,
    THINKING_OPEN,
    apply_thinking_policy,
    provenance_matches,
)
from gateway.guards.truncation import (
    BUDGET_REASON,
    INCOMPLETE_REASON,
    LENGTH_REASON,
    StreamTruncationGuard,
    arguments_complete,
    budget_reached,
    budget_reason,
    check_truncation,
    guard_stream,
    is_length_reason,
    judged_stop,
    stop_after_withholding,
    withhold_reason,
)

__all__ = [
    "BUDGET_REASON",
    "INCOMPLETE_REASON",
    "LENGTH_REASON",
    "MISSING_RESULT_TEXT",
    "THINKING_CLOSE",
    "THINKING_OPEN",
    "GuardOutcome",
    "Repair",
    "StreamTruncationGuard",
    "apply_thinking_policy",
    "arguments_complete",
    "budget_reached",
    "budget_reason",
    "call_location",
    "check_request",
    "check_truncation",
    "collect",
    "guard_stream",
    "is_length_reason",
    "judged_stop",
    "provenance_matches",
    "result_location",
    "stop_after_withholding",
    "withhold_reason",
]
