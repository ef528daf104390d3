"""What the access store holds: virtual keys, teams, their limits (as data) and audit events.

Times are Unix epoch seconds (float, UTC). Money is USD. The limits (:class:`Budget`,
:class:`RateLimits`) are stored here as data only; :mod:`gateway.limits` enforces them.

Allow lists, on a key and on its team (an empty list allows everything):

* ``models``: model names a client may ask for (aliases or deployment names, as the client
  writes ``model``);
* ``mcp``: MCP server ids (``time``: every tool of that server) and ``server.tool`` names
  (``time.get_current_time``: that tool only).

A key of a team may use what both allow (:class:`Principal` checks the two lists, which is
their intersection).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Period = Literal["day", "week", "month", "total"]
"""A budget's period: a calendar day, week or month (in the time zone the limits configure),
or the key's whole life (``total``)."""


class Budget(BaseModel):
    """A spend cap: at most ``usd`` (USD, from 10⁻⁶ to 10¹²) per ``period``. ``hard``: turns that would
    exceed it are refused (429); soft: it alerts (log and metric) and the turn goes on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    period: Period
    usd: float = Field(ge=1e-6, le=1e12)  # USD; counted in nano-dollars (gateway.limits.model)
    hard: bool = True


class RateLimits(BaseModel):
    """Request rate limits (None: no limit): ``rpm`` requests per minute, ``tpm`` tokens
    (input + output) per minute, ``concurrent`` turns running at once."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    concurrent: int | None = Field(default=None, ge=1)


NO_RATE_LIMITS = RateLimits()
"""Rate limits that limit nothing."""


class Limits(BaseModel):
    """What a key and a team carry alike: allow lists and limits (see the module docstring);
    at most one budget per period (the limits layer keeps one counter per period)."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(default_factory=list)
    mcp: list[str] = Field(default_factory=list)
    budgets: list[Budget] = Field(default_factory=list)
    rate_limits: RateLimits = Field(default_factory=RateLimits)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("budgets")
    @classmethod
    def _one_budget_per_period(cls, budgets: list[Budget]) -> list[Budget]:
        periods = [b.period for b in budgets]
        repeated = sorted({p for p in periods if periods.count(p) > 1})
        if repeated:
            raise ValueError(f"at most one budget per period; repeated: {', '.join(repeated)}")
        return budgets


class Team(Limits):
    """A team: its ``id`` (``team-`` + 16 hex), unique ``name`` and the limits that bound
    every key of it."""

    id: str
    name: str
    created_at: float
    updated_at: float


class Key(Limits):
    """A virtual key as stored: never its secret, only ``hash`` (SHA-256 hex of the whole
    ``tsk-...`` string) and ``prefix`` (its first characters, to recognise it in a list).

    ``team_id``: its team or None; ``expires_at``: refused from then on (None: never);
    ``enabled``: False refuses it until enabled again; ``revoked_at``: refused for good.
    """

    id: str
    name: str
    prefix: str
    hash: str
    team_id: str | None = None
    expires_at: float | None = None
    enabled: bool = True
    created_at: float
    updated_at: float
    revoked_at: float | None = None

    def public(self) -> dict[str, Any]:
        """The key as the admin API and CLI show it (no hash)."""
        return self.model_dump(mode="json", exclude={"hash"})


class AuditEvent(BaseModel):
    """One line of the access audit: ``action`` (``key.created``, ``key.changed``,
    ``key.revoked``, ``key.rotated``, ``team.created``, ``team.changed``, ``team.deleted``,
    ``access.denied``, ``limit.refused``), who did it (``actor``: ``admin-api``, ``cli``, or
    the key id of a denied caller), on what (``target``: a key or team id, a model name, a
    limited scope such as ``key:<id>``), why (``reason``: e.g. ``budget``, ``requests``) and
    ``detail`` (the changed fields, the request id...)."""

    seq: int | None = None
    ts: float
    action: str
    actor: str
    target: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


def allows(allowed: tuple[str, ...], name: str) -> bool:
    """Whether the allow list ``allowed`` (empty: everything) holds ``name``."""
    return not allowed or name in allowed


def allows_tool(allowed: tuple[str, ...], server: str, tool: str) -> bool:
    """Whether the MCP allow list ``allowed`` (empty: everything) holds tool ``tool`` of
    ``server``: the server id or ``server.tool``."""
    return not allowed or server in allowed or f"{server}.{tool}" in allowed


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a turn's caller is, resolved from its virtual key (``turn.principal``): the key
    and its team (ids, names), both allow lists, both sets of limits, for the access layer,
    the limits layer and the transcript row."""

    key_id: str
    key_name: str
    team_id: str | None
    team_name: str | None
    expires_at: float | None
    key_models: tuple[str, ...] = ()
    team_models: tuple[str, ...] = ()
    key_mcp: tuple[str, ...] = ()
    team_mcp: tuple[str, ...] = ()
    key_budgets: tuple[Budget, ...] = ()
    team_budgets: tuple[Budget, ...] = ()
    key_rate_limits: RateLimits = NO_RATE_LIMITS
    team_rate_limits: RateLimits = NO_RATE_LIMITS

    def allows_model(self, model: str) -> bool:
        """Whether the key and its team both allow the model name ``model``."""
        return allows(self.key_models, model) and allows(self.team_models, model)

    def allows_tool(self, server: str, tool: str) -> bool:
        """Whether the key and its team both allow MCP tool ``tool`` of ``server``."""
        return allows_tool(self.key_mcp, server, tool) and allows_tool(self.team_mcp, server, tool)

    def allows_server(self, server: str) -> bool:
        """Whether the key and its team both allow every tool of MCP ``server``."""
        return allows(self.key_mcp, server) and allows(self.team_mcp, server)

    @property
    def mcp_restricted(self) -> bool:
        """Whether either allow list limits MCP tools."""
        return bool(self.key_mcp or self.team_mcp)


def principal_of(key: Key, team: Team | None) -> Principal:
    """The :class:`Principal` of ``key`` (of ``team``, when it has one)."""
    return Principal(
        key_id=key.id,
        key_name=key.name,
        team_id=team.id if team is not None else None,
        team_name=team.name if team is not None else None,
        expires_at=key.expires_at,
        key_models=tuple(key.models),
        team_models=tuple(team.models) if team is not None else (),
        key_mcp=tuple(key.mcp),
        team_mcp=tuple(team.mcp) if team is not None else (),
        key_budgets=tuple(key.budgets),
        team_budgets=tuple(team.budgets) if team is not None else (),
        key_rate_limits=key.rate_limits,
        team_rate_limits=team.rate_limits if team is not None else NO_RATE_LIMITS,
    )
