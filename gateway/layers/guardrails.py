"""Guardrails layer: what enters a model's context and what it answers, checked
(:mod:`gateway.guardrails`; config ``guardrails``, off by default).

* **Tool results** (``guardrails.tool_results``, on when guardrails are): every tool result in
  the request sent upstream — the server-side tool loop's MCP results and the ones a client
  sends — has its text checked; redacted text replaces the original, and a blocked result
  becomes an error result for the same call id (``is_error``, naming the kinds found), so every
  call still has exactly one result (invariant 2). Prompt-injection markers are checked here.
* **Input** (``guardrails.input``): the client's user and system messages; a blocked one is a
  400 (:class:`gateway.errors.GuardrailBlocked`) naming the message.
* **Output** (``guardrails.output``): the answer's text; blocked, the answer is the notice with
  stop reason ``content_filter`` and no tool calls. A stream's text parts are held until each
  part ends, then checked and sent as one delta (tool-call and thinking parts are not held back
  apart from a text part in progress).

It sits below the window layer, so it sees exactly what goes upstream (a session's context
rebuilt from the log included), once per deployment tried; each message is checked once per
turn (``turn.guarded``, by fingerprint). The transcript and the session log keep what the
client and the tools sent; the model never sees what was redacted or blocked. With guardrails
off the layer is not in the chain at all (:meth:`GuardrailsLayer.wanted`).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

from gateway.errors import GuardrailBlocked
from gateway.guardrails.engine import Guardrails
from gateway.schema import (
    AssistantMessage,
    Message,
    MessageEnd,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    Response,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.turn import Batches, Gateway, Service, StreamItem, Turn

BLOCKED_RESULT = "blocked by the gateway's guardrails: the tool's output held {reason}; it was not passed on"
BLOCKED_OUTPUT = "[the answer was withheld by the gateway's guardrails: it held {reason}]"


class GuardrailsLayer:
    """Checks the request going upstream and the answer coming back."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner
        self.config = gw.config.guardrails

    @staticmethod
    def wanted(gw: Gateway) -> bool:
        """Whether the chain has this layer: guardrails are enabled."""
        return gw.config.guardrails.enabled

    def engine(self) -> Guardrails:
        """The gateway's guardrails (made by the server; made here without it, as in tests)."""
        if self.gw.guardrails is None:
            self.gw.guardrails = Guardrails(self.config, count=self.gw.metrics.guardrail)
        engine: Guardrails = self.gw.guardrails
        return engine

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer to the checked request, its text checked when ``output`` is on."""
        request = await self.checked_request(turn, request)
        response = await self.inner.complete(turn, request)
        if self.config.output:
            response = await self.checked_response(turn, response)
        return response

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream of the checked request, its text parts checked when ``output`` is on."""
        request = await self.checked_request(turn, request)
        batches = await self.inner.stream(turn, request)
        if not self.config.output:
            return batches
        return self._checked_stream(turn, batches)

    # ------------------------------------------------------------------ the request

    async def checked_request(self, turn: Turn, request: Request) -> Request:
        """``request`` with its tool results (and, with ``input``, user and system messages)
        checked; raises :class:`GuardrailBlocked` for blocked input."""
        cfg = self.config
        out: list[Message] = []
        changed = False
        for i, msg in enumerate(request.messages):
            new: Message = msg
            if isinstance(msg, ToolResultMessage) and cfg.tool_results:
                new = await self._once(turn, msg, lambda m: self._tool_result(turn, m))
            elif isinstance(msg, UserMessage | SystemMessage) and cfg.input:
                new = await self._once(turn, msg, lambda m, i=i: self._input(turn, m, i))
            changed = changed or new is not msg
            out.append(new)
        return request.model_copy(update={"messages": out}) if changed else request

    async def _once(self, turn: Turn, msg: Any, check: Any) -> Any:
        key = hashlib.sha256(msg.model_dump_json().encode()).hexdigest()
        hit = turn.guarded.get(key)
        if hit is None:
            hit = turn.guarded[key] = await check(msg)
        return msg if hit is True else hit

    def _context(self, turn: Turn, **more: Any) -> dict[str, Any]:
        return {"request_id": turn.request_id, "client": turn.mcp_visibility.client, **more}

    async def _tool_result(self, turn: Turn, msg: ToolResultMessage) -> ToolResultMessage | bool:
        texts = [p.text for p in msg.content if isinstance(p, TextPart)]
        context = self._context(turn, tool=msg.name, tool_call_id=msg.tool_call_id)
        new, blocked = await self.engine().check_all("tool_output", texts, context)
        if blocked is not None:
            return ToolResultMessage(
                tool_call_id=msg.tool_call_id,
                name=msg.name,
                is_error=True,
                content=[TextPart(text=BLOCKED_RESULT.format(reason=blocked))],
            )
        if new == texts:
            return True
        it = iter(new)
        parts = [
            p.model_copy(update={"text": next(it)}) if isinstance(p, TextPart) else p for p in msg.content
        ]
        return msg.model_copy(update={"content": parts})

    async def _input(self, turn: Turn, msg: UserMessage | SystemMessage, i: int) -> Any:
        texts = [p.text for p in msg.content if isinstance(p, TextPart)]
        new, blocked = await self.engine().check_all("input", texts, self._context(turn, message=i))
        if blocked is not None:
            raise GuardrailBlocked(
                f"messages[{i}]: refused by the gateway's guardrails: it holds {blocked}",
                param=f"messages[{i}]",
            )
        if new == texts:
            return True
        it = iter(new)
        parts = [
            p.model_copy(update={"text": next(it)}) if isinstance(p, TextPart) else p for p in msg.content
        ]
        return msg.model_copy(update={"content": parts})

    # ------------------------------------------------------------------ the answer

    async def checked_response(self, turn: Turn, response: Response) -> Response:
        """``response`` with its text parts checked: redacted, or (blocked) the notice alone,
        stop reason ``content_filter``."""
        msg = response.message
        texts = [p.text for p in msg.content if isinstance(p, TextPart)]
        if not texts:
            return response
        new, blocked = await self.engine().check_all("output", texts, self._context(turn))
        if blocked is not None:
            notice = AssistantMessage(content=[TextPart(text=BLOCKED_OUTPUT.format(reason=blocked))])
            withheld = response.model_copy(update={"message": notice})
            withheld.stop_reason = "content_filter"
            return withheld
        if new == texts:
            return response
        it = iter(new)
        parts = [
            p.model_copy(update={"text": next(it)}) if isinstance(p, TextPart) else p for p in msg.content
        ]
        return response.model_copy(update={"message": msg.model_copy(update={"content": parts})})

    async def _checked_stream(self, turn: Turn, batches: Batches) -> AsyncIterator[list[StreamItem]]:
        """The events of ``batches`` with each text part held until it ends, then checked."""
        held: list[StreamItem] = []
        text_index: int | None = None
        blocked = False
        try:
            async for batch in batches:
                out: list[StreamItem] = []
                for ev in batch:
                    if text_index is None:
                        if isinstance(ev, PartStart) and ev.kind == "text":
                            text_index, held = ev.index, [ev]
                        elif isinstance(ev, MessageEnd) and blocked:
                            end = ev.model_copy()
                            end.stop_reason = "content_filter"
                            out.append(end)
                        else:
                            out.append(ev)
                        continue
                    held.append(ev)
                    if isinstance(ev, PartEnd) and ev.index == text_index:
                        released, was_blocked = await self._release(turn, held, text_index)
                        out += released
                        blocked = blocked or was_blocked
                        text_index, held = None, []
                if out:
                    yield out
            rest = [ev for ev in held if not (isinstance(ev, PartDelta) and ev.text is not None)]
            if rest:
                yield rest  # the stream ended inside a text part: its unchecked text is not sent
        finally:
            close = getattr(batches, "aclose", None)
            if close is not None:
                await close()

    async def _release(self, turn: Turn, held: list[StreamItem], index: int) -> tuple[list[StreamItem], bool]:
        text = "".join(ev.text or "" for ev in held if isinstance(ev, PartDelta) and ev.index == index)
        checked = await self.engine().check("output", text, self._context(turn))
        blocked = checked.action == "block"
        new = BLOCKED_OUTPUT.format(reason=checked.reason) if blocked else checked.text
        out: list[StreamItem] = []
        sent = False
        for ev in held:
            if isinstance(ev, PartDelta) and ev.index == index and ev.text is not None:
                if not sent:
                    out.append(ev.model_copy(update={"text": new}))
                    sent = True
                continue
            if isinstance(ev, PartEnd) and ev.index == index and not sent:
                out.append(PartDelta(index=index, text=new))
                sent = True
            out.append(ev)
        return out, blocked
