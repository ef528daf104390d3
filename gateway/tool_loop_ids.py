"""Tool-call ids unique within one turn of the server-side tool loop.

Upstreams do not promise ids unique beyond one answer: some restart a counter per response
(``call_0``, ``tool_0``), some echo an id from the history, and a Gemini call without an id gets
one derived from its response (:func:`gateway.providers.gemini_common.call_id`), which repeats
when the response repeats. Inside the loop every step's calls join one history, and one id on
two calls breaks pairing (invariant 2): the pre-request assertion would stop the turn with a 500.

The rule (deterministic, so the same upstream answers give the same ids):

* the first call with an id in the turn keeps it (ids in the client's own messages count as
  used);
* a later call whose id is already used in the turn, by the client's history, an earlier step or
  an earlier call of the same answer, is renamed ``<id>_s<step>`` (step counted from 1), or
  ``<id>_s<step>_<k>`` with ``k`` = 2, 3, ... when that is taken too.

Where each id is used: the upstream's answer is kept as it came in the step's transcript row
(``<request id>.step<n>``, ``response``); from then on the renamed id is the call's only id: in
the assistant message appended to the history (the next step's ``request``), in the call's
result, in the stream's tool progress, in the session log and, for a call of a client tool in
the final answer, in what the client receives and answers. So step ``n``'s row and step
``n + 1``'s request together show the mapping, and each rename is logged once
(``tool_call_id_renamed``: step, upstream id, new id). Nothing maps a renamed id back: the
upstream pairs calls with results by whatever id the history carries.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from gateway.call_id_rule import unusable_call_id
from gateway.guards.upstream_ids import safe_call_id
from gateway.schema import (
    AssistantMessage,
    Message,
    MessageEnd,
    PartStart,
    Response,
    StreamEvent,
    ToolCallPart,
    ToolResultMessage,
    WithheldToolCall,
    evolve,
)

log = structlog.get_logger("turnstile.tool_loop")


class TurnCallIds:
    """The tool-call ids used so far in one looping turn; renames reused ones (module rule)."""

    def __init__(self, messages: Iterable[Message]) -> None:
        self.used: set[str] = set()
        for m in messages:
            if type(m) is AssistantMessage:
                self.used.update(p.id for p in m.content if type(p) is ToolCallPart)
            elif type(m) is ToolResultMessage:
                self.used.add(m.tool_call_id)
        self.renamed = 0

    def claim(self, call_id: str, step: int) -> str:
        """``call_id`` when it is new in the turn, else its renamed form; either way it is used
        from now on."""
        if call_id not in self.used:
            self.used.add(call_id)
            return call_id
        new = f"{call_id}_s{step}"
        k = 1
        while new in self.used:
            k += 1
            new = f"{call_id}_s{step}_{k}"
        if unusable_call_id(new):  # the suffix pushed a long id past the edge's byte bound
            new = safe_call_id(new)
        self.used.add(new)
        self.renamed += 1
        log.info("tool_call_id_renamed", step=step, upstream_id=call_id, id=new)
        return new

    def _withheld(self, withheld: list[WithheldToolCall], step: int) -> list[WithheldToolCall] | None:
        out = [w if (i := self.claim(w.id, step)) == w.id else evolve(w, id=i) for w in withheld]
        return out if any(a is not b for a, b in zip(out, withheld, strict=True)) else None

    def claim_response(self, resp: Response, step: int) -> Response:
        """``resp`` with every call (kept, then withheld) claimed in order; ``resp`` itself
        when no id changed."""
        changed = False
        content = []
        for p in resp.message.content:
            if type(p) is ToolCallPart:
                new = self.claim(p.id, step)
                if new != p.id:
                    p, changed = evolve(p, id=new), True
            content.append(p)
        withheld = self._withheld(resp.withheld_tool_calls, step)
        if not changed and withheld is None:
            return resp
        update: dict[str, object] = {}
        if changed:
            update["message"] = evolve(resp.message, content=content)
        if withheld is not None:
            update["withheld_tool_calls"] = withheld
        return evolve(resp, **update)

    def claim_event(self, event: StreamEvent, step: int) -> StreamEvent:
        """A stream event of step ``step`` with its call id claimed: a tool call's
        :class:`PartStart` and the withheld calls of the :class:`MessageEnd`; other events as
        they are. Claiming a step's events in order gives the ids :meth:`claim_response` gives
        for the collected answer."""
        if type(event) is PartStart and event.kind == "tool_call" and event.id is not None:
            new = self.claim(event.id, step)
            return event if new == event.id else evolve(event, id=new)
        if type(event) is MessageEnd and event.withheld_tool_calls:
            withheld = self._withheld(event.withheld_tool_calls, step)
            return event if withheld is None else evolve(event, withheld_tool_calls=withheld)
        return event


__all__ = ["TurnCallIds"]
