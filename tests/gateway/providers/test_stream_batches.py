"""HttpProvider.stream_batches: one batch per network read, the first events alone, errors
after the events before them; ``stream`` is its flattening."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from gateway.config import Deployment, TimeoutConfig
from gateway.errors import UpstreamProtocolError
from gateway.providers import openai_chat, transport
from gateway.providers.base import HttpProvider, Provider
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    StreamEvent,
    TextPart,
    UserMessage,
)

DEP = Deployment(name="d", api="openai_chat", model="gpt-x", base_url="http://upstream.invalid/v1")
REQ = Request(model="d", messages=[UserMessage(content=[TextPart(text="hi")])], stream=True)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str | None, bytes]:
    body = {"id": "c1", "model": "gpt-x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return None, orjson.dumps(body)


ROLE = _chunk({"role": "assistant", "content": ""})
HELLO = _chunk({"content": "Hel"})
LO = _chunk({"content": "lo"})
STOP = _chunk({}, "stop")
DONE = (None, b"[DONE]")


def _provider(monkeypatch: pytest.MonkeyPatch, reads: list[list[tuple[str | None, bytes]]]) -> HttpProvider:
    async def fake_reads(*args: Any, **kw: Any) -> AsyncIterator[list[tuple[str | None, bytes]]]:
        for read in reads:
            yield read

    monkeypatch.setattr(transport, "send_stream_reads", fake_reads)
    return HttpProvider(openai_chat, session=None, timeouts=TimeoutConfig())  # type: ignore[arg-type]


def _kinds(batch: list[StreamEvent]) -> list[str]:
    return [type(e).__name__ for e in batch]


async def test_one_batch_per_read_and_the_first_events_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = _provider(monkeypatch, [[ROLE, HELLO, LO], [STOP, DONE]])
    batches = [b async for b in provider.stream_batches(REQ, DEP, None)]
    assert [_kinds(b) for b in batches] == [
        ["MessageStart"],  # the first SSE event's events, before the rest of its read is parsed
        ["PartStart", "PartDelta", "PartDelta"],
        ["PartEnd", "MessageEnd"],
    ]
    flat = [e async for e in provider.stream(REQ, DEP, None)]
    assert flat == [e for b in batches for e in b]


async def test_events_without_a_done_are_ended_by_finish_in_a_batch_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = _provider(monkeypatch, [[ROLE], [HELLO, STOP]])
    batches = [b async for b in provider.stream_batches(REQ, DEP, None)]
    assert [_kinds(b) for b in batches] == [
        ["MessageStart"],
        ["PartStart", "PartDelta", "PartEnd"],
        ["MessageEnd"],
    ]


async def test_a_parse_error_comes_after_the_events_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = _provider(monkeypatch, [[ROLE], [HELLO, (None, b"{not json"), LO]])
    got: list[list[StreamEvent]] = []
    with pytest.raises(UpstreamProtocolError):
        async for batch in provider.stream_batches(REQ, DEP, None):
            got.append(batch)
    assert [_kinds(b) for b in got] == [["MessageStart"], ["PartStart", "PartDelta"]]
    flat: list[StreamEvent] = []
    with pytest.raises(UpstreamProtocolError):
        async for ev in provider.stream(REQ, DEP, None):
            flat.append(ev)
    assert flat == [e for b in got for e in b]


async def test_the_default_batches_are_the_events_one_by_one() -> None:
    events: list[StreamEvent] = [
        MessageStart(id="m", model="x"),
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="a"),
        PartEnd(index=0),
        MessageEnd(stop_reason="stop"),
    ]

    class Listed(Provider):
        api = "demo"

        async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Any:
            raise NotImplementedError

        async def stream(
            self, request: Request, deployment: Deployment, api_key: str | None
        ) -> AsyncIterator[StreamEvent]:
            for ev in events:
                yield ev

    assert [b async for b in Listed().stream_batches(REQ, DEP, None)] == [[e] for e in events]
