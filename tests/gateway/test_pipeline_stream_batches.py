"""The streaming pipeline in batches: the first event alone, tool calls held across batches,
errors after the events before them, and the two views of a StreamingTurn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway import invariants
from gateway.config import Deployment, GatewayConfig, Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import UpstreamError
from gateway.pipeline import Gateway, Pipeline, StreamingTurn, TurnContext
from gateway.providers.base import Provider
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    Response,
    StreamError,
    StreamEvent,
    TextPart,
    Usage,
    UserMessage,
)
from gateway.transcript import TranscriptWriter, recent

TEXT_AND_CALL: list[list[StreamEvent]] = [
    [MessageStart(id="r1", model="m"), PartStart(index=0, kind="text"), PartDelta(index=0, text="a")],
    [
        PartDelta(index=0, text="b"),
        PartStart(index=1, kind="tool_call", id="t1", name="f"),
        PartDelta(index=1, arguments='{"x":'),
        PartDelta(index=0, text="c"),
    ],
    [
        PartDelta(index=1, arguments="1}"),
        PartEnd(index=0),
        PartEnd(index=1),
        MessageEnd(stop_reason="tool_use", usage=Usage(input_tokens=3, output_tokens=4)),
    ],
]


class Batched(Provider):
    """Streams scripted batches; an exception in the script is raised at its place."""

    api = "openai_chat"

    def __init__(self, batches: list[list[StreamEvent] | Exception]) -> None:
        self.batches = batches

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        raise NotImplementedError

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        async for batch in self.stream_batches(request, deployment, api_key):
            for ev in batch:
                yield ev

    async def stream_batches(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[list[StreamEvent]]:
        for item in self.batches:
            if isinstance(item, Exception):
                raise item
            yield item


async def _pipeline(provider: Provider, tmp_path: Path) -> tuple[Pipeline, TranscriptWriter]:
    cfg: GatewayConfig = parse_config(
        {
            "deployments": [
                {
                    "name": "a",
                    "api": "openai_chat",
                    "model": "model-a",
                    "price": {"input": 1.0, "output": 2.0},
                }
            ]
        }
    )
    writer = TranscriptWriter(tmp_path / "t.db")
    await writer.start()
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    gw = Gateway(config=cfg, table=table, providers={"openai_chat": provider}, transcript=writer)
    return Pipeline(gw), writer


def _ctx() -> TurnContext:
    request = Request(model="a", messages=[UserMessage(content=[TextPart(text="hi")])], stream=True)
    return TurnContext(request_id="req-b", dialect="openai_chat", request=request)


def _names(batches: list[list[Any]]) -> list[list[str]]:
    return [[type(e).__name__ for e in b] for b in batches]


async def test_first_event_alone_then_a_batch_per_upstream_batch_with_tool_calls_held(tmp_path: Path) -> None:
    pipe, writer = await _pipeline(Batched(list(TEXT_AND_CALL)), tmp_path)
    turn = await pipe.open_stream(_ctx())
    batches = [b async for b in turn.batches]
    await writer.close()
    assert _names(batches) == [
        ["MessageStart"],
        ["PartStart", "PartDelta"],
        ["PartDelta", "PartDelta"],  # the text; the tool call's events are held
        ["PartEnd", "PartStart", "PartDelta", "PartDelta", "PartEnd", "MessageEnd"],
    ]
    flat = [e for b in batches for e in b]
    expected = invariants.guard_stream([e for b in TEXT_AND_CALL for e in b])
    assert flat[:-1] == expected[:-1]
    end = flat[-1]
    assert isinstance(end, MessageEnd) and end.usage.cost_usd is not None  # priced
    row = recent(tmp_path / "t.db")[0]
    assert row["status"] == 200 and row["stop"] == "tool_use"


async def test_an_upstream_failure_ends_the_stream_with_an_error_event(tmp_path: Path) -> None:
    script: list[list[StreamEvent] | Exception] = [
        TEXT_AND_CALL[0],
        UpstreamError("connection reset", status=502, deployment="a"),
    ]
    pipe, writer = await _pipeline(Batched(script), tmp_path)
    turn = await pipe.open_stream(_ctx())
    batches = [b async for b in turn.batches]
    await writer.close()
    assert _names(batches) == [["MessageStart"], ["PartStart", "PartDelta"], ["StreamError"]]
    assert recent(tmp_path / "t.db")[0]["status"] == 502


async def test_an_internal_error_mid_batch_comes_after_the_events_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe, writer = await _pipeline(Batched(list(TEXT_AND_CALL)), tmp_path)

    def broken(*args: Any) -> Usage:
        raise RuntimeError("pricing broke")

    monkeypatch.setattr(pipe.attempt, "priced", broken)
    turn = await pipe.open_stream(_ctx())
    batches = [b async for b in turn.batches]
    await writer.close()
    last = batches[-1]
    assert _names([last]) == [["PartEnd", "PartStart", "PartDelta", "PartDelta", "PartEnd", "StreamError"]]
    assert isinstance(last[-1], StreamError) and last[-1].status == 500
    assert recent(tmp_path / "t.db")[0]["status"] == 500


async def test_the_events_view_flattens_the_batches(tmp_path: Path) -> None:
    pipe, writer = await _pipeline(Batched(list(TEXT_AND_CALL)), tmp_path)
    turn = await pipe.open_stream(_ctx())
    events = [e async for e in turn.events]
    await writer.close()
    assert [type(e).__name__ for e in events][:3] == ["MessageStart", "PartStart", "PartDelta"]
    assert isinstance(events[-1], MessageEnd)


async def test_a_streaming_turn_takes_exactly_one_view() -> None:
    async def items() -> AsyncIterator[Any]:
        yield "a"
        yield "b"

    turn = StreamingTurn(events=items(), headers={})
    assert [b async for b in turn.batches] == [["a"], ["b"]]
    with pytest.raises(ValueError):
        StreamingTurn(headers={})
    with pytest.raises(ValueError):
        StreamingTurn(events=items(), batches=items(), headers={})  # type: ignore[arg-type]


def test_the_guard_says_which_parts_it_holds() -> None:
    guard = invariants.StreamTruncationGuard()
    guard.feed(MessageStart(id="r", model="m"))
    guard.feed(PartStart(index=0, kind="text"))
    guard.feed(PartStart(index=1, kind="tool_call", id="t", name="f"))
    held = guard.held_parts
    assert 0 not in held and 1 in held
    assert guard.feed(PartDelta(index=0, text="x")) == [PartDelta(index=0, text="x")]
    guard.feed(MessageEnd(stop_reason="tool_use"))
    assert 1 not in held and not guard.held_parts  # released at the message end; the view is live
