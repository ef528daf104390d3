"""Anthropic message threads at the edge (beta ``message-threads-2026-08-12``): the request's
``thread`` field, the continued request, and the id its answer carries.

Reference: the official SDK (``anthropic`` 2.14: ``types/beta/beta_message_thread_param.py``,
``lib/threads/_thread_state.py``). ``{"type": "create"}`` asks the server to hold the
conversation under the answer's ``id``; ``{"type": "continue", "previous_message_id": id}``
sends only the messages the server lacks and leaves out ``system`` and ``tools``, which the
server keeps from the thread's create (the SDK's ``CREATE_ONLY_FIELDS``). The answer's shape is
unchanged: its ``id`` is what the next turn continues from.

The gateway holds a thread in its session log (:mod:`gateway.sessions.threads`); the server
puts the thread's system prompt, tools and history into a continued request
(:func:`continued`) before the pipeline sees it, so the guards check the whole conversation.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.edges._common import JSONObj, as_obj, join, req
from gateway.errors import InvalidRequest, ThreadFingerprintMismatch, ThreadUnsupported
from gateway.schema import Message, Request, SystemMessage, ToolDefinition

PATH = "thread"
TOP_LEVEL_SYSTEM = "system"
"""The ``src`` of a system message from the top-level ``system`` field."""


class Thread(BaseModel):
    """A request's ``thread``: ``kind`` ``create`` or ``continue`` (from
    ``previous_message_id``); ``message_id`` is the id this turn's answer carries, set by the
    server once the thread's session is known."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["create", "continue"]
    previous_message_id: str | None = None
    message_id: str | None = None


class ThreadedRequest(Request):
    """A :class:`Request` that names a message thread. ``thread`` is the edge's alone: never
    dumped, never read below the edge."""

    thread: Thread = Field(exclude=True)


def parse_thread(raw: object) -> Thread:
    """The ``thread`` field of a request body. Raises :class:`InvalidRequest` naming the
    field for a value that is not ``{"type": "create"}`` or ``{"type": "continue",
    "previous_message_id": "<id>"}``."""
    obj: JSONObj = as_obj(raw, PATH)
    kind = req(obj, "type", str, PATH)
    allowed = {"create": {"type"}, "continue": {"type", "previous_message_id"}}.get(kind)
    if allowed is None:
        raise InvalidRequest(f"thread.type: expected create or continue, got {kind!r}", param="thread.type")
    for key in obj:
        if key not in allowed:
            raise InvalidRequest(
                f"{join(PATH, key)}: unknown field of a {kind} thread", param=join(PATH, key)
            )
    if kind == "create":
        return Thread(kind="create")
    previous = req(obj, "previous_message_id", str, PATH)
    if not previous:
        raise InvalidRequest(
            "thread.previous_message_id: must not be empty", param="thread.previous_message_id"
        )
    return Thread(kind="continue", previous_message_id=previous)


def threaded(request: Request, thread: Thread) -> ThreadedRequest:
    """``request`` naming ``thread`` (no copy of its messages)."""
    return ThreadedRequest.model_construct(
        _fields_set=request.model_fields_set | {"thread"}, **request.__dict__, thread=thread
    )


def thread_of(request: Request) -> Thread | None:
    """The thread a parsed request names, or None."""
    return request.thread if type(request) is ThreadedRequest else None


def check_threadable(request: Request) -> None:
    """Refuse what a thread cannot hold: a ``role: "system"`` message inside ``messages`` (the
    session log keeps no system message in place, and moving it into the top-level prompt
    would change the conversation). Raises :class:`ThreadUnsupported` naming the message, on
    which the SDK's tool runner resends the whole conversation without ``thread``."""
    for m in request.messages:
        if type(m) is SystemMessage and m.src != TOP_LEVEL_SYSTEM:
            where = m.src or "messages"
            raise ThreadUnsupported(
                f"{where}: a system message inside messages cannot be held in a thread; "
                "send the whole conversation without thread",
                param=where,
            )


def settings(request: Request) -> tuple[list[SystemMessage], list[ToolDefinition], list[str]]:
    """What a thread keeps from the request that creates it: the top-level system prompt,
    the tools and the MCP servers of ``mcp`` tool entries."""
    system = [m for m in request.messages if type(m) is SystemMessage and m.src == TOP_LEVEL_SYSTEM]
    return system, list(request.tools), list(request.mcp_servers)


def created(request: ThreadedRequest, message_id: str) -> ThreadedRequest:
    """A ``create`` request answered as ``message_id``."""
    return request.model_copy(update={"thread": request.thread.model_copy(update={"message_id": message_id})})


def _dumped(items: list[SystemMessage] | list[ToolDefinition] | list[str]) -> list[object]:
    return [i.model_dump(mode="json") if isinstance(i, BaseModel) else i for i in items]


def continued(
    request: ThreadedRequest,
    message_id: str,
    *,
    system: list[SystemMessage],
    tools: list[ToolDefinition],
    mcp_servers: list[str],
    history: list[Message],
) -> ThreadedRequest:
    """A ``continue`` request answered as ``message_id``: the thread's ``system`` first, then
    its ``history`` (schema messages, oldest first), then the client's new messages; the
    thread's tools and MCP servers. A request may repeat a create-only field only unchanged:
    raises :class:`ThreadFingerprintMismatch` naming ``system`` or ``tools`` otherwise."""
    own_system, own_tools, own_mcp = settings(request)
    if own_system and _dumped(own_system) != _dumped(system):
        raise ThreadFingerprintMismatch(
            "system: differs from the system prompt the thread was created with; leave it out "
            "of a continue, or start a new thread (thread.type create) to change it",
            param="system",
        )
    if (own_tools or own_mcp) and (_dumped(own_tools), own_mcp) != (_dumped(tools), mcp_servers):
        raise ThreadFingerprintMismatch(
            "tools: differ from the tools the thread was created with; leave them out of a "
            "continue, or start a new thread (thread.type create) to change them",
            param="tools",
        )
    head = [m.model_copy(update={"src": TOP_LEVEL_SYSTEM}) for m in system]
    rest = [m for m in request.messages if not (type(m) is SystemMessage and m.src == TOP_LEVEL_SYSTEM)]
    thread = request.thread.model_copy(update={"message_id": message_id})
    return request.model_copy(
        update={
            "messages": [*head, *history, *rest],
            "tools": list(tools),
            "mcp_servers": list(mcp_servers),
            "thread": thread,
            "logged_own": any(m.own is not None for m in history),
        }
    )


__all__ = [
    "Thread",
    "ThreadedRequest",
    "check_threadable",
    "continued",
    "created",
    "parse_thread",
    "settings",
    "thread_of",
    "threaded",
]
