"""A turn bound to a session: record what the client sent, rebuild the context for the
target deployment (compacting when its window cannot hold it), record the answer.

Binding: header ``x-turnstile-session`` wins; else ``metadata.turnstile_session`` of the
request body (both dialects carry ``metadata``); else a ``user`` field of the form
``session:<id>`` (OpenAI ``user``, Anthropic ``metadata.user_id``).

What is recorded, and where. With ``P`` the path from the root to the session leaf, its
*settled* part ``S`` is ``P`` without its trailing user messages and tool results: those are a
question whose answer never came (a turn still running elsewhere, or one that failed or was
killed), and nothing attaches below them. The *attach point* is the last entry of ``S`` (an
answer, or a compaction, thread or label entry; None for an empty session). With ``H`` the
messages of ``S`` and ``C`` the client's non-system messages, ``p`` their longest common prefix
(compared on :func:`_key`): ``p == len(H)`` appends ``C[p:]`` below the attach point (a client
resending everything, or sending only new messages to an empty session); ``0 < p < len(H)``
branches at ``H[p-1]`` (the client edited or regenerated history) and appends ``C[p:]`` there;
``p == 0`` with ``H`` non-empty takes ``C`` as the continuation (a client sending only its new
messages) and appends it below the attach point. What the turn appended, or where the client's
messages end when nothing was new, is the *turn leaf*.

A tool result among the client's new messages whose call is not in the request (a client that
sends only the result, as Responses- and thread-style clients do; the guards layer deferred it)
must pair with a call on the path it attaches below, and must not be that call's second result:
otherwise the turn is refused before anything is stored, with the guards' 400
(``orphan_tool_result`` / ``duplicate_tool_result``) naming the id and where it sits.

Concurrent turns on one session (no lock is held across a turn: turns take minutes and run on
many instances). A turn reads the session leaf once (its *base*); from then on it works on its
own turn leaf: the context it sends upstream is the path to that leaf, and everything it
appends (its new messages, tool-loop steps, a compaction) goes below it without moving the
session leaf (:data:`gateway.sessions.store.KEEP_LEAF`). Only its answer moves the session
leaf, by compare-and-set against the base (see :mod:`gateway.sessions.store`). Hence:

* the session leaf is always the end of a finished turn (or an entry an API call chose), never
  a question in flight, so a turn never sees another turn's unanswered question: turns that
  start while others run attach below the same finished interaction and are sibling branches
  (a log written before this rule may end at a dead question: ``S`` leaves it out);
* of turns that read the same base, the *first to finish* moves the session leaf to its answer;
  the others' questions and answers stay parent and child on their branches. A turn started
  after that answer attaches below it (a slower sibling never pulls the leaf off a
  conversation that continued);
* a turn that stores no answer (an upstream failure, the process killed mid-stream) leaves the
  leaf where it was: the next turn branches past its dangling question, so a
  rebuilt context never holds two user turns where the client sent one.

Session ids must match :data:`~gateway.sessions.store.SESSION_ID_PATTERN`; anything else is
refused (HTTP 400) before anything is stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from gateway.context import Budget, budget_for, build_context, message_bytes
from gateway.errors import GuardProblem, GuardViolation, InvalidRequest, UpstreamError
from gateway.guards.common import result_location
from gateway.schema import AssistantMessage, Message, Request, Response, SystemMessage, ToolResultMessage
from gateway.sessions.model import Entry, MessagePayload
from gateway.sessions.reserved import check_client_session_id
from gateway.sessions.store import KEEP_LEAF, LEAF, SessionStore

if TYPE_CHECKING:
    from gateway.config import Deployment
    from gateway.turn import Gateway, Turn

Compactor = Callable[[Budget, str], Awaitable[Entry | None]]
"""``async (budget, reason) -> the compaction entry appended, or None``."""

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
    :data:`~gateway.sessions.store.SESSION_ID_PATTERN` or of the gateway's own sessions
    (``resp_``, ``msg_``: :mod:`gateway.sessions.reserved`)."""
    sid = headers.get(HEADER) if headers is not None else None
    param = HEADER
    if not sid:
        value = request.metadata.get(METADATA_KEY)
        sid, param = (value if isinstance(value, str) else None), f"metadata.{METADATA_KEY}"
    if not sid and request.user and request.user.startswith(USER_PREFIX):
        sid, param = request.user[len(USER_PREFIX) :], "user"
    sid = sid.strip() if sid else None
    return check_client_session_id(sid, param) if sid else None


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

    from gateway.schema import TextPart, UserMessage

    if isinstance(msg, AssistantMessage):
        parts = [p.text for p in msg.content if isinstance(p, TextPart)]
        calls = [(c.id, c.name) for c in msg.tool_calls]
        return orjson.dumps(["assistant", parts, calls])
    if isinstance(msg, ToolResultMessage):
        return orjson.dumps(["tool", msg.tool_call_id])
    if isinstance(msg, UserMessage):
        return message_bytes(msg)
    return message_bytes(msg)


