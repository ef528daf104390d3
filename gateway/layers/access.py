"""Access layer: who is calling and what they may use.

* Virtual keys (:mod:`gateway.access`), when the gateway reads them (``access.auth`` not
  ``off``): the caller's key is judged (:meth:`gateway.access.identity.Identity.admit`: a
  401 for a missing one where keys are required, or one unknown, revoked, disabled or
  expired), its principal put on ``turn.principal`` (for the limits, the transcript row), the
  requested model checked against the key's and its team's allow lists (a 403 naming the
  model) and ``turn.mcp_visibility`` set from their MCP allow lists, which replace
  ``mcp.clients`` for this caller.
* Otherwise (no ``tsk-`` key where keys are optional), ``mcp.clients``: the key in
  ``Authorization: Bearer``, ``x-api-key`` or ``x-goog-api-key`` decides which MCP tools the
  tool loop offers and runs (:func:`mcp_servers.clients.caller`).

Where keys are required the server judges the key before it reads the request's body (a
caller without one costs nothing more) and hands the principal in on the turn.

A refusal raised here is recorded by the record layer above (with the key's id when the key
was known) and nothing below runs. The pass-through case (keys optional, none presented, no
``mcp.clients``) costs one pass over the raw header values (:func:`may_hold_key`).
"""

from __future__ import annotations

from gateway.access.identity import may_hold_key
from gateway.schema import Request, Response
from gateway.turn import Batches, Gateway, Service, Turn
from mcp_servers.clients import caller


class AccessLayer:
    """Sets ``turn.principal`` and ``turn.mcp_visibility`` from the caller's key."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner
        self.clients = bool(gw.config.mcp.clients)

    def _admit(self, turn: Turn) -> None:
        if self.clients and self.gw.mcp is not None:
            turn.mcp_visibility = caller(self.gw.config.mcp, self.gw.mcp.read_env, turn.headers_in)

    async def _admit_key(self, turn: Turn, request: Request) -> None:
        identity = self.gw.identity
        assert identity is not None
        principal = turn.principal  # the server judged the key already where keys are required
        if principal is None:
            principal = await identity.admit(turn.headers_in or {}, request_id=turn.request_id)
        if principal is None:  # keys optional and none presented
            self._admit(turn)
            return
        turn.principal = principal
        await identity.check_model(principal, request.model, request_id=turn.request_id)
        turn.mcp_visibility = identity.visibility(principal)

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer for an admitted caller."""
        identity = self.gw.identity
        if identity is not None and (identity.required or may_hold_key(turn.headers_in)):
            await self._admit_key(turn, request)
        elif self.clients:
            self._admit(turn)
        return await self.inner.complete(turn, request)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream for an admitted caller."""
        identity = self.gw.identity
        if identity is not None and (identity.required or may_hold_key(turn.headers_in)):
            await self._admit_key(turn, request)
        elif self.clients:
            self._admit(turn)
        return await self.inner.stream(turn, request)
