"""Deployment health: cooldowns, a circuit breaker per deployment, latency, a retry budget.

In-process state, one :class:`HealthBoard` per gateway process (made with the ``Gateway`` in
the server's lifespan; no module globals). Time comes from an injectable ``clock`` (seconds,
monotonic) so tests need no sleeps.

* **Cooldown**: after a retryable failure (429, 408/409, 5xx, timeout) a deployment is skipped
  until ``now + max(retry_after, cooldown_s)``; ``retry-after`` from the upstream wins when
  longer.
* **Circuit breaker**: ``failure_threshold`` consecutive failures open the circuit for
  ``open_s`` seconds; then it is half-open and admits one probe; a success closes it, a
  failure opens it again.
* **Latency**: an exponentially weighted moving average of successful call latency (ms),
  used to order deployments of the same tier and price.
* **Retry budget** (:class:`RetryBudget`): a token bucket; each turn deposits ``ratio``
  tokens (up to ``cap``), each fallback attempt onto a deployment that is itself failing
  (:meth:`HealthBoard.failing`) withdraws one, so under a wide outage fallbacks cannot multiply
  load beyond ``1 + ratio`` (the scheme of Finagle/Envoy retry budgets). A turn always gets its
  first attempt. A fallback to a deployment that has not failed is a failover, not a retry: it
  takes no token (as Envoy's priority failover is outside its retry budget), so a burst routed
  to a failing primary before its first failure was known still reaches a healthy fallback.
  Each deployment is asked at most once per turn, so even a burst against an alias whose every
  deployment fails asks each at most once per turn, and once they have failed, fallbacks are
  held to the budget again.

Shared between instances (``redis.url``, :mod:`gateway.fleet.health`): ``HealthBoard.listener``
hears every failure and every success of a deployment that was failing (a healthy deployment's
success costs nothing more), and :meth:`HealthBoard.apply` puts the state every instance agreed
on (consecutive failures, cooldown, circuit) into this board; :attr:`RetryBudget.deposits` and
:attr:`RetryBudget.spends` count what a sync sends on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

CircuitState = Literal["closed", "open", "half_open"]

HealthListener = Callable[[str, bool, "float | None"], None]
"""``(deployment, ok, retry_after_s)``: a call succeeded (``ok``) or failed."""

_OVERFLOW_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "exceeds the maximum",
    "token limit",
    "too long for",
)


def is_context_overflow(status: int, message: str) -> bool:
    """True when an upstream error says the input does not fit the model's context window.

    Matches 400/413/422 answers whose message names the context length (OpenAI
    ``context_length_exceeded`` "maximum context length is …", Anthropic "prompt is too long",
    Gemini "input token count … exceeds the maximum"). Sources: each vendor's error docs and
    litellm's ``ContextWindowExceededError`` string checks.
    """
    if status not in (400, 413, 422):
        return False
    low = message.lower()
    return any(m in low for m in _OVERFLOW_MARKERS)


@dataclass
class HealthSettings:
    """Knobs (seconds, counts)."""

    cooldown_s: float = 5.0
    max_cooldown_s: float = 300.0
    failure_threshold: int = 3
    open_s: float = 30.0
    latency_alpha: float = 0.2


@dataclass
class DeploymentHealth:
    """The health of one deployment."""

    consecutive_failures: int = 0
    cooldown_until: float = 0.0
    state: CircuitState = "closed"
    opened_at: float = 0.0
    probing: bool = False
    ewma_ms: float | None = None
    failures: int = 0
    successes: int = 0


@dataclass
class RetryBudget:
    """Token bucket limiting fallback attempts to ``ratio`` per turn on average (``cap``
    tokens at most; starts full)."""

    ratio: float = 0.2
    cap: float = 10.0
    tokens: float = 10.0
    deposits: int = 0
    """Turns deposited since the process started (a shared budget syncs the difference)."""
    spends: int = 0
    """Tokens taken since the process started."""

    def deposit(self) -> None:
        """One turn started."""
        self.deposits += 1
        self.tokens = min(self.cap, self.tokens + self.ratio)

    def try_spend(self) -> bool:
        """Take one token for a fallback attempt; False when the budget is exhausted."""
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            self.spends += 1
            return True
        return False


@dataclass
class HealthBoard:
    """Health of every deployment this process has called, keyed by deployment name."""

    settings: HealthSettings = field(default_factory=HealthSettings)
    clock: Callable[[], float] = time.monotonic
    budget: RetryBudget = field(default_factory=RetryBudget)
    entries: dict[str, DeploymentHealth] = field(default_factory=dict)
    listener: HealthListener | None = None
    """Told of every failure (``retry_after_s`` as given) and of every success of a deployment
    that was failing, after this board applied it (:mod:`gateway.fleet.health`)."""

    def _get(self, name: str) -> DeploymentHealth:
        h = self.entries.get(name)
        if h is None:
            h = self.entries[name] = DeploymentHealth()
        return h

    def state(self, name: str) -> CircuitState:
        """Circuit state of ``name`` now (an open circuit past ``open_s`` reads half-open)."""
        h = self.entries.get(name)
        if h is None:
            return "closed"
        if h.state == "open" and self.clock() - h.opened_at >= self.settings.open_s:
            h.state = "half_open"
            h.probing = False
        return h.state

    def failing(self, name: str) -> bool:
        """True when ``name``'s last outcome was a failure (consecutive failures, a cooldown
        or a circuit that is not closed): a fallback onto it is a retry and spends the retry
        budget. A deployment never called, or whose last call succeeded, is not failing."""
        h = self.entries.get(name)
        return h is not None and (h.consecutive_failures > 0 or h.state != "closed")

    def unavailable(self, name: str) -> str | None:
        """Why ``name`` should not be tried now (``"cooldown 3.2s"``, ``"circuit open"``,
        ``"circuit half-open, probe in flight"``), or None when it may be."""
        h = self.entries.get(name)
        if h is None or (h.state == "closed" and h.cooldown_until == 0.0):  # healthy: no clock read
            return None
        st = self.state(name)
        if st == "open":
            return "circuit open"
        if st == "half_open":
            return "circuit half-open, probe in flight" if h.probing else None
        left = h.cooldown_until - self.clock()
        if left > 0:
            return f"cooldown {left:.1f}s"
        return None

    def begin(self, name: str) -> None:
        """An attempt on ``name`` starts (marks the half-open probe as taken)."""
        h = self._get(name)
        if h.state != "closed" and self.state(name) == "half_open":
            h.probing = True

    def success(self, name: str, latency_ms: float | None = None) -> None:
        """A call to ``name`` succeeded: close its circuit, clear its cooldown, update latency."""
        h = self._get(name)
        if self.listener is not None and (
            h.consecutive_failures or h.state != "closed" or h.cooldown_until != 0.0
        ):
            self.listener(name, True, None)
        h.successes += 1
        h.consecutive_failures = 0
        h.cooldown_until = 0.0
        h.state = "closed"
        h.probing = False
        if latency_ms is not None:
            a = self.settings.latency_alpha
            h.ewma_ms = latency_ms if h.ewma_ms is None else (1 - a) * h.ewma_ms + a * latency_ms

    def failure(self, name: str, retry_after_s: float | None = None) -> None:
        """A retryable call to ``name`` failed: cool it down (``retry-after`` wins when longer,
        capped at ``max_cooldown_s``) and open the circuit after ``failure_threshold``
        consecutive failures (or at once when a half-open probe fails)."""
        s = self.settings
        h = self._get(name)
        now = self.clock()
        h.failures += 1
        h.consecutive_failures += 1
        wait = min(s.max_cooldown_s, max(s.cooldown_s, retry_after_s or 0.0))
        h.cooldown_until = max(h.cooldown_until, now + wait)
        was = self.state(name)
        if was == "half_open" or h.consecutive_failures >= s.failure_threshold:
            h.state = "open"
            h.opened_at = now
            h.probing = False
        if self.listener is not None:
            self.listener(name, False, retry_after_s)

    def apply(
        self, name: str, consecutive_failures: int, cooldown_left_s: float, open_for_s: float | None
    ) -> None:
        """Put the state the instances agreed on into this board: ``consecutive_failures``,
        the cooldown left (seconds, <= 0: none), and the circuit — ``open_for_s`` None: closed,
        else open since that many seconds (past ``open_s`` it reads half-open, one probe per
        instance). A closed circuit with no failure clears the entry's cooldown too."""
        h = self._get(name)
        now = self.clock()
        h.consecutive_failures = consecutive_failures
        h.cooldown_until = now + cooldown_left_s if cooldown_left_s > 0 else 0.0
        if open_for_s is None:
            h.state = "closed"
            h.probing = False
        elif h.state == "closed" or abs((now - open_for_s) - h.opened_at) > 1e-3:
            h.state = "open"
            h.opened_at = now - open_for_s
            h.probing = False

    def latency(self, name: str) -> float | None:
        """EWMA latency of ``name`` in ms, or None before its first success."""
        h = self.entries.get(name)
        return h.ewma_ms if h else None

    def reset(self) -> None:
        """Forget every deployment's health and refill the retry budget (tests sharing one
        gateway between cases call this between them)."""
        self.entries.clear()
        self.budget.tokens = self.budget.cap

    def snapshot(self) -> dict[str, dict[str, object]]:
        """Per deployment: circuit state, consecutive failures, cooldown left (s), latency (ms)."""
        now = self.clock()
        return {
            n: {
                "state": self.state(n),
                "consecutive_failures": h.consecutive_failures,
                "cooldown_left_s": round(max(0.0, h.cooldown_until - now), 3),
                "ewma_ms": h.ewma_ms,
            }
            for n, h in self.entries.items()
        }
