"""The replay upstream: a :class:`Provider` that answers with the recorded assistant output.

``turnstile replay`` puts the answer the real model gave into :attr:`ReplayProvider.answer`
before each turn, so the whole pipeline (guards, routing, thinking policy, truncation guard,
accounting, transcript) runs on real traffic without a network call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal

from gateway.config import Deployment
from gateway.errors import UpstreamError
from gateway.providers.base import Provider
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    RedactedThinkingPart,
    Request,
    Response,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)


def response_events(resp: Response, chunk_chars: int = 64) -> list[StreamEvent]:
    """A complete internal event stream carrying every part of ``resp``: text and thinking
    in ``chunk_chars`` pieces, signatures as one delta, redacted thinking whole, tool-call
    raw arguments in pieces (byte-exact when joined)."""
    events: list[StreamEvent] = [MessageStart(id=resp.id, model=resp.model, usage=resp.usage)]
    for i, part in enumerate(resp.message.content):
        if isinstance(part, TextPart | ThinkingPart):
            kind: Literal["text", "thinking"] = "text" if isinstance(part, TextPart) else "thinking"
            prov = part.provenance if isinstance(part, ThinkingPart) else None
            events.append(PartStart(index=i, kind=kind, provenance=prov))
            for k in range(0, len(part.text), chunk_chars):
                events.append(PartDelta(index=i, text=part.text[k : k + chunk_chars]))
            if isinstance(part, ThinkingPart) and part.signature:
                events.append(PartDelta(index=i, signature=part.signature))
        elif isinstance(part, RedactedThinkingPart):
            events.append(
                PartStart(index=i, kind="redacted_thinking", data=part.data, provenance=part.provenance)
            )
        elif isinstance(part, ToolCallPart):
            events.append(
                PartStart(
                    index=i,
                    kind="tool_call",
                    id=part.id,
                    name=part.name,
                    signature=part.signature,
                    provenance=part.provenance,
                )
            )
            for k in range(0, len(part.raw_arguments), chunk_chars):
                events.append(PartDelta(index=i, arguments=part.raw_arguments[k : k + chunk_chars]))
        events.append(PartEnd(index=i))
    events.append(MessageEnd(stop_reason=resp.stop_reason, usage=resp.usage))
    return events


class ReplayProvider(Provider):
    """Answers every call with :attr:`answer` (set by the replay runner before the turn)."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.answer: Response | None = None
        self.calls = 0

    def _take(self, deployment: Deployment) -> Response:
        if self.answer is None:
            raise UpstreamError(
                "replay upstream has no recorded answer for this turn", deployment=deployment.name
            )
        self.calls += 1
        return self.answer

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        """The recorded answer. Raises :class:`UpstreamError` when none was set."""
        return self._take(deployment)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        """The recorded answer as internal stream events (:func:`response_events`)."""
        for ev in response_events(self._take(deployment)):
            yield ev
