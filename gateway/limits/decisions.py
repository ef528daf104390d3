"""What an admission decides: the reservation a granted turn holds, the soft-budget alerts it
raised, the refusals (as :mod:`gateway.errors` exceptions) and the rate-limit headers.

Headers, as the SDKs and clients know them (``headers`` on a :class:`Reservation` and on a
:class:`gateway.errors.LimitExceeded`):

* OpenAI: ``x-ratelimit-limit-requests``, ``x-ratelimit-remaining-requests``,
  ``x-ratelimit-reset-requests`` and the ``-tokens`` equivalents; resets are durations
  (``"12ms"``, ``"6s"``, ``"1m0s"``): the time until the window is empty again.
* Anthropic: ``anthropic-ratelimit-requests-limit``, ``-remaining``, ``-reset`` and the
  ``tokens`` equivalents; resets are RFC 3339 timestamps (UTC).
* On a refusal: ``retry-after`` (whole seconds, rounded up); on a budget refusal also
  ``x-should-retry: false`` (both SDKs then give up at once instead of retrying a cap that
  resets hours away) — unless the turn would fit in what is spent and only the reservations
  of turns in flight leave no room: that is a retryable 429 (:class:`BudgetBusy`,
  ``retry-after`` :data:`BUSY_RETRY_S`, ``x-should-retry: true``).

Values come from the tightest limited scope of the turn (least remaining), per dimension.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gateway.errors import BudgetBusy, BudgetExceeded, RateLimitExceeded
from gateway.limits.model import nano_to_usd
from gateway.limits.periods import Period

BUSY_RETRY_S = 1
"""``retry-after`` (seconds) of a budget refused only for the reservations of turns in flight."""


@dataclass(frozen=True, slots=True)
class SoftAlert:
    """A soft budget the turn took past its cap (admitted anyway): log it and count it."""

    scope: str
    period: Period
    limit_usd: float
    spent_usd: float
    reserved_usd: float
    cost_usd: float


@dataclass(frozen=True, slots=True)
class WindowState:
    """One rate dimension of one scope at admission: ``limit``, ``remaining`` after this
    turn, seconds until the window is empty (``reset_s``)."""

    limit: int
    remaining: int
    reset_s: float


@dataclass(slots=True)
class Reservation:
    """A granted turn's hold on its scopes' counters, until :meth:`settle` or
    :meth:`release` on the backend that made it (either is idempotent by ``id``).

    ``cost_nano``: the worst-case cost reserved on every budget counter; ``alerts``: soft
    budgets it went past; ``headers``: rate-limit headers for the answer; ``degraded``: the
    shared counters were unreachable and ``redis.fail: open`` admitted it unchecked.
    ``plan`` is the backend's own record of which counters it touched."""

    id: str
    cost_nano: int
    alerts: tuple[SoftAlert, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    degraded: bool = False
    plan: object = None
    done: bool = False


def ceil_s(seconds: float) -> int:
    """Whole seconds, rounded up (``retry-after`` never sends a client back too early)."""
    return max(math.ceil(seconds - 1e-6), 0)  # float noise of a microsecond is not a second


def duration(seconds: float) -> str:
    """OpenAI's reset format: ``"850ms"`` below a second, else ``"6s"``, ``"1m0s"``."""
    if seconds < 1:
        return f"{max(round(seconds * 1000), 0)}ms"  # times are whole milliseconds
    whole = ceil_s(seconds)
    minutes, secs = divmod(whole, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def rfc3339(epoch_s: float) -> str:
    """An instant as an RFC 3339 UTC timestamp to the second, rounded up (Anthropic's reset)."""
    return _rfc3339_second(math.ceil(epoch_s - 1e-6))


@functools.lru_cache(maxsize=256)
def _rfc3339_second(second: int) -> str:  # a turn's resets fall on few distinct seconds
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rate_headers(requests: WindowState | None, tokens: WindowState | None, now_s: float) -> dict[str, str]:
    """The ``x-ratelimit-*`` and ``anthropic-ratelimit-*`` headers of the tightest request and
    token windows (none for a dimension that is not limited)."""
    out: dict[str, str] = {}
    for dim, st in (("requests", requests), ("tokens", tokens)):
        if st is None:
            continue
        limit, remaining = str(st.limit), str(st.remaining)
        out[f"x-ratelimit-limit-{dim}"] = limit
        out[f"x-ratelimit-remaining-{dim}"] = remaining
        out[f"x-ratelimit-reset-{dim}"] = duration(st.reset_s)
        out[f"anthropic-ratelimit-{dim}-limit"] = limit
        out[f"anthropic-ratelimit-{dim}-remaining"] = remaining
        out[f"anthropic-ratelimit-{dim}-reset"] = rfc3339(now_s + st.reset_s)
    return out


def tighter(a: WindowState | None, b: WindowState) -> WindowState:
    """The window with less room left (``a`` None: ``b``)."""
    return b if a is None or b.remaining < a.remaining else a


def budget_denial(
    *,
    scope: str,
    period: Period,
    limit_nano: int,
    spent_nano: int,
    reserved_nano: int,
    cost_nano: int,
    reset_s: float | None,
    now_s: float,
) -> BudgetExceeded:
    """The refusal of a turn whose cost ``cost_nano`` does not fit a hard budget:
    :class:`BudgetBusy` (retryable) when it fits what is spent and only the reservations of
    turns in flight leave no room, else :class:`BudgetExceeded`."""
    if spent_nano + cost_nano <= limit_nano:
        limit = nano_to_usd(limit_nano)
        msg = (
            f"budget busy: {scope}'s hard {period} budget of ${limit:.6g} has room for this turn "
            f"(up to ${nano_to_usd(cost_nano):.6g}) in what is spent (${nano_to_usd(spent_nano):.6g}), "
            f"but ${nano_to_usd(reserved_nano):.6g} is reserved by turns in flight; retry after "
            f"{BUSY_RETRY_S} s"
        )
        busy = {"retry-after": str(BUSY_RETRY_S), "x-should-retry": "true"}
        refused = BudgetBusy(
            msg,
            scope=scope,
            period=period,
            limit_usd=limit,
            reset_at=None if reset_s is None else datetime.fromtimestamp(reset_s, UTC),
            retry_after_s=BUSY_RETRY_S,
            headers=busy,
        )
        refused.spent_usd = nano_to_usd(spent_nano)
        return refused
    retry = None if reset_s is None else ceil_s(reset_s - now_s)
    reset_at = None if reset_s is None else datetime.fromtimestamp(reset_s, UTC)
    headers = {"x-should-retry": "false"}
    if retry is not None:
        headers["retry-after"] = str(retry)
    limit, spent = nano_to_usd(limit_nano), nano_to_usd(spent_nano)
    when = "never (a total budget)" if reset_at is None else reset_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    msg = (
        f"budget exceeded: {scope}'s hard {period} budget of ${limit:.6g} has ${spent:.6g} spent and "
        f"${nano_to_usd(reserved_nano):.6g} reserved by turns in flight; this turn may cost up to "
        f"${nano_to_usd(cost_nano):.6g}. It resets {when}."
    )
    return BudgetExceeded(
        msg,
        scope=scope,
        period=period,
        limit_usd=limit,
        reset_at=reset_at,
        retry_after_s=retry,
        headers=headers,
    )


def rate_denial(
    *,
    scope: str,
    dimension: str,
    limit: int,
    used: int,
    retry_s: float,
    state: WindowState | None,
    now_s: float,
) -> RateLimitExceeded:
    """The refusal of a turn at a rate limit; ``retry_s`` inf: never within the window (a
    limit of 0)."""
    retry = None if math.isinf(retry_s) else max(ceil_s(retry_s), 1)
    headers = (
        rate_headers(state, None, now_s) if dimension == "requests" else rate_headers(None, state, now_s)
    )
    if retry is not None:
        headers["retry-after"] = str(retry)
    unit = {
        "requests": "requests per minute",
        "tokens": "tokens per minute",
        "concurrent": "concurrent turns",
    }
    wait = "" if retry is None else f"; retry after {retry} s"
    msg = f"rate limit: {scope} is at its limit of {limit} {unit[dimension]} ({used} in use){wait}"
    return RateLimitExceeded(
        msg, scope=scope, dimension=dimension, limit=limit, retry_after_s=retry, headers=headers
    )
