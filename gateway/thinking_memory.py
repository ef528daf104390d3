"""Signed thinking kept server-side, keyed by the tool-call ids of the answer it came with.

A thinking model's answer that stops for tool calls starts with signed reasoning, and the
next request of that tool loop must send it back unchanged: Anthropic refuses a continuation
whose final assistant turn does not start with a thinking block while thinking is on
("Extended thinking", "Preserving thinking blocks":
https://docs.claude.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks).
A client of a dialect that has no slot for it, or that drops fields it does not know (the
plain ``openai`` SDK user who builds the assistant message by hand), sends the tool calls
back without it. The gateway remembers the signed parts of every answer that has tool calls
(:meth:`ThinkingMemory.remember`) and puts them back (:meth:`ThinkingMemory.restore`) when an
assistant message with those tool calls returns without signed thinking — as
:class:`gateway.signers.SignerMemory` remembers who signed what.

Bounded: at most ``entries`` answers (least recently used go first) and each for ``ttl_s``
seconds (config ``thinking_memory``). What is evicted is not restored; the target layer then
turns thinking off for that request and says so (``x-turnstile-dropped: thinking``).

Shared between instances (``redis.url``, :mod:`gateway.fleet.memory`): ``listener`` hears every
answer remembered (as :func:`entry_data`), :meth:`ThinkingMemory.missing` names the tool calls
a request would need restored that this process does not know, and :meth:`ThinkingMemory.adopt`
takes what another instance remembered.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.guards.common import Repair
from gateway.schema import (
    AssistantMessage,
    AssistantPart,
    Message,
    RedactedThinkingPart,
    Request,
    Response,
    ThinkingPart,
    ToolCallPart,
    evolve,
)

SignedPart = ThinkingPart | RedactedThinkingPart


@dataclass(frozen=True)
class _Entry:
    """The signed parts of one answer: ``groups[k]`` are those that stood before the answer's
    ``k``-th tool call (``groups[0]``: before the first call, the whole head of the answer),
    ``tail`` those after the last call; ``calls`` the answer's tool-call ids in order and
    ``names`` their tool names (a message naming other tools under those ids is not that answer)."""

    calls: tuple[str, ...]
    names: tuple[str, ...]
    groups: tuple[tuple[SignedPart, ...], ...]
    tail: tuple[SignedPart, ...]
    expires: float


def _signed(part: object) -> bool:
    """True for thinking with a signature and a provenance, or redacted thinking with one."""
    if type(part) is ThinkingPart:
        return bool(part.signature) and part.provenance is not None
    if type(part) is RedactedThinkingPart:
        return part.provenance is not None
    return False


class ThinkingMemory:
    """Tool-call id -> the signed thinking of the answer that made the call (bounded LRU + TTL).

    ``entries``: answers kept (each is reachable by every one of its tool-call ids);
    ``ttl_s``: seconds an answer is kept; ``clock``: monotonic seconds (tests pass their own).
    """

    def __init__(
        self, entries: int = 20_000, ttl_s: float = 3600.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.entries = entries
        self.ttl_s = ttl_s
        self.clock = clock
        self._answers: OrderedDict[str, _Entry] = OrderedDict()  # first call id -> entry
        self._by_call: dict[str, str] = {}  # every call id -> first call id
        self._lock = threading.Lock()  # the guards layer restores long requests in a worker thread
        self.listener: Callable[[dict[str, Any]], None] | None = None
        """Told of every answer remembered, as :func:`entry_data` (:mod:`gateway.fleet.memory`)."""

    def __len__(self) -> int:
        return len(self._answers)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._answers.clear()
            self._by_call.clear()

    def remember(self, response: Response) -> None:
        """Keep the signed thinking of ``response`` when it has tool calls and signed thinking
        (parts with a signature and a provenance); otherwise do nothing."""
        content = response.message.content
        if not any(type(p) is ToolCallPart for p in content) or not any(_signed(p) for p in content):
            return
        calls: list[str] = []
        names: list[str] = []
        groups: list[tuple[SignedPart, ...]] = []
        pending: list[SignedPart] = []
        for p in content:
            if type(p) is ToolCallPart:
                calls.append(p.id)
                names.append(p.name)
                groups.append(tuple(pending))
                pending = []
            elif _signed(p):
                pending.append(p)  # type: ignore[arg-type]
        if self.entries <= 0:
            return
        key = calls[0]
        entry = _Entry(tuple(calls), tuple(names), tuple(groups), tuple(pending), self.clock() + self.ttl_s)
        with self._lock:
            self._drop(key)
            self._answers[key] = entry
            for cid in calls:
                self._by_call[cid] = key
            while len(self._answers) > self.entries:
                self._drop(next(iter(self._answers)))
        if self.listener is not None:
            self.listener(entry_data(entry, self.ttl_s))

    def adopt(self, data: dict[str, Any]) -> None:
        """Keep an answer another instance remembered (:func:`entry_data`'s shape, with
        ``ttl_s`` the seconds it has left). Raises ``ValueError`` (pydantic's
        ``ValidationError``) for data of another shape."""
        parts = [[_part(p) for p in group] for group in data["groups"]]
        entry = _Entry(
            tuple(data["calls"]),
            tuple(data["names"]),
            tuple(tuple(g) for g in parts),
            tuple(_part(p) for p in data["tail"]),
            self.clock() + float(data["ttl_s"]),
        )
        if self.entries <= 0 or not entry.calls:
            return
        key = entry.calls[0]
        with self._lock:
            self._drop(key)
            self._answers[key] = entry
            for cid in entry.calls:
                self._by_call[cid] = key
            while len(self._answers) > self.entries:
                self._drop(next(iter(self._answers)))

    def missing(self, request: Request) -> list[str]:
        """The first tool-call id of every assistant message of ``request`` that
        :meth:`restore` would look up (tool calls, no signed thinking) and this process does
        not know."""
        out: list[str] = []
        for msg in request.messages:
            if type(msg) is not AssistantMessage:
                continue
            first = next((p.id for p in msg.content if type(p) is ToolCallPart), None)
            if first is None or first in self._by_call or any(_signed(p) for p in msg.content):
                continue
            out.append(first)
        return out

    def _drop(self, key: str) -> None:
        entry = self._answers.pop(key, None)
        if entry is not None:
            for cid in entry.calls:
                if self._by_call.get(cid) == key:
                    del self._by_call[cid]

    def _lookup(self, calls: list[tuple[str, str]]) -> _Entry | None:
        """The live entry holding every ``(id, name)`` of ``calls`` (in that order), or None."""
        with self._lock:
            key = self._by_call.get(calls[0][0])
            if key is None:
                return None
            entry = self._answers[key]
            if entry.expires <= self.clock():
                self._drop(key)
                return None
            if [c for c in zip(entry.calls, entry.names, strict=True) if c in calls] != calls:
                return None
            self._answers.move_to_end(key)
            return entry

    def restore(self, request: Request) -> tuple[Request, list[Repair]]:
        """``request`` with the remembered signed thinking put back into every assistant
        message that has tool calls and no signed thinking of its own.

        The message's unsigned thinking (reasoning text a client echoed, e.g. OpenAI
        ``reasoning_content``) is replaced by the remembered parts; the parts that preceded
        the answer's first tool call go first in the message, those between calls before the
        call they preceded. Returns the input itself when nothing was restored, and one repair
        ``thinking_restored`` per message restored (id: its first tool call). Never raises."""
        if not self._answers:
            return request, []
        messages = request.messages
        out: list[Message] | None = None
        repairs: list[Repair] = []
        for i, msg in enumerate(messages):
            if type(msg) is not AssistantMessage:
                continue
            calls = [(p.id, p.name) for p in msg.content if type(p) is ToolCallPart]
            if not calls or any(_signed(p) for p in msg.content):
                continue
            entry = self._lookup(calls)
            if entry is None:
                continue
            content = _merge(msg.content, entry)
            if out is None:
                out = list(messages)
            out[i] = evolve(msg, content=content)
            loc = msg.src or f"messages[{i}]"
            first = calls[0][0]
            repairs.append(
                Repair(
                    "thinking_restored",
                    first,
                    loc,
                    f"signed thinking of the answer with tool call {first} ({loc}) restored from the "
                    "gateway's memory (the client did not send it back)",
                )
            )
        if out is None:
            return request, []
        return evolve(request, messages=out), repairs


def entry_data(entry: _Entry, ttl_s: float) -> dict[str, Any]:
    """``entry`` as JSON-ready data: ``calls``, ``names``, ``groups`` and ``tail`` (parts as
    the schema dumps them), ``ttl_s`` (seconds it is kept)."""
    return {
        "calls": list(entry.calls),
        "names": list(entry.names),
        "groups": [[p.model_dump(mode="json") for p in g] for g in entry.groups],
        "tail": [p.model_dump(mode="json") for p in entry.tail],
        "ttl_s": ttl_s,
    }


def _part(data: dict[str, Any]) -> SignedPart:
    if data.get("type") == "redacted_thinking":
        return RedactedThinkingPart.model_validate(data)
    return ThinkingPart.model_validate(data)


def _merge(content: list[AssistantPart], entry: _Entry) -> list[AssistantPart]:
    """``content`` without its unsigned thinking, with ``entry``'s signed parts in place."""
    groups = dict(zip(entry.calls, entry.groups, strict=True))
    head = list(entry.groups[0]) if entry.groups else []
    out: list[AssistantPart] = list(head)
    first = entry.calls[0] if entry.calls else None
    for p in content:
        if type(p) is ThinkingPart:
            continue  # unsigned (a message with signed thinking is not restored)
        if type(p) is ToolCallPart and p.id != first:
            out.extend(groups.get(p.id, ()))
        out.append(p)
    out.extend(entry.tail)
    return out
