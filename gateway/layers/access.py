"""Access layer: who is calling and what they may use.

Today: the caller's MCP visibility (``mcp.clients``: the key in ``Authorization: Bearer``,
``x-api-key`` or ``x-goog-api-key`` decides which MCP tools the tool loop offers and runs,
:func:`mcp_servers.clients.caller`). Virtual keys, rate limits and budgets belong here: a
refusal raised here is recorded by the record layer above and nothing below runs.
"""

from __future__ import annotations

from gateway.schema import Request, Response
from gateway.turn import Batches, Gateway, Service, Turn
from mcp_servers.clients import caller


class AccessLayer:
    """Sets ``turn.mcp_visibility`` from the caller's key when MCP clients are configured."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner
        self.clients = bool(gw.config.mcp.clients)

    def _admit(self, turn: Turn) -> None:
        if self.clients and self.gw.mcp is not None:
            turn.mcp_visibility = caller(self.gw.config.mcp, self.gw.mcp.read_env, turn.headers_in)

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer for an admitted caller."""
        if self.clients:
            self._admit(turn)
        return await self.inner.complete(turn, request)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream for an admitted caller."""
        if self.clients:
            self._admit(turn)
        return await self.inner.stream(turn, request)
