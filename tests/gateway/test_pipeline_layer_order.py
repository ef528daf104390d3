"""A turn is one chain of layers: each layer is entered once at its place, in order, and none
calls back up. Checked on the turn that visits every layer: bound to a session, running the
server-side tool loop (two model steps), with a fallback (the first deployment fails every
time), whole and streamed; with guardrails on, so that their layer is in the chain."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from gateway.config import Deployment, Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import UpstreamError
from gateway.layers.attempt import AttemptLayer
from gateway.pipeline import LAYERS, Gateway, Pipeline, Turn
from gateway.providers.base import Provider
from gateway.providers.demo import response_events
from gateway.schema import (
    AssistantMessage,
    Request,
    Response,
    StreamEvent,
    TextPart,
    ToolCallPart,
    Usage,
    UserMessage,
)
from gateway.sessions.open import open_store
from gateway.transcript import TranscriptWriter, recent

CHAIN = [*LAYERS, AttemptLayer]
RANK = {cls.__name__: i for i, cls in enumerate(CHAIN)}
LOOPING = {"ToolLoopLayer": "RouteLayer", "RouteLayer": "TargetLayer"}
"""A layer that calls the one below it more than once, and that layer."""

CONFIG: dict[str, Any] = {
    "deployments": [
        {"name": "primary", "api": "openai_chat", "model": "p"},
        {"name": "backup", "api": "openai_chat", "model": "b"},
    ],
    "models": [{"name": "m", "deployments": ["primary", "backup"]}],
    "guardrails": {"enabled": True, "output": True},  # the layer is in the chain only when on
}


def _answer(content: list[Any]) -> Response:
    stop = "tool_use" if any(isinstance(p, ToolCallPart) for p in content) else "stop"
    return Response(
        id="r",
        model="b",
        message=AssistantMessage(content=content),
        stop_reason=stop,  # type: ignore[arg-type]
        usage=Usage(input_tokens=10, output_tokens=5),
    )


class PrimaryDownBackupCallsThenAnswers(Provider):
    """``primary`` always fails (503); ``backup`` calls ``fx__echo`` once, then answers."""

    api = "openai_chat"

    def _next(self, request: Request, dep: Deployment) -> Response:
        if dep.name == "primary":
            raise UpstreamError("primary is down", status=503, deployment="primary")
        if any(m.role == "tool" for m in request.messages):
            return _answer([TextPart(text="done")])
        call = ToolCallPart(id="c1", name="fx__echo", arguments={"x": 1}, raw_arguments='{"x": 1}')
        return _answer([call])

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        return self._next(request, deployment)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        for ev in response_events(self._next(request, deployment), chunk_chars=4):
            yield ev


@dataclass
class _Tool:
    description: str = "echo"
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})


@dataclass
class _Registered:
    server: str = "fx"
    exposed: str = "fx__echo"
    available: bool = True
    tool: _Tool = field(default_factory=_Tool)


class _Registry:
    def tools(self, include_unavailable: bool = False) -> list[_Registered]:
        return [_Registered()]

    def spec(self, sid: str) -> object | None:
        return object() if sid == "fx" else None

    def server_ids(self) -> list[str]:
        return ["fx"]


class _Endpoint:
    def __init__(self) -> None:
        self.parents: list[Any] = []  # the span each tool-loop call was parented on (tracing)

    async def call_for_loop(self, name: str, args: dict[str, Any], **kw: Any) -> CallToolResult:
        self.parents.append(kw.get("parent"))
        return CallToolResult(content=[TextContent(type="text", text="echoed")])


@dataclass
class _Mcp:
    registry: _Registry = field(default_factory=_Registry)
    endpoint: _Endpoint = field(default_factory=_Endpoint)
    read_env: Any = None


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The name of every layer entered, in the order entered (whole answers and streams)."""
    entered: list[str] = []
    for cls in CHAIN:
        for method in ("complete", "stream"):
            original = getattr(cls, method)

            def spy(self: Any, turn: Any, request: Any, _o: Any = original, _n: str = cls.__name__) -> Any:
                entered.append(_n)
                return _o(self, turn, request)

            monkeypatch.setattr(cls, method, spy)
    yield entered


async def _pipeline(tmp_path: Path) -> tuple[Pipeline, TranscriptWriter, Gateway]:
    cfg = parse_config(CONFIG)
    writer = TranscriptWriter(tmp_path / "t.db")
    await writer.start()
    gw = Gateway(
        config=cfg,
        table=DeploymentTable.build(cfg, Settings(), resolve_prices=False),
        providers={"openai_chat": PrimaryDownBackupCallsThenAnswers()},
        transcript=writer,
    )
    gw.sessions = await open_store(str(tmp_path / "sessions.db"))
    gw.mcp = _Mcp()  # type: ignore[assignment]
    return Pipeline(gw), writer, gw


