"""A turn bound to a session: record what the client sent, rebuild the context for the
target deployment (compacting when its window cannot hold it), record the answer.

Binding: header ``x-turnstile-session`` wins; else ``metadata.turnstile_session`` of the
request body (both dialects carry ``metadata``); else a ``user`` field of the form
``session:<id>`` (OpenAI ``user``, Anthropic ``metadata.user_id``).

What is recorded: the client's non-system messages that the session does not hold yet. With
``H`` the session's message history (root→leaf) and ``C`` the client's messages, ``p`` their
longest common prefix: ``p == len(H)`` appends ``C[p:]`` (a client resending everything, or
sending only new messages when H is empty); ``0 < p < len(H)`` branches at ``H[p-1]`` (the
client edited history) and appends ``C[p:]``; ``p == 0`` with H non-empty treats ``C`` as the
continuation (a client sending only its new messages). Comparison is on canonical bytes.

Concurrent turns on one session: a turn reads the session leaf once (when recording the
request) and from then on works on its own *turn leaf* (kept on the turn context): the
context it sends upstream is the path to that leaf, and every entry it appends (its new
messages, tool-loop steps, a compaction, the answer) goes under it, with a compare-and-set of
the session leaf (see :mod:`gateway.sessions.store`). A turn that lost the race is a branch;
its question and answer stay parent and child. Session ids must match
:data:`~gateway.sessions.store.SESSION_ID_PATTERN`; anything else is refused (HTTP 400) before
anything is stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from gateway.context import Budget, budget_for, build_context, message_bytes
from gateway.errors import InvalidRequest, UpstreamError
from gateway.schema import Message, Request, Response, SystemMessage
from gateway.sessions.model import Entry, MessagePayload
from gateway.sessions.store import LEAF, SessionStore, check_session_id

if TYPE_CHECKING:
    from gateway.config import Deployment

log = structlog.get_logger("turnstile.sessions")

HEADER = "x-turnstile-session"
METADATA_KEY = "turnstile_session"
USER_PREFIX = "session:"
OVERFLOW_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "exceeds the maximum",
    "too long for the model",
)


def session_id_for(headers: Any, request: Request) -> str | None:
    """The session a turn binds to (see module doc), or None. ``headers`` is any mapping with
    case-insensitive ``get`` (Starlette ``Headers``). Raises :class:`InvalidRequest` (HTTP 400,
    ``param`` naming where the id came from) for an id outside
    :data:`~gateway.sessions.store.SESSION_ID_PATTERN`."""
    sid = headers.get(HEADER) if headers is not None else None
    param = HEADER
    if not sid:
        value = request.metadata.get(METADATA_KEY)
        sid, param = (value if isinstance(value, str) else None), f"metadata.{METADATA_KEY}"
    if not sid and request.user and request.user.startswith(USER_PREFIX):
        sid, param = request.user[len(USER_PREFIX) :], "user"
    sid = sid.strip() if sid else None
    return check_session_id(sid, param) if sid else None


def is_context_overflow(err: Exception) -> bool:
    """Whether an upstream error says the request exceeded the model's context window
    (HTTP 400/413 whose message names the context length; wording from OpenAI, Anthropic and
    Gemini error bodies)."""
    if not isinstance(err, UpstreamError) or err.status not in (400, 413):
        return False
    text = f"{err.message} {err.body or ''}".lower()
    return any(m in text for m in OVERFLOW_MARKERS)


def _key(msg: Message) -> bytes:
    """What must match for a client's message to be "the same" as a stored one: role, text,
    tool-call ids and names, tool-result ids. Looser than :func:`message_bytes` because a client
    dialect may drop what the gateway stored (thinking provenance, raw argument spacing)."""
    import orjson

    from gateway.schema import AssistantMessage, TextPart, ToolResultMessage, UserMessage

    if isinstance(msg, AssistantMessage):
        parts = [p.text for p in msg.content if isinstance(p, TextPart)]
        calls = [(c.id, c.name) for c in msg.tool_calls]
        return orjson.dumps(["assistant", parts, calls])
    if isinstance(msg, ToolResultMessage):
        return orjson.dumps(["tool", msg.tool_call_id])
    if isinstance(msg, UserMessage):
        return message_bytes(msg)
    return message_bytes(msg)


async def record_request(store: SessionStore, session_id: str, request: Request) -> tuple[int, str | None]:
    """Append the client's messages the session does not hold yet (see module doc) under the
    leaf read now; returns ``(how many were appended, the turn leaf)`` (None: empty history)."""
    client = [m for m in request.messages if not isinstance(m, SystemMessage)]
    await store.create_session(session_id)
    path = await store.path(session_id)
    read = path[-1].id if path else None
    held = [(e.id, e.message()) for e in path if e.type == "message"]
    p = 0
    while p < len(held) and p < len(client) and _key(held[p][1]) == _key(client[p]):  # type: ignore[arg-type]
        p += 1
    if p == len(held) or p == 0:
        new = client[p:]  # p == 0 with history held: the client sent only its new messages
        parent = read
    else:
        new, parent = client[p:], held[p - 1][0]
    if not new:
        return 0, read
    return len(new), await append_for_turn(store, session_id, list(new), parent=parent, expect=read)


async def append_for_turn(
    store: SessionStore, session_id: str, messages: list[Message], *, parent: str | None, expect: str | None
) -> str | None:
    """Append ``messages`` as a chain under ``parent``, moving the session leaf only if it is
    still ``expect`` (compare-and-set); returns the id of the last entry (the new turn leaf),
    or ``parent`` when there is nothing to append."""
    if not messages:
        return parent
    entries, moved = await store.append_at(
        session_id,
        [("message", MessagePayload(message=m)) for m in messages],
        parent_id=parent,
        expect_leaf=expect,
    )
    if not moved:
        log.info("session_turn_branched", session=session_id, at=parent, leaf=entries[-1].id)
    return entries[-1].id


async def record_response(
    store: SessionStore, session_id: str, response: Response, leaf: str | None = LEAF
) -> None:
    """Append the assistant message of ``response`` (withheld tool calls are not in it) under
    ``leaf`` (a turn leaf; default: the session's current leaf)."""
    if not response.message.content:
        return
    if leaf == LEAF:
        await store.append(session_id, "message", MessagePayload(message=response.message))
    else:
        await append_for_turn(store, session_id, [response.message], parent=leaf, expect=leaf)


def _turn_leaf(ctx: Any) -> str | None:
    """The turn leaf of ``ctx`` (:data:`LEAF` before the turn read the session)."""
    return getattr(ctx, "_session_leaf", LEAF)


async def record_messages(gw: Any, ctx: Any, messages: list[Message]) -> None:
    """Append ``messages`` of a session-bound turn (e.g. a tool-loop step) under its turn leaf,
    which then moves to the last of them (no-op when unbound)."""
    if messages and _bound(gw, ctx):
        leaf = _turn_leaf(ctx)
        if leaf == LEAF:  # the turn never read the session (not through prepare_turn)
            items = [("message", MessagePayload(message=m)) for m in messages]
            await gw.sessions.append_many(ctx.session_id, items)
            return
        ctx._session_leaf = await append_for_turn(
            gw.sessions, ctx.session_id, messages, parent=leaf, expect=leaf
        )


def window_of(dep: Deployment) -> int | None:
    """Context window of ``dep`` in tokens (config, else the model catalog), or None."""
    from gateway.providers.catalog import context_window

    return context_window(dep)


async def view_for(
    store: SessionStore,
    session_id: str,
    request: Request,
    dep: Deployment,
    *,
    compactor: Any = None,
    reason: str = "window",
    leaf: str | None = LEAF,
) -> Request:
    """``request`` with its history replaced by the session's context rebuilt for ``dep``.

    The history is the path to ``leaf`` (a turn leaf; None: empty; default: the session's
    leaf). ``compactor`` (``async (budget, reason) -> Entry | None``, the compaction entry it
    appended) runs when the window cannot hold the history; without one, or when even the
    last interaction group does not fit, raises :class:`InvalidRequest` naming the sizes
    (tokens).
    """
    window = window_of(dep) or 10**9
    budget: Budget = budget_for(
        request, window, reserved_output=request.max_output_tokens or dep.max_output_tokens or 4096
    )

    async def read(at: str | None) -> list[Entry]:
        if at == LEAF:
            return await store.path(session_id)
        return await store.path(session_id, at) if at is not None else []

    ctx = build_context(await read(leaf), budget)
    if (ctx.dropped or not ctx.fits) and compactor is not None:
        entry = await compactor(budget, reason)
        if entry is not None and leaf != LEAF:
            leaf = entry.id
        ctx = build_context(await read(leaf), budget)
    if ctx.dropped and compactor is None:
        raise InvalidRequest(
            f"session {session_id!r} needs {ctx.tokens_all} tokens of history and {dep.name!r} has room for "
            f"{budget.available}; configure sessions.compaction_deployment to compact it",
            param="messages",
        )
    if not ctx.fits:
        raise InvalidRequest(
            f"the latest turn of session {session_id!r} alone is {ctx.tokens} tokens; "
            f"{dep.name!r} has room for "
            f"{budget.available}",
            param="messages",
        )
    system: list[Message] = [m for m in request.messages if isinstance(m, SystemMessage)]
    log.info(
        "context_rebuilt",
        session=session_id,
        deployment=dep.name,
        tokens=ctx.tokens,
        available=budget.available,
        kept_groups=len(ctx.kept),
        repairs=len(ctx.repairs),
    )
    return request.model_copy(update={"messages": system + ctx.messages})


# ---------------------------------------------------------------------------- pipeline hooks
# ``gw`` is a :class:`gateway.pipeline.Gateway` and ``ctx`` a ``TurnContext`` (typed Any to keep
# this module below the pipeline in the import graph).


def _bound(gw: Any, ctx: Any) -> bool:
    return bool(getattr(ctx, "session_id", None)) and getattr(gw, "sessions", None) is not None


async def prepare_turn(gw: Any, ctx: Any, request: Request) -> None:
    """Record the client's new messages of a session-bound turn (no-op when unbound)."""
    if _bound(gw, ctx):
        n, ctx._session_leaf = await record_request(gw.sessions, ctx.session_id, request)
        log.info("session_recorded", request_id=ctx.request_id, session=ctx.session_id, appended=n)


def compactor_for(gw: Any, session_id: str, ctx: Any = None) -> Any:
    """``async (budget, reason) -> Entry | None`` compacting ``session_id`` with the configured
    ``sessions.compaction_deployment``, or None when none is configured/enabled. With a turn
    ``ctx`` it compacts the turn's own leaf and moves that leaf to the compaction entry;
    without, the session's leaf."""
    from gateway.compaction import compact, deployment_summarizer

    cfg = gw.config.sessions
    name = cfg.compaction_deployment
    dep = gw.table.deployments.get(name) if name else None
    if dep is None:
        return None
    summarizer = deployment_summarizer(gw.providers[dep.api], dep, gw.table.keys.get(dep.name))

    async def run(budget: Budget, reason: str) -> Entry | None:
        leaf = _turn_leaf(ctx) if ctx is not None else LEAF
        entry = await compact(
            gw.sessions,
            session_id,
            summarizer=summarizer,
            budget=budget,
            summarizer_model=dep.model,
            deployment=dep.name,
            reason=reason,
            keep_ratio=cfg.keep_ratio,
            chunk_tokens=cfg.chunk_tokens,
            leaf_id=leaf,
        )
        if entry is not None and ctx is not None and leaf != LEAF:
            ctx._session_leaf = entry.id
        log.info(
            "session_compacted",
            session=session_id,
            reason=reason,
            deployment=dep.name,
            entry=entry.id if entry else None,
            tokens_before=entry.payload["tokens_before"] if entry else None,
            tokens_after=entry.payload["tokens_after"] if entry else None,
        )
        return entry

    return run


async def target_request(
    gw: Any, ctx: Any, request: Request, dep: Deployment, *, reason: str = "window"
) -> Request:
    """The request for ``dep`` with the session's rebuilt context (unchanged when unbound);
    the pairing guard runs over the rebuilt context before it may go upstream."""
    if not _bound(gw, ctx):
        return request
    from gateway import invariants

    view = await view_for(
        gw.sessions,
        ctx.session_id,
        request,
        dep,
        compactor=compactor_for(gw, ctx.session_id, ctx),
        reason=reason,
        leaf=_turn_leaf(ctx),
    )
    return invariants.check_request(view, gw.config.guards).request


async def compact_after_overflow(
    gw: Any, ctx: Any, request: Request, dep: Deployment, err: UpstreamError
) -> Request | None:
    """After an upstream context-overflow error on a session-bound turn: compact the session
    (reason ``overflow``, with half the budget the failed request assumed) and return the
    request to retry once; None when the error is something else, the turn is unbound, no
    compaction deployment is configured, or a retry was already made."""
    if not _bound(gw, ctx) or not is_context_overflow(err) or getattr(ctx, "_overflow_retried", False):
        return None
    compactor = compactor_for(gw, ctx.session_id, ctx)
    if compactor is None:
        return None
    ctx._overflow_retried = True
    window = window_of(dep) or 10**9
    budget = budget_for(
        request, window, reserved_output=request.max_output_tokens or dep.max_output_tokens or 4096
    )
    await compactor(Budget(window=max(1, budget.available // 2)), "overflow")
    log.info(
        "overflow_compacted_retrying", request_id=ctx.request_id, session=ctx.session_id, deployment=dep.name
    )
    return await target_request(gw, ctx, request, dep, reason="overflow")


async def finish_turn(gw: Any, ctx: Any, response: Response | None) -> None:
    """Record the answer of a session-bound turn; a store failure is logged, never raised
    (the client already has its answer)."""
    if response is None or not _bound(gw, ctx):
        return
    try:
        leaf = _turn_leaf(ctx)
        if leaf == LEAF:
            await record_response(gw.sessions, ctx.session_id, response)
        elif response.message.content:
            ctx._session_leaf = await append_for_turn(
                gw.sessions, ctx.session_id, [response.message], parent=leaf, expect=leaf
            )
    except Exception:
        log.exception("session_record_failed", request_id=ctx.request_id, session=ctx.session_id)
