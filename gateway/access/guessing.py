"""Guessing the admin key: wrong admin keys counted per client address, then refused for a while.

The admin key (``access.admin_key_env``) is a secret the operator chose, perhaps a short one;
every place that takes it — the console's log-in form, the key admin API ``/admin/*``, the MCP
registry's ``/admin/mcp/*`` and the endpoints :class:`gateway.access.middleware.KeyCheck` guards
(``/metrics``, sessions, stored responses), where the admin key passes as the admin — shares one
:class:`KeyGuesses` (``app.state.key_guesses``). A client address gets :data:`FAILURES` wrong
keys per :data:`WINDOW_S`; past that, every request of that address presenting a key is answered
429 with ``retry-after`` (:class:`TooManyKeyGuesses`) before its key is compared, until the
window has passed, so a right guess cannot be told from a wrong one meanwhile.

Each wrong key is one log line and one access-audit event (``admin_key.refused``: actor
``client:<address>``, target the path, the failures in the window in ``detail``); the first
refusal of a throttled address in a window is one more (``admin_key.throttled``). So an address
writes at most ``FAILURES + 1`` audit events per window.

The worker processes of one ``turnstile serve --workers N`` count together: given ``shared``
(:class:`gateway.workers_state.WorkersState`, the workers' SQLite file), the wrong keys are kept
there, so an address gets :data:`FAILURES` per window across all workers, not per worker (one
read of the file per request presenting a key to an admin surface, one write per wrong key; a
file that fails is logged and this worker counts alone meanwhile). The throttled-refusal audit
event stays one per worker and window.

The client address is the connection's peer (``scope["client"]``), or what a reverse proxy
listed in ``server.trusted_proxies`` says in ``X-Forwarded-For`` — never a header a client
sends directly (:mod:`gateway.serving`).
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import structlog
from starlette.requests import Request

from gateway.access.model import AuditEvent
from gateway.errors import TurnstileError
from gateway.workers_state import WorkersState
from mcp_servers.clients import is_admin_key, presented_keys

log = structlog.get_logger("turnstile.access")

FAILURES = 10
"""Wrong admin keys one client address may send per :data:`WINDOW_S`."""

WINDOW_S = 300.0
"""The window of :data:`FAILURES` (seconds)."""

MAX_TRACKED_ADDRESSES = 10_000
"""Client addresses whose failures are remembered at most (the oldest is forgotten first)."""


class TooManyKeyGuesses(TurnstileError):
    """A client address sent too many wrong admin keys (HTTP 429); ``retry_after_s`` says when
    it may try again."""

    status = 429
    kind = "rate_limit"

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(
            f"too many wrong admin keys from this address; try again in {math.ceil(retry_after_s)} s"
        )
        self.retry_after_s = float(max(1, math.ceil(retry_after_s)))


def client_address(scope: Any) -> str:
    """The client address of an ASGI ``scope`` (or a Starlette request's), ``?`` when unknown."""
    client = scope.get("client") if isinstance(scope, dict) else getattr(scope, "client", None)
    return str(client[0]) if client else "?"


class KeyGuesses:
    """Wrong admin keys per client address in a sliding window (see the module docstring);
    ``clock`` is monotonic seconds (machine-wide), injectable for tests; ``shared``: the
    workers' file to count in (None: this process's memory)."""

    def __init__(
        self,
        failures: int = FAILURES,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        shared: WorkersState | None = None,
    ) -> None:
        self.failures = failures
        self.window_s = window_s
        self.clock = clock
        self.shared = shared
        self._seen: OrderedDict[str, list[float]] = OrderedDict()
        self._told: dict[str, float] = {}  # address -> when its throttling was last audited
        self._marked: set[str] = set()  # addresses with wrong keys in the shared file (seen here)
        self._forgetting: set[asyncio.Future[None]] = set()

    def _recent(self, address: str) -> list[float]:
        now = self.clock()
        times = [t for t in self._seen.get(address, []) if now - t < self.window_s]
        if times:
            self._seen[address] = times
        else:
            self._seen.pop(address, None)
        return times

    def retry_after(self, address: str) -> float | None:
        """Seconds until ``address`` may try a key again, or None when it may now (this
        process's count only; :meth:`check` reads the shared one)."""
        return self._wait(self._recent(address))

    def _wait(self, times: list[float]) -> float | None:
        if len(times) < self.failures:
            return None
        return max(0.0, times[0] + self.window_s - self.clock())

    def _shared_failed(self, err: sqlite3.Error) -> None:
        log.error("admin_key_guesses_unshared", error=f"{type(err).__name__}: {err}", file=self.shared_path)

    @property
    def shared_path(self) -> str | None:
        """The workers' file the wrong keys are counted in (None: this process's memory)."""
        return None if self.shared is None else self.shared.path

    async def check(self, address: str, path: str, store: Any = None) -> None:
        """Raise :class:`TooManyKeyGuesses` when ``address`` is throttled (its first refusal
        in a window audited to ``store``, an :class:`gateway.access.store.AccessStore`)."""
        times: list[float] | None = None
        if self.shared is not None:
            try:
                times = await self.shared.guesses(address, self.clock() - self.window_s)
            except sqlite3.Error as err:
                self._shared_failed(err)
            else:
                if times:
                    self._mark(address)
        wait = self._wait(self._recent(address) if times is None else times)
        if wait is None:
            return
        now = self.clock()
        told = self._told.get(address)
        if told is None or now - told >= self.window_s:
            self._told[address] = now
            if len(self._told) > MAX_TRACKED_ADDRESSES:
                self._told.clear()
            log.warning("admin_key_guesses_throttled", client=address, path=path, retry_after_s=round(wait))
            await _audit(store, "admin_key.throttled", address, path, {"retry_after_s": round(wait)})
        raise TooManyKeyGuesses(wait)

    async def failed(self, address: str, path: str, store: Any = None) -> None:
        """``address`` sent a wrong admin key to ``path``: counted, logged and audited."""
        times = self._recent(address)
        now = self.clock()
        times.append(now)
        self._seen[address] = times
        self._seen.move_to_end(address)
        while len(self._seen) > MAX_TRACKED_ADDRESSES:
            self._seen.popitem(last=False)
        if self.shared is not None:
            try:
                times = await self.shared.guessed(address, now, now - self.window_s)
                self._mark(address)
            except sqlite3.Error as err:
                self._shared_failed(err)
        log.info("admin_key_refused", client=address, path=path, failures_in_window=len(times))
        await _audit(store, "admin_key.refused", address, path, {"failures_in_window": len(times)})

    def succeeded(self, address: str) -> None:
        """``address`` presented the right key: its failures are forgotten (in the shared
        file too, in the background, when this worker saw some there)."""
        self._seen.pop(address, None)
        if self.shared is not None and address in self._marked:
            self._marked.discard(address)
            task = asyncio.ensure_future(self._forget(address))
            self._forgetting.add(task)
            task.add_done_callback(self._forgetting.discard)

    def _mark(self, address: str) -> None:
        if len(self._marked) >= MAX_TRACKED_ADDRESSES:
            self._marked.clear()  # their rows age out of the window in the file anyway
        self._marked.add(address)

    async def _forget(self, address: str) -> None:
        assert self.shared is not None
        try:
            await self.shared.forget(address)
        except sqlite3.Error as err:
            self._shared_failed(err)


async def _audit(store: Any, action: str, address: str, path: str, detail: dict[str, Any]) -> None:
    """One audit event (a failure to write it is logged, not raised: the refusal stands)."""
    if store is None:
        return
    event = AuditEvent(
        ts=time.time(),
        action=action,
        actor=f"client:{address}",
        target=path,
        reason="admin_key",
        detail=detail,
    )
    try:
        await store.audit(event)
    except Exception as err:
        log.error("access_audit_failed", error=str(err), event=event.model_dump())


async def check_admin_key(request: Request, expected: str | None) -> bool:
    """Whether ``request`` presents the admin key ``expected``, counting a wrong one against
    its client address (:mod:`gateway.access.guessing`; a request presenting no key is not a
    guess). Raises :class:`TooManyKeyGuesses` for an address past its wrong keys, before its
    key is compared."""
    guesses: KeyGuesses | None = getattr(request.app.state, "key_guesses", None)
    if guesses is None or (not presented_keys(request.headers) and not request.headers.get("x-admin-key")):
        return is_admin_key(request.headers, expected)
    address = client_address(request)
    store = getattr(request.app.state, "access", None)
    await guesses.check(address, request.url.path, store)
    if is_admin_key(request.headers, expected):
        guesses.succeeded(address)
        return True
    await guesses.failed(address, request.url.path, store)
    return False