def _turn(stream: bool) -> Turn:
    request = Request(
        model="m", messages=[UserMessage(content=[TextPart(text="hi")])], mcp_servers=["fx"], stream=stream
    )
    return Turn(request_id="t1", dialect="openai_chat", request=request, session_id="s1")


def _assert_one_chain(entered: list[str]) -> None:
    above_loop = [n for n in entered if RANK[n] <= RANK["ToolLoopLayer"]]
    assert above_loop == [c.__name__ for c in LAYERS[: RANK["ToolLoopLayer"] + 1]], "each once, in order"
    for a, b in itertools.pairwise(entered):
        one_down = RANK[b] == RANK[a] + 1
        next_unit = b in LOOPING.values() and RANK[b] <= RANK[a]  # the loop above it went on
        assert one_down or next_unit, f"{b} entered after {a}: a layer called back up or skipped one"
    per_attempt = ["TargetLayer", "WindowLayer", "GuardrailsLayer", "AttemptLayer"]
    steps = [entered[i:] for i, n in enumerate(entered) if n == "RouteLayer"]
    assert len(steps) == 2  # two model steps: a tool call, then the answer
    for step in steps:
        tail = step[1:]
        until_next = tail[: tail.index("RouteLayer")] if "RouteLayer" in tail else tail
        assert until_next == per_attempt * 2  # primary fails, backup answers


async def test_a_whole_turn_with_a_session_a_tool_loop_and_a_fallback_runs_each_layer_once_in_order(
    tmp_path: Path, trace: list[str]
) -> None:
    pipe, writer, gw = await _pipeline(tmp_path)
    result = await pipe.complete(_turn(stream=False))
    await writer.close()
    assert result.response.message.text == "done"
    _assert_one_chain(trace)
    rows = {r["request_id"]: r for r in recent(tmp_path / "t.db")}
    assert set(rows) == {"t1", "t1.step1", "t1.step2"} and rows["t1"]["deployment"] == "backup"
    kinds = [e.message().role for e in await gw.sessions.path("s1") if e.type == "message"]
    assert kinds == ["user", "assistant", "tool", "assistant"]  # question, step 1 and its result, answer
    await gw.sessions.close()


async def test_a_streamed_turn_with_a_session_a_tool_loop_and_a_fallback_runs_each_layer_once_in_order(
    tmp_path: Path, trace: list[str]
) -> None:
    pipe, writer, gw = await _pipeline(tmp_path)
    opened = await pipe.open_stream(_turn(stream=True))
    events = [ev async for ev in opened.events]
    await writer.close()
    assert type(events[-1]).__name__ == "MessageEnd"
    _assert_one_chain(trace)
    rows = {r["request_id"]: r for r in recent(tmp_path / "t.db")}
    assert set(rows) == {"t1", "t1.step1", "t1.step2"} and rows["t1"]["status"] == 200
    kinds = [e.message().role for e in await gw.sessions.path("s1") if e.type == "message"]
    assert kinds == ["user", "assistant", "tool", "assistant"]
    await gw.sessions.close()


@pytest.mark.parametrize("stream", [False, True])
async def test_with_tracing_the_turn_is_one_span_over_every_attempt_of_every_step_and_its_tool_calls(
    tmp_path: Path, stream: bool
) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from gateway.tracing import Tracing

    pipe, writer, gw = await _pipeline(tmp_path)
    exporter = InMemorySpanExporter()
    gw.tracing = Tracing(gw.config.tracing, processor=SimpleSpanProcessor(exporter))
    if stream:
        opened = await pipe.open_stream(_turn(stream=True))
        _ = [ev async for ev in opened.events]
    else:
        await pipe.complete(_turn(stream=False))
    await writer.close()
    await gw.sessions.close()
    spans = exporter.get_finished_spans()
    (turn,) = [s for s in spans if s.kind == SpanKind.SERVER]
    attempts = sorted((s for s in spans if s.kind == SpanKind.CLIENT), key=lambda s: s.start_time or 0)
    # two model steps, each: primary fails (503), backup answers
    assert [s.name for s in attempts] == ["chat p", "chat b", "chat p", "chat b"]
    assert [(s.attributes or {}).get("error.type") for s in attempts] == ["503", None, "503", None]
    assert all(s.parent is not None and s.parent.span_id == turn.context.span_id for s in attempts)
    assert [(s.attributes or {})["gen_ai.response.finish_reasons"] for s in attempts[1::2]] == [
        ("tool_use",),
        ("stop",),
    ]
    assert (turn.attributes or {})["gen_ai.conversation.id"] == "s1"
    assert [e.name for e in turn.events].count("turnstile.route") == 1  # decided once per turn
    (parent,) = gw.mcp.endpoint.parents  # type: ignore[union-attr]
    assert parent is not None and parent.get_span_context().span_id == turn.context.span_id