@dataclass(frozen=True)
class Recorded:
    """What :func:`record_request` did: ``appended`` messages; ``leaf`` the turn leaf (the
    last entry appended, or where the client's messages end on the tree when nothing was new;
    None: empty history); ``base`` the session leaf read (None: none), the only value its
    answer's compare-and-set moves the session leaf from."""

    appended: int
    leaf: str | None
    base: str | None


def settled_end(path: list[Entry], messages: list[Message | None]) -> int:
    """How many entries of ``path`` (root first; ``messages`` its entries' messages, None for
    other entries) are settled: the path without its trailing user messages and tool results
    (a question no stored answer follows). O(trailing entries)."""
    end = len(path)
    while end and messages[end - 1] is not None and not isinstance(messages[end - 1], AssistantMessage):
        end -= 1
    return end


async def record_request(store: SessionStore, session_id: str, request: Request) -> Recorded:
    """Append the client's messages the session does not hold yet below the attach point
    (see module doc), without moving the session leaf. Raises
    :class:`gateway.errors.GuardViolation` (nothing appended) for a tool result of the
    client's whose call is neither in the request nor on the path it attaches below, or whose
    call has a result there already."""
    client = [m for m in request.messages if not isinstance(m, SystemMessage)]
    await store.create_session(session_id)
    path = await store.path(session_id)
    base = path[-1].id if path else None
    messages = [e.message() for e in path]
    end = settled_end(path, messages)
    attach = path[end - 1].id if end else None
    held = [(e.id, m) for e, m in zip(path[:end], messages[:end], strict=True) if m is not None]
    p = 0
    while p < len(held) and p < len(client) and _key(held[p][1]) == _key(client[p]):
        p += 1
    if p == len(held) or p == 0:  # p == 0 with history held: the client sent only its new messages
        parent, below = attach, held
    else:
        parent, below = held[p - 1][0], held[:p]
    new = client[p:]
    check_deferred_results(request, new, [m for _, m in below], session_id)
    if not new:
        return Recorded(0, parent, base)
    return Recorded(len(new), await append_for_turn(store, session_id, list(new), parent=parent), base)


