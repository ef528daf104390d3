"""The request log's search: which transcript rows match a filter, newest first, a page at a time.

A :class:`TurnFilter` is read from the query string of ``/ui/turns`` (:meth:`TurnFilter.parse`)
and becomes one SQL ``WHERE`` clause (:meth:`TurnFilter.where`) for SQLite or PostgreSQL:

* ``request_id``: a prefix of the request id (the first 8 characters ``turnstile logs`` shows
  are enough); a tool-loop step's row is ``<request id>.step<n>``.
* ``model`` (as the client asked for it), ``deployment`` (that served it), ``session``,
  ``key`` (virtual key id), ``team``: equal.
* ``outcome``: ``ok`` (status below 400), ``error`` (400 and above), ``4xx``, ``5xx``.
* ``guard``: the row's guard outcome (``ok``, ``repaired``, ``rejected``, ``invalid_request``).
* ``tool``: a tool call of that name in the answer (the model called it; a server-side tool
  loop's calls are in its steps' rows), or a tool result of that name in the request (the
  client sent one back). Matched inside the stored internal-schema JSON, after a plain
  substring test that skips the rows that cannot match without parsing them.

Pages are keyset-paginated on ``(ts, request_id)`` (:class:`Cursor`): a row written while
someone pages never shifts the pages they already saw, and each page costs the same however
deep it is. The ``ts`` index serves the order, the ``turns_session`` index the session filter
and, on SQLite, the primary key a request id's start (a range of it, beside the ``LIKE``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from gateway.console.transcript_reader import Dialect, TranscriptReader
from gateway.errors import InvalidRequest

OUTCOMES = {
    "ok": "t.status < 400",
    "error": "t.status >= 400",
    "4xx": "t.status >= 400 AND t.status < 500",
    "5xx": "t.status >= 500",
}
"""The ``outcome`` filter's values and their SQL."""

GUARD_OUTCOMES = ("ok", "repaired", "rejected", "invalid_request")
"""The ``guard`` filter's values (a row's ``guard_outcome``)."""

MAX_VALUE_CHARS = 200
"""The longest filter value accepted (characters)."""

PAGE_SIZE = 50
"""Rows per page of the request log."""

LIST_COLUMNS = (
    "request_id, ts, client_dialect, requested_model, deployment, stream, status, stop, input_tokens, "
    "output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_estimated, cost_usd, "
    "latency_ms, guard_outcome, error, key_id, team_id, session_id"
)
"""The columns a page of the request log reads (never the request and answer JSON)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# The JSON arrays a tool filter looks in, per dialect: the answer's content parts (tool calls)
# and the request's messages (tool results). A value that is not valid JSON matches nothing.
_TOOL_SQL: dict[str, str] = {
    "sqlite": (
        "((t.response LIKE ? ESCAPE '\\' AND EXISTS (SELECT 1 FROM json_each("
        "CASE WHEN json_valid(t.response) THEN t.response ELSE '{}' END, '$.message.content') c "
        "WHERE json_extract(c.value, '$.type') = 'tool_call' AND json_extract(c.value, '$.name') = ?)) "
        "OR (t.request LIKE ? ESCAPE '\\' AND EXISTS (SELECT 1 FROM json_each("
        "CASE WHEN json_valid(t.request) THEN t.request ELSE '{}' END, '$.messages') m "
        "WHERE json_extract(m.value, '$.role') = 'tool' AND json_extract(m.value, '$.name') = ?)))"
    ),
    "postgres": (
        "((t.response LIKE ? ESCAPE '\\' AND EXISTS (SELECT 1 FROM json_array_elements("
        "CASE WHEN json_typeof(t.response::json -> 'message' -> 'content') = 'array' "
        "THEN t.response::json -> 'message' -> 'content' ELSE '[]'::json END) c "
        "WHERE c ->> 'type' = 'tool_call' AND c ->> 'name' = ?)) "
        "OR (t.request LIKE ? ESCAPE '\\' AND EXISTS (SELECT 1 FROM json_array_elements("
        "CASE WHEN json_typeof(t.request::json -> 'messages') = 'array' "
        "THEN t.request::json -> 'messages' ELSE '[]'::json END) m "
        "WHERE m ->> 'role' = 'tool' AND m ->> 'name' = ?)))"
    ),
}


def like_escape(text: str) -> str:
    """``text`` with LIKE's wildcards (``%``, ``_``) and the escape character (``\\``) escaped."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _value(params: Mapping[str, str], name: str) -> str | None:
    raw = params.get(name)
    if raw is None:
        return None
    value = raw.strip()
    if not value:
        return None
    if len(value) > MAX_VALUE_CHARS or _CONTROL.search(value):
        raise InvalidRequest(
            f"{name}: at most {MAX_VALUE_CHARS} characters without control characters", param=name
        )
    return value


@dataclass(frozen=True)
class Cursor:
    """Where a page ends: the ``ts`` (epoch seconds) and ``request_id`` of its last row; the next
    page holds the rows strictly older (by ``ts``, then ``request_id``)."""

    ts: float
    request_id: str

    def token(self) -> str:
        """The cursor as the ``before`` query value: ``<ts>~<request id>`` (``ts`` as ``repr``, so
        it reads back exactly)."""
        return f"{self.ts!r}~{self.request_id}"

    @classmethod
    def parse(cls, token: str | None) -> Cursor | None:
        """The cursor of a ``before`` value (None for None or empty). Raises
        :class:`InvalidRequest` naming ``before`` for anything else."""
        if not token:
            return None
        ts, sep, rid = token.partition("~")
        try:
            value = float(ts)
        except ValueError:
            value = float("nan")
        if not sep or not rid or value != value or len(rid) > MAX_VALUE_CHARS:
            raise InvalidRequest("before: not a page cursor of this log", param="before")
        return cls(value, rid)


