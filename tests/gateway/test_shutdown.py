"""Turns cut by the graceful-shutdown bound (gateway/shutdown.py): a stream the server cancels ends
with an error event and is recorded as cut (503, stop reason ``aborted``, the usage so far); one
whose client went away is still recorded as 499."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.config import Deployment, Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.pipeline import Gateway, Pipeline, TurnContext
from gateway.providers.base import Provider
from gateway.schema import (
    MessageStart,
    PartDelta,
    PartStart,
    Request,
    Response,
    StreamError,
    StreamEvent,
    TextPart,
    Usage,
    UserMessage,
)
from gateway.shutdown import CLIENT_GONE, OpenTurns, cut_by_shutdown
from gateway.transcript import TranscriptWriter, recent


class Hanging(Provider):
    """Streams the start of an answer, then never sends more."""

    api = "openai_chat"

    def __init__(self) -> None:
        self.asked = asyncio.Event()  # set once a whole answer was asked for

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        yield MessageStart(id="m1", model="model-a", usage=Usage(input_tokens=7))
        yield PartStart(index=0, kind="text")
        yield PartDelta(index=0, text="half an ans")
        await asyncio.Event().wait()


async def _pipeline(tmp_path: Path, provider: Provider) -> tuple[Pipeline, TranscriptWriter]:
    cfg = parse_config({"deployments": [{"name": "a", "api": "openai_chat", "model": "model-a"}]})
    writer = TranscriptWriter(tmp_path / "t.db")
    await writer.start()
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    gw = Gateway(config=cfg, table=table, providers={"openai_chat": provider}, transcript=writer)
    return Pipeline(gw), writer


def _ctx(stream: bool) -> TurnContext:
    request = Request(model="a", messages=[UserMessage(content=[TextPart(text="hi")])], stream=stream)
    return TurnContext(request_id="r1", dialect="openai_chat", request=request)


@pytest.mark.parametrize(
    ("cancel_message", "status", "error", "last_event"),
    [(None, 503, "cut by shutdown", StreamError), (CLIENT_GONE, 499, None, PartDelta)],
    ids=["shutdown bound", "client gone"],
)
async def test_a_stream_cancelled_by_the_server_is_recorded_as_cut_and_one_whose_client_left_as_499(
    tmp_path: Path, cancel_message: str | None, status: int, error: str | None, last_event: type
) -> None:
    pipe, writer = await _pipeline(tmp_path, Hanging())
    turn = await pipe.open_stream(_ctx(stream=True))
    seen: list[StreamEvent] = []
    started = asyncio.Event()

    async def client() -> None:
        async for batch in turn.batches:
            seen.extend(batch)  # type: ignore[arg-type]
            if any(isinstance(e, PartDelta) for e in batch):
                started.set()

    task = asyncio.create_task(client())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel(cancel_message)
    await asyncio.wait([task], timeout=5)
    await writer.close()
    assert isinstance(seen[-1], last_event)  # the server's cut ends the stream with an error event
    (row,) = recent(tmp_path / "t.db")
    assert row["status"] == status and row["stop"] == "aborted"
    assert row["input_tokens"] == 7  # the usage known so far
    assert (row["error"] is None) if error is None else (error in row["error"])
    assert "half an ans" in row["response"]


async def test_a_whole_answer_cancelled_by_the_server_is_recorded_as_cut(tmp_path: Path) -> None:
    provider = Hanging()
    pipe, writer = await _pipeline(tmp_path, provider)
    task = asyncio.create_task(pipe.complete(_ctx(stream=False)))
    await asyncio.wait_for(provider.asked.wait(), 5)  # the turn waits for the upstream
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    await writer.close()
    (row,) = recent(tmp_path / "t.db")
    assert row["status"] == 503 and "cut by shutdown" in row["error"] and row["stop"] == "aborted"


class Silent(Hanging):
    """Never sends the first byte of a stream."""

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        self.asked.set()
        await asyncio.Event().wait()
        yield MessageStart(id="never", model="model-a")


async def test_a_stream_cancelled_by_the_server_before_its_first_byte_is_recorded_as_cut(
    tmp_path: Path,
) -> None:
    provider = Silent()
    pipe, writer = await _pipeline(tmp_path, provider)
    task = asyncio.create_task(pipe.open_stream(_ctx(stream=True)))
    await asyncio.wait_for(provider.asked.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    await writer.close()
    (row,) = recent(tmp_path / "t.db")
    assert row["status"] == 503 and row["stream"] == 1 and "cut by shutdown" in row["error"]
    assert row["stop"] == "aborted"


def test_only_the_client_gone_cancellation_is_not_a_cut() -> None:
    assert cut_by_shutdown(asyncio.CancelledError(CLIENT_GONE)) is None
    assert cut_by_shutdown(asyncio.CancelledError()) is not None
    assert cut_by_shutdown(asyncio.CancelledError("Task cancelled, timeout graceful shutdown exceeded"))


async def test_waiting_for_open_turns_is_bounded_and_ends_when_the_last_one_leaves() -> None:
    turns = OpenTurns()
    assert await turns.drained(0.01)
    turns.enter()
    assert not await turns.drained(0.01)
    waiting = asyncio.create_task(turns.drained(5))
    await asyncio.sleep(0)
    turns.leave()
    assert await asyncio.wait_for(waiting, 5)


async def test_a_tool_loop_stream_cut_by_the_server_ends_with_an_error_event_and_is_recorded_as_cut() -> None:
    from gateway.tool_loop import ToolLoop
    from gateway.tool_loop_stream import run_stream

    async def runner(call: object) -> object:
        raise AssertionError("no tool runs")

    async def first() -> AsyncIterator[StreamEvent]:
        async for ev in Hanging().stream(_ctx(True).request, None, None):  # type: ignore[arg-type]
            yield ev

    async def open_step(step_request: Request, n: int) -> AsyncIterator[StreamEvent]:
        raise AssertionError("no second step")

    finished: list[tuple[Response | None, object, int]] = []

    async def finish(final: Response | None, error: object, status: int) -> None:
        finished.append((final, error, status))

    loop = ToolLoop(loop_tools=frozenset({"t"}), client_tools=frozenset(), runner=runner)  # type: ignore[arg-type]
    seen: list[object] = []
    started = asyncio.Event()

    async def client() -> None:
        async for ev in run_stream(loop, _ctx(True).request, first(), open_step, finish):
            seen.append(ev)
            if isinstance(ev, PartDelta):
                started.set()

    task = asyncio.create_task(client())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    await asyncio.wait([task], timeout=5)
    assert isinstance(seen[-1], StreamError) and "cut by shutdown" in seen[-1].message
    ((final, error, status),) = finished
    assert status == 503 and final is not None and final.stop_reason == "aborted"
    assert "cut by shutdown" in str(error)
