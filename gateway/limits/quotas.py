"""Deployment quotas as routing capacity: a deployment's ``quota`` (the provider's own
requests/min, tokens/min and concurrent calls for the account behind it) is a limit scope
``deployment:<name>`` on the same counters as keys and teams (in process, or Redis: one quota
over every instance).

The route layer holds each attempt on a deployment with a quota before it is sent
(:func:`hold`: one request counted, one slot taken; nothing reserved) and settles it with the
call's tokens when it ends (:func:`settle`; a call that failed is released: its request stays
counted, as the provider counted it). A deployment whose quota has no room is skipped — the
turn goes on to the alias's next deployment, never to the provider's 429 — and when no
deployment could be tried for it the turn is refused with the quota's own 429 (``retry-after``
and ``x-ratelimit-*``).

Tokens/min is counted after the answer (as for keys): a quota can be passed by the tokens of
the calls in flight when it filled. Counting the input before the call would need the
tokenizer on every attempt; the provider's own count is the one that matters anyway.
"""

from __future__ import annotations

from gateway.config import Deployment
from gateway.limits.backend import Limits
from gateway.limits.decisions import Reservation
from gateway.limits.model import RateLimit, Scope
from gateway.schema import Usage


def quota_scope(dep: Deployment) -> Scope | None:
    """The limit scope of ``dep``'s quota, or None when it has none."""
    q = dep.quota
    if q is None or (q.rpm is None and q.tpm is None and q.concurrent is None):
        return None
    return Scope("deployment", dep.name, (), RateLimit(q.rpm, q.tpm, q.concurrent))


async def hold(limits: Limits, scope: Scope) -> Reservation:
    """One call on the quota ``scope``. Raises :class:`gateway.errors.RateLimitExceeded` when
    it has no room, :class:`gateway.errors.LimitsUnavailable` (Redis unreachable, fail closed)."""
    return await limits.admit([scope], 0.0)


def tokens(usage: Usage | None) -> int:
    """Input + output tokens of ``usage`` (0 for none), as tokens/min counts them."""
    if usage is None:
        return 0
    return (
        (usage.input_tokens or 0)
        + (usage.cache_read_tokens or 0)
        + (usage.cache_write_tokens or 0)
        + (usage.output_tokens or 0)
    )


async def settle(limits: Limits, held: Reservation, usage: Usage | None) -> None:
    """The call ended: its tokens counted, its slot freed; ``usage`` None: it failed
    (released)."""
    if usage is None:
        await limits.release(held)
    else:
        await limits.settle(held, 0.0, tokens(usage))