@dataclass(frozen=True)
class TurnFilter:
    """What the request log shows (see the module docstring); None: no condition."""

    request_id: str | None = None
    model: str | None = None
    deployment: str | None = None
    outcome: str | None = None
    guard: str | None = None
    tool: str | None = None
    session: str | None = None
    key: str | None = None
    team: str | None = None

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> TurnFilter:
        """The filter of a query string (unknown names are ignored; empty values mean no
        condition). Raises :class:`InvalidRequest` naming the field for an ``outcome`` or
        ``guard`` outside their values, or a value over :data:`MAX_VALUE_CHARS` characters."""
        values = {f.name: _value(params, f.name) for f in fields(cls)}
        if values["outcome"] is not None and values["outcome"] not in OUTCOMES:
            raise InvalidRequest(f"outcome: one of {', '.join(OUTCOMES)}", param="outcome")
        if values["guard"] is not None and values["guard"] not in GUARD_OUTCOMES:
            raise InvalidRequest(f"guard: one of {', '.join(GUARD_OUTCOMES)}", param="guard")
        if values["request_id"] is not None:
            values["request_id"] = values["request_id"].lower()
        return cls(**values)

    def is_empty(self) -> bool:
        """Whether no condition is set."""
        return all(getattr(self, f.name) is None for f in fields(self))

    def query(self) -> dict[str, str]:
        """The filter as query-string pairs (set conditions only), for links to other pages."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    def where(self, dialect: Dialect) -> tuple[list[str], list[Any]]:
        """``(conditions, parameters)``: SQL conditions on the ``turns`` table aliased ``t``
        (``?`` markers), to be joined with ``AND``."""
        conds: list[str] = []
        params: list[Any] = []
        if self.request_id is not None:
            conds.append("t.request_id LIKE ? ESCAPE '\\'")
            params.append(like_escape(self.request_id) + "%")
            if dialect == "sqlite":  # the same rows as a range of the primary key (binary order)
                conds.append("t.request_id >= ? AND t.request_id < ?")
                params += [self.request_id, self.request_id + "\U0010ffff"]
        for column, value in (
            ("requested_model", self.model),
            ("deployment", self.deployment),
            ("session_id", self.session),
            ("key_id", self.key),
            ("team_id", self.team),
            ("guard_outcome", self.guard),
        ):
            if value is not None:
                conds.append(f"t.{column} = ?")
                params.append(value)
        if self.outcome is not None:
            conds.append(OUTCOMES[self.outcome])
        if self.tool is not None:
            pattern = "%" + like_escape(self.tool) + "%"
            conds.append(_TOOL_SQL[dialect])
            params += [pattern, self.tool, pattern, self.tool]
        return conds, params


async def page(
    reader: TranscriptReader, where: TurnFilter, before: Cursor | None = None, size: int = PAGE_SIZE
) -> tuple[list[dict[str, Any]], Cursor | None]:
    """The newest ``size`` rows matching ``where`` older than ``before`` (:data:`LIST_COLUMNS`
    as dicts), and the cursor of the next page (None on the last)."""
    conds, params = where.where(reader.dialect)
    if before is not None:
        conds.append("(t.ts < ? OR (t.ts = ? AND t.request_id < ?))")
        params += [before.ts, before.ts, before.request_id]
    sql = f"SELECT {LIST_COLUMNS} FROM turns t"
    if conds:
        sql += " WHERE " + " AND ".join(conds)
    sql += " ORDER BY t.ts DESC, t.request_id DESC LIMIT ?"
    rows = await reader.rows(sql, [*params, size + 1])
    if len(rows) <= size:
        return rows, None
    rows = rows[:size]
    return rows, Cursor(float(rows[-1]["ts"]), rows[-1]["request_id"])


async def one(reader: TranscriptReader, request_id: str) -> dict[str, Any] | None:
    """Every column of the row ``request_id``, or None."""
    rows = await reader.rows("SELECT * FROM turns t WHERE t.request_id = ?", [request_id])
    return rows[0] if rows else None


async def steps(reader: TranscriptReader, request_id: str, max_steps: int = 100) -> list[dict[str, Any]]:
    """The rows of ``request_id``'s tool-loop steps (``<request id>.step1`` to
    ``.step<max_steps>``; ``tool_loop.max_steps`` is at most 100), in step order
    (:data:`LIST_COLUMNS`), looked up by primary key."""
    ids = [f"{request_id}.step{n}" for n in range(1, max_steps + 1)]
    rows = await reader.rows(
        f"SELECT {LIST_COLUMNS} FROM turns t WHERE t.request_id IN ({', '.join('?' * len(ids))})", ids
    )
    return sorted(rows, key=lambda r: _step_number(r["request_id"]))


def _step_number(request_id: str) -> int:
    tail = request_id.rpartition(".step")[2]
    return int(tail) if tail.isdigit() else 0


def parent_id(request_id: str) -> str | None:
    """The request id of the turn a step row ``<id>.step<n>`` belongs to; None for a turn's own."""
    head, sep, tail = request_id.rpartition(".step")
    return head if sep and tail.isdigit() else None
