"""The thinking memory and the signer memory shared by every instance.

A tool loop's next request may land on another instance than the answer whose signed thinking
it needs (:mod:`gateway.thinking_memory`), or echo a raw signature another instance saw
(:mod:`gateway.signers`). Each instance keeps its own bounded memories; this module adds Redis
behind them:

* every answer remembered is written under each of its tool-call ids (``t:<call id>``, the
  memory's ``ttl_s``), every signature's provenance under its hash (``s:<sha256>``, the same
  TTL), in a task of its own (one pipelined round trip), which the attempt layer awaits
  (:meth:`SharedMemory.written`) before the answer goes up: a client's next request, on any
  instance, comes after it. An answer without signed parts writes nothing and waits for
  nothing;
* before the guards restore or resolve, :meth:`SharedMemory.prefetch` reads what the request
  needs and this process does not know (one pipelined round trip, only for a request that has
  such a part: an assistant message with tool calls and no signed thinking, or a signature
  without its model). Ids found nowhere are not asked again for :data:`ABSENT_TTL_S`.

Unreachable Redis: the instance goes on with its own memories (a thinking part it cannot
restore is handled as one evicted: thinking off for that request, said in
``x-turnstile-dropped``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import structlog

from gateway.fleet.link import RedisLink
from gateway.schema import Provenance, Request
from gateway.signers import SignerMemory
from gateway.thinking_memory import ThinkingMemory

log = structlog.get_logger("turnstile.fleet")

ABSENT_TTL_S = 60.0
"""Seconds a tool-call id or signature found in no memory is not looked up again."""

ABSENT_MAX = 50_000
"""Ids remembered as absent, at most (the oldest half are dropped past it)."""


class SharedMemory:
    """Redis behind ``thinking`` and ``signers`` (module docstring)."""

    def __init__(self, link: RedisLink, thinking: ThinkingMemory, signers: SignerMemory) -> None:
        self.link = link
        self.thinking = thinking
        self.signers = signers
        self.ttl_ms = max(1, int(thinking.ttl_s * 1000))
        self._absent: dict[str, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self) -> None:
        """Listen to both memories."""
        self.thinking.listener = self._remembered
        self.signers.listener = self._signed

    async def close(self) -> None:
        """Stop listening; wait for the writes in flight."""
        self.thinking.listener = None
        self.signers.listener = None
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def written(self) -> None:
        """Wait for the writes in flight (none: returns at once); never raises."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _spawn(self, what: str, writes: list[tuple[str, bytes]]) -> None:
        async def write() -> None:
            pipe = self.link.client.pipeline(transaction=False)
            for key, value in writes:
                pipe.set(key, value, px=self.ttl_ms)
            await pipe.execute()

        task = asyncio.get_running_loop().create_task(self.link.run(what, write))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _remembered(self, data: dict[str, Any]) -> None:
        body = orjson.dumps(data)
        self._spawn("thinking memory", [(self.link.key("t", cid), body) for cid in data["calls"]])

    def _signed(self, key: str, prov: Provenance) -> None:
        self._spawn("signer memory", [(self.link.key("s", key), prov.model_dump_json().encode())])

    async def prefetch(self, request: Request) -> None:
        """Adopt what ``request`` needs from the other instances' memories (module docstring);
        never raises for Redis."""
        now = time.monotonic()
        calls = [c for c in self.thinking.missing(request) if self._absent.get(c, 0.0) <= now]
        sigs = [h for h in self.signers.missing(request) if self._absent.get(h, 0.0) <= now]
        if not calls and not sigs:
            return
        keys = [self.link.key("t", c) for c in calls] + [self.link.key("s", h) for h in sigs]
        found = await self.link.run("memory prefetch", lambda: self.link.client.mget(keys))
        if found is None:
            return
        wanted_calls = set(calls)
        for name, value in zip(calls + sigs, found, strict=True):
            if value is None:
                self._absent[name] = now + ABSENT_TTL_S
                continue
            try:
                if name in wanted_calls:
                    data = orjson.loads(value)
                    data["ttl_s"] = self.thinking.ttl_s
                    self.thinking.adopt(data)
                else:
                    self.signers.adopt(name, Provenance.model_validate_json(value))
            except ValueError:
                log.error("fleet_memory_entry_unreadable", id=name)
        if len(self._absent) > ABSENT_MAX:
            for name in list(self._absent)[: ABSENT_MAX // 2]:
                del self._absent[name]
