"""The subscription bus of ``/mcp``'s ``subscriptions/listen`` streams (MCP 2026-07-28), scoped
by the caller's visibility (:mod:`mcp_servers.clients`).

The SDK's ``ListenHandler`` subscribes one listener per stream, synchronously inside the
``subscriptions/listen`` request's task; the endpoint runs the handler inside
:meth:`ScopedBus.listening_as`, so each listener is recorded with its caller's
:class:`~mcp_servers.clients.Visibility`. List-changed events reach every stream (they name
nothing). A resource update (:meth:`ScopedBus.publish_update`) reaches a stream only when its
caller may see the resource's server: a listen on a hidden resource's URI is acknowledged and
never fires, exactly as one on a URI that does not exist.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio.lowlevel
import structlog
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent

from mcp_servers.clients import NOTHING, Visibility

log = structlog.get_logger("turnstile.mcp.bus")

_CALLER = contextvars.ContextVar[Visibility]("turnstile_listen_caller", default=NOTHING)
"""The visibility a listener subscribing now is recorded with (fails closed: nothing)."""


class ScopedBus:
    """A ``mcp.server.subscriptions.SubscriptionBus`` whose resource updates are delivered by
    visibility. ``sees(visibility, server)`` says whether a caller may see a server's resources."""

    def __init__(self, sees: Callable[[Visibility, str], bool]) -> None:
        self._sees = sees
        self._listeners: dict[object, tuple[Visibility, Callable[[ServerEvent], None]]] = {}

    @contextmanager
    def listening_as(self, visible: Visibility) -> Iterator[None]:
        """Listeners subscribing within this block belong to a caller with ``visible``."""
        token = _CALLER.set(visible)
        try:
            yield
        finally:
            _CALLER.reset(token)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """Register ``listener`` (with the visibility of :meth:`listening_as`); returns an
        idempotent unsubscribe callable."""
        token = object()
        self._listeners[token] = (_CALLER.get(), listener)

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def publish(self, event: ServerEvent) -> None:
        """Deliver ``event`` to every listener; a ``ResourceUpdated`` published here names no
        server, so only listeners that see everything get it (use :meth:`publish_update`)."""
        await self._deliver(event, None)

    async def publish_update(self, server: str, uri: str) -> None:
        """Deliver ``ResourceUpdated(uri)`` (the exposed URI of a resource of ``server``) to the
        listeners whose caller may see ``server``."""
        await self._deliver(ResourceUpdated(uri=uri), server)

    async def _deliver(self, event: ServerEvent, server: str | None) -> None:
        scoped = isinstance(event, ResourceUpdated)
        for visible, listener in list(self._listeners.values()):
            if scoped and visible.client is not None and (server is None or not self._sees(visible, server)):
                continue
            try:
                listener(event)
            except Exception:  # fan-out boundary, as the SDK's bus: one bad listener skips no other
                log.exception("mcp_listener_failed")
        await anyio.lowlevel.checkpoint()  # a burst of publishes lets listen streams drain between events
