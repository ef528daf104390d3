"""Format-neutral records the replay readers produce and the replay runner consumes.

Readers (``gateway/edges/recorded`` for agent conversations, ``gateway/providers/recorded``
for recorded provider traffic) turn a recorded file into these records; the runner
(:mod:`gateway.replay.runner`) never looks at a recorded format itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Issue:
    """Input that could not be read: ``file``, 1-based ``line`` when known, and why. The
    file (or the part of it) is skipped and the run goes on."""

    file: str
    line: int | None
    message: str


@dataclass
class RecordedTurn:
    """One assistant turn of a conversation.

    ``index`` is the position of the assistant message in :attr:`Conversation.messages`;
    the request of the turn is ``messages[:index]`` (plus :attr:`Conversation.head`).
    ``usage`` is the recorded usage in Turnstile's convention (``input_tokens`` uncached,
    ``cache_read_tokens``, ``cache_write_tokens``, ``output_tokens``; tokens), ``cost_usd``
    the recorded cost in USD, ``model`` the model that answered. ``stop`` is the recorded
    stop reason in Turnstile's vocabulary when the recording has one.
    """

    index: int
    model: str | None = None
    usage: dict[str, int] | None = None
    cost_usd: float | None = None
    stop: str | None = None


@dataclass
class Conversation:
    """A recorded agent conversation rebuilt as client-dialect messages.

    ``dialect`` is ``openai_chat`` or ``anthropic_messages``; ``head`` the request fields
    other than ``messages`` (model, tools, system, max_tokens ...) as the dialect spells them;
    ``messages`` the dialect's message objects in order, assistant answers included;
    ``views`` optionally replaces the plain prefix: ``views[k]`` is the message list sent
    at turn ``k`` (used after a compaction, when the context is a rebuilt view of the log).
    ``source`` the file and ``name`` the conversation inside it. ``cost_scope`` says what
    recorded cost covers when it is known only per conversation (``total_cost_usd``).
    """

    source: str
    name: str
    dialect: str
    head: dict[str, Any]
    messages: list[dict[str, Any]]
    turns: list[RecordedTurn]
    views: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    total_cost_usd: float | None = None
    total_usage: dict[str, int] | None = None
    notes: list[str] = field(default_factory=list)

    def request_messages(self, k: int) -> list[dict[str, Any]]:
        """The message list the agent sent for turn ``k`` (0-based turn number)."""
        if k in self.views:
            return self.views[k]
        return self.messages[: self.turns[k].index]


@dataclass
class Exchange:
    """One recorded HTTP exchange with a provider.

    ``url`` as recorded ('' when unknown); ``request`` the decoded JSON request body (or
    None); ``status`` the HTTP status; ``body`` the response body bytes (SSE text when
    ``stream``); ``api`` the wire API when the reader knows it (vercel fixtures have no URL),
    else None and the classifier decides; ``name`` locates it in the file
    (``interactions[3]``).
    """

    source: str
    name: str
    url: str
    request: Any
    status: int
    body: bytes
    stream: bool
    api: str | None = None
    line: int | None = None