def check_deferred_results(
    request: Request, new: Sequence[Message], below: Sequence[Message], session_id: str
) -> None:
    """Refuse the tool results among ``new`` (the client's messages to append) whose call is
    not in ``request`` (the guards layer deferred them to here) unless a call on ``below``
    (the history they attach below) issued them and has no result there yet. Raises
    :class:`GuardViolation` naming each id and its place in the client's request."""
    deferred = {id(m) for m in new if isinstance(m, ToolResultMessage)}
    if not deferred:
        return
    in_request = {c.id for m in request.messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    calls = {c.id for m in below if isinstance(m, AssistantMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in below if isinstance(m, ToolResultMessage)}
    problems: list[GuardProblem] = []
    for i, msg in enumerate(request.messages):
        if id(msg) not in deferred or not isinstance(msg, ToolResultMessage):
            continue
        if msg.tool_call_id in in_request:
            continue
        tid, loc = msg.tool_call_id, result_location(i, msg)
        if tid not in calls:
            problems.append(
                GuardProblem(
                    "orphan_tool_result",
                    tid,
                    loc,
                    f"tool result {tid} ({loc}) has no matching earlier tool call, in the request or "
                    f"in session {session_id!r}",
                )
            )
        elif tid in answered:
            problems.append(
                GuardProblem(
                    "duplicate_tool_result",
                    tid,
                    loc,
                    f"tool result {tid} ({loc}) is a second result for tool call {tid} (session "
                    f"{session_id!r} holds its result already)",
                )
            )
    if problems:
        raise GuardViolation(problems)


async def append_for_turn(
    store: SessionStore, session_id: str, messages: list[Message], *, parent: str | None
) -> str | None:
    """Append ``messages`` as a chain under ``parent`` without moving the session leaf (a
    turn's question, a tool-loop step); returns the id of the last entry (the new turn leaf),
    or ``parent`` when there is nothing to append."""
    if not messages:
        return parent
    entries, _ = await store.append_at(
        session_id,
        [("message", MessagePayload(message=m)) for m in messages],
        parent_id=parent,
        expect_leaf=KEEP_LEAF,
    )
    return entries[-1].id


async def record_response(
    store: SessionStore, session_id: str, response: Response, recorded: Recorded | None = None
) -> bool:
    """Append the assistant message of ``response`` (withheld tool calls are not in it) under
    the turn leaf of ``recorded`` and move the session leaf to it if the leaf is still that
    turn's base (compare-and-set); without ``recorded``, under the session's current leaf.
    Returns whether the session leaf moved to it (False too when there is nothing to append)."""
    if not response.message.content:
        return False
    if recorded is None:
        await store.append(session_id, "message", MessagePayload(message=response.message))
        return True
    (entry,), moved = await store.append_at(
        session_id,
        [("message", MessagePayload(message=response.message))],
        parent_id=recorded.leaf,
        expect_leaf=recorded.base,
    )
    if not moved:
        log.info("session_turn_branched", session=session_id, at=recorded.leaf, leaf=entry.id)
    return moved


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
    compactor: Compactor | None = None,
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


def foreign_own_keys(messages: list[Message], api: str, sent: list[Message] | None = None) -> list[str]:
    """The own keys (:class:`gateway.schema.OwnKeys`: the message's, its parts' and its tool
    calls' ``own_keys``) of another wire API than ``api`` on ``messages`` (put back or rebuilt
    from the session log), each once, in order: an upstream of ``api`` does not get them.
    Messages equal to one of ``sent`` (the request as the layer above had it, whose own keys
    were named already) are skipped. Empty for the usual context (no message holds own keys)."""
    found: dict[str, None] = {}
    skip: set[bytes] | None = None
    for msg in messages:
        own = msg.own
        if own is None or own.api == api:
            continue
        if sent is not None:
            if skip is None:
                skip = {message_bytes(m) for m in sent if m.own is not None}
            if message_bytes(msg) in skip:
                continue
        found.update(dict.fromkeys(own.keys))
        for part in msg.content:
            keys = getattr(part, "own_keys", None)
            if keys:
                found.update(dict.fromkeys(keys))
    return list(found)


def note_foreign_keys(turn: Turn, keys: list[str], dep: Deployment) -> None:
    """Note on ``turn`` (transcript row, ``x-turnstile-dropped``; one log line) the own keys
    ``keys`` of earlier turns' messages that ``dep`` does not get, each as ``history.<key>``."""
    for key in keys:
        turn.note_dropped(
            {
                "kind": "dropped",
                "field": f"history.{key}",
                "values": [],
                "deployment": dep.name,
                "reason": "kept in the session log from an earlier turn for another wire API; model "
                f"{dep.name!r} is served by {dep.api}",
            }
        )
    if keys:
        log.info("fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=keys)


# ---------------------------------------------------------------------------- a bound turn


def compactor_for(gw: Gateway, session_id: str, binding: SessionBinding | None = None) -> Compactor | None:
    """``async (budget, reason) -> Entry | None`` compacting ``session_id`` with the configured
    ``sessions.compaction_deployment``, or None when none is configured/enabled. With a turn's
    ``binding`` it compacts the turn's own leaf and moves that leaf to the compaction entry
    (and the turn's base with it when the turn appended nothing: the entry went under the
    session leaf and moved it); without, the session's leaf."""
    from gateway.compaction import compact, deployment_summarizer

    cfg = gw.config.sessions
    name = cfg.compaction_deployment
    dep = gw.table.deployments.get(name) if name else None
    if dep is None:
        return None
    summarizer = deployment_summarizer(gw.providers[dep.api], dep, gw.table.keys.get(dep.name))

    async def run(budget: Budget, reason: str) -> Entry | None:
        leaf = binding.leaf if binding is not None else LEAF
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
        if entry is not None and binding is not None and leaf != LEAF:
            binding.leaf = entry.id
            if binding.base == leaf:  # the entry moved the session leaf (or lost to an answer)
                binding.base = entry.id
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


class SessionBinding:
    """A turn's handle on the session it is bound to (:class:`gateway.turn.SessionHandle`):
    made by the session layer (:meth:`open` records the client's new messages and reads the
    session leaf once, its ``base``); the tool loop appends its steps through :meth:`append`,
    the window layer asks :meth:`view` for the context of each target, the session layer
    appends the answer with :meth:`finish`. Every entry goes under the turn's own leaf
    (``leaf``); only the answer moves the session leaf (from ``base``: module doc)."""

    def __init__(self, gw: Gateway, session_id: str, request_id: str) -> None:
        self.gw = gw
        self.store: SessionStore = gw.sessions
        self.session_id = session_id
        self.request_id = request_id
        self.leaf: str | None = LEAF  # the turn leaf (LEAF until read; None: empty history)
        self.base: str | None = None  # the session leaf read by open (None: none)
        self.overflow_retried = False

    @classmethod
    async def open(cls, gw: Gateway, session_id: str, request_id: str, request: Request) -> SessionBinding:
        """Bind a turn: append the client's messages the session does not hold yet
        (:func:`record_request`; raises its :class:`GuardViolation`) and keep the turn leaf
        and base."""
        binding = cls(gw, session_id, request_id)
        recorded = await record_request(binding.store, session_id, request)
        binding.leaf, binding.base = recorded.leaf, recorded.base
        log.info("session_recorded", request_id=request_id, session=session_id, appended=recorded.appended)
        return binding

    async def append(self, messages: list[Message]) -> None:
        """Append ``messages`` (e.g. a tool-loop step) under the turn leaf, which then moves to
        the last of them (the session leaf does not move)."""
        if not messages:
            return
        if self.leaf == LEAF:  # never read (a binding made without open)
            await self.store.append_many(
                self.session_id, [("message", MessagePayload(message=m)) for m in messages]
            )
            return
        self.leaf = await append_for_turn(self.store, self.session_id, messages, parent=self.leaf)

    async def view(self, request: Request, dep: Deployment, *, reason: str = "window") -> Request:
        """The request for ``dep`` with the session's context rebuilt for its window
        (:func:`view_for`, compacting when configured); the pairing guard runs over the rebuilt
        context before it may go upstream (raises :class:`gateway.errors.GuardViolation`)."""
        from gateway import invariants

        rebuilt = await view_for(
            self.store,
            self.session_id,
            request,
            dep,
            compactor=compactor_for(self.gw, self.session_id, self),
            reason=reason,
            leaf=self.leaf,
        )
        return invariants.check_request(rebuilt, self.gw.config.guards).request

    async def after_overflow(self, request: Request, dep: Deployment, err: UpstreamError) -> Request | None:
        """After an upstream context-overflow error: compact the session (reason
        ``overflow``, with half the budget the failed request assumed) and return the request
        to retry once; None when the error is something else, no compaction deployment is
        configured, or a retry was already made."""
        if not is_context_overflow(err) or self.overflow_retried:
            return None
        compactor = compactor_for(self.gw, self.session_id, self)
        if compactor is None:
            return None
        self.overflow_retried = True
        window = window_of(dep) or 10**9
        budget = budget_for(
            request, window, reserved_output=request.max_output_tokens or dep.max_output_tokens or 4096
        )
        await compactor(Budget(window=max(1, budget.available // 2)), "overflow")
        log.info(
            "overflow_compacted_retrying",
            request_id=self.request_id,
            session=self.session_id,
            deployment=dep.name,
        )
        return await self.view(request, dep, reason="overflow")

    async def finish(self, response: Response | None) -> None:
        """Append the turn's answer under its leaf, moving the session leaf there if it is
        still the turn's base (:func:`record_response`); a store failure is logged, never
        raised (the client already has its answer)."""
        if response is None:
            return
        try:
            recorded = None if self.leaf == LEAF else Recorded(0, self.leaf, self.base)
            await record_response(self.store, self.session_id, response, recorded)
        except Exception:
            log.exception("session_record_failed", request_id=self.request_id, session=self.session_id)
