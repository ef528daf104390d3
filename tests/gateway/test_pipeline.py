"""One turn through the pipeline, with scripted providers (no network)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.config import Deployment, GatewayConfig, Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import CapabilityError, GuardViolation, UpstreamError
from gateway.pipeline import Gateway, Pipeline, TurnContext
from gateway.providers.base import Provider
from gateway.providers.demo import response_events
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    MessageEnd,
    PartStart,
    Provenance,
    Request,
    Response,
    StreamError,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from gateway.transcript import TranscriptWriter, recent


def _text_response(text: str = "ok", **usage: int) -> Response:
    return Response(
        id="r1",
        model="m",
        message=AssistantMessage(content=[TextPart(text=text)]),
        stop_reason="stop",
        usage=Usage(**usage) if usage else Usage(input_tokens=10, output_tokens=5),
    )


class Scripted(Provider):
    """Answers each call with the next scripted item: a Response, or an exception to raise.
    Streams the Response as events; ``fail_after`` cuts a stream after that many events."""

    api = "openai_chat"

    def __init__(self, *script: Response | Exception, fail_after: int | None = None) -> None:
        self.script = list(script)
        self.calls: list[tuple[str, Request]] = []
        self.fail_after = fail_after

    def _next(self, request: Request, dep: Deployment) -> Response:
        self.calls.append((dep.name, request))
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        return self._next(request, deployment)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        resp = self._next(request, deployment)
        for n, ev in enumerate(response_events(resp, chunk_chars=2)):
            if self.fail_after is not None and n == self.fail_after:
                raise UpstreamError("connection reset", status=502, deployment=deployment.name)
            yield ev


CONFIG = {
    "deployments": [
        {"name": "a", "api": "openai_chat", "model": "model-a", "price": {"input": 1.0, "output": 2.0}},
        {"name": "b", "api": "openai_chat", "model": "model-b", "price": {"input": 1.0, "output": 2.0}},
        {"name": "blind", "api": "openai_chat", "model": "text-only", "supports_images": False},
    ],
    "models": [{"name": "auto", "deployments": ["a", "b"]}],
}


async def _pipeline(provider: Provider, tmp_path: Path, **guards: str) -> tuple[Pipeline, TranscriptWriter]:
    cfg: GatewayConfig = parse_config({**CONFIG, "guards": guards})
    writer = TranscriptWriter(tmp_path / "t.db")
    await writer.start()
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    return Pipeline(
        Gateway(config=cfg, table=table, providers={"openai_chat": provider}, transcript=writer)
    ), writer


def _ctx(*messages, model: str = "auto", **kw) -> TurnContext:
    return TurnContext(
        request_id="req-1", dialect="openai_chat", request=Request(model=model, messages=list(messages), **kw)
    )


USER = UserMessage(content=[TextPart(text="hi")])


async def test_answer_is_priced_and_recorded(tmp_path: Path) -> None:
    provider = Scripted(_text_response(input_tokens=1_000_000, output_tokens=500_000))
    pipe, writer = await _pipeline(provider, tmp_path)
    result = await pipe.complete(_ctx(USER))
    await writer.close()
    assert result.response.usage.cost_usd == pytest.approx(2.0)
    assert result.headers["x-turnstile-deployment"] == "a"
    assert result.headers["x-turnstile-cost-usd"] == "2.000000000"
    row = recent(tmp_path / "t.db")[0]
    assert row["deployment"] == "a" and row["status"] == 200 and row["stop"] == "stop"
    assert row["guard_outcome"] == "ok" and row["cost_usd"] == pytest.approx(2.0)


async def test_orphan_tool_call_is_rejected_with_zero_upstream_calls_and_recorded(tmp_path: Path) -> None:
    provider = Scripted(_text_response())
    pipe, writer = await _pipeline(provider, tmp_path)
    call = ToolCallPart(id="call_2", name="bash", raw_arguments="{}", src="messages[1].tool_calls[0]")
    with pytest.raises(GuardViolation, match=r"call_2 \(messages\[1\]\.tool_calls\[0\]\)"):
        await pipe.complete(
            _ctx(USER, AssistantMessage(content=[call]), UserMessage(content=[TextPart(text="?")]))
        )
    await writer.close()
    assert provider.calls == []
    row = recent(tmp_path / "t.db")[0]
    assert row["status"] == 400 and row["guard_outcome"] == "rejected" and "call_2" in row["error"]


async def test_repair_policy_sends_an_error_result_upstream(tmp_path: Path) -> None:
    provider = Scripted(_text_response())
    pipe, writer = await _pipeline(provider, tmp_path, pairing="repair")
    call = ToolCallPart(id="call_2", name="bash", raw_arguments="{}")
    result = await pipe.complete(
        _ctx(USER, AssistantMessage(content=[call]), UserMessage(content=[TextPart(text="?")]))
    )
    await writer.close()
    sent = provider.calls[0][1].messages
    assert isinstance(sent[2], ToolResultMessage) and sent[2].is_error and sent[2].tool_call_id == "call_2"
    assert result.headers["x-turnstile-repairs"] == "1"


async def test_rate_limited_primary_falls_back_to_the_next_deployment(tmp_path: Path) -> None:
    provider = Scripted(UpstreamError("slow down", status=429, retry_after_s=3), _text_response("from b"))
    pipe, writer = await _pipeline(provider, tmp_path)
    result = await pipe.complete(_ctx(USER))
    await writer.close()
    assert [c[0] for c in provider.calls] == ["a", "b"]
    assert result.response.message.text == "from b" and result.headers["x-turnstile-deployment"] == "b"
    assert recent(tmp_path / "t.db")[0]["attempts"].count('"status":429') == 1


async def test_all_deployments_failing_raises_the_last_error_with_retry_after(tmp_path: Path) -> None:
    provider = Scripted(
        UpstreamError("busy", status=503), UpstreamError("slow down", status=429, retry_after_s=7)
    )
    pipe, writer = await _pipeline(provider, tmp_path)
    with pytest.raises(UpstreamError) as err:
        await pipe.complete(_ctx(USER))
    await writer.close()
    assert err.value.status == 429 and err.value.retry_after_s == 7


async def test_client_error_from_upstream_is_not_retried_elsewhere(tmp_path: Path) -> None:
    provider = Scripted(UpstreamError("bad request", status=400), _text_response())
    pipe, writer = await _pipeline(provider, tmp_path)
    with pytest.raises(UpstreamError):
        await pipe.complete(_ctx(USER))
    await writer.close()
    assert len(provider.calls) == 1


def _truncated_call_response() -> Response:
    call = ToolCallPart(
        id="t1",
        name="run",
        raw_arguments='{"commands":["npm install","npm test"]}',
        arguments={"commands": ["npm install", "npm test"]},
    )
    return Response(
        id="r",
        model="m",
        message=AssistantMessage(content=[call]),
        stop_reason="length",
        usage=Usage(input_tokens=80, output_tokens=30),
    )


async def test_truncated_tool_call_is_withheld_and_named_in_headers(tmp_path: Path) -> None:
    pipe, writer = await _pipeline(Scripted(_truncated_call_response()), tmp_path)
    result = await pipe.complete(_ctx(USER))
    await writer.close()
    assert result.response.message.tool_calls == [] and result.response.stop_reason == "length"
    assert result.headers["x-turnstile-withheld-tool-calls"] == "t1"


async def test_retry_policy_asks_again_with_a_larger_output_budget(tmp_path: Path) -> None:
    provider = Scripted(_truncated_call_response(), _text_response("done", input_tokens=80, output_tokens=10))
    pipe, writer = await _pipeline(provider, tmp_path, truncation="retry")
    result = await pipe.complete(_ctx(USER, max_output_tokens=30))
    await writer.close()
    assert [c[1].max_output_tokens for c in provider.calls] == [30, 60]
    assert result.response.message.text == "done"
    assert result.response.usage.output_tokens == 40  # both attempts are paid for


async def test_image_to_a_model_without_vision_is_refused_naming_the_tool_result(tmp_path: Path) -> None:
    pipe, writer = await _pipeline(Scripted(), tmp_path)
    call = ToolCallPart(id="s1", name="shot", raw_arguments="{}")
    result = ToolResultMessage(
        tool_call_id="s1", content=[ImagePart(data="iVBO", media_type="image/png")], src="messages[2]"
    )
    with pytest.raises(CapabilityError, match=r"tool result for s1 \(messages\[2\]\) contains an image"):
        await pipe.complete(_ctx(USER, AssistantMessage(content=[call]), result, model="blind"))
    await writer.close()


async def test_open_tool_loop_returns_to_the_model_that_signed_its_thinking(tmp_path: Path) -> None:
    provider = Scripted(_text_response())
    pipe, writer = await _pipeline(provider, tmp_path)
    signed = ThinkingPart(
        text="need tool",
        signature="SIG_B",
        provenance=Provenance(api="openai_chat", provider="openai", model="model-b"),
    )
    call = ToolCallPart(id="k1", name="price", raw_arguments="{}")
    await pipe.complete(
        _ctx(
            USER,
            AssistantMessage(content=[signed, call]),
            ToolResultMessage(tool_call_id="k1", content=[TextPart(text="9.99")]),
        )
    )
    await writer.close()
    dep, sent = provider.calls[0]
    assert dep == "b"
    assert sent.messages[1].content[0] == signed


async def test_usage_is_estimated_when_upstream_reports_none(tmp_path: Path) -> None:
    pipe, writer = await _pipeline(Scripted(_text_response(input_tokens=0, output_tokens=0)), tmp_path)
    result = await pipe.complete(_ctx(UserMessage(content=[TextPart(text="hello " * 50)])))
    await writer.close()
    assert result.response.usage.estimated and result.response.usage.input_tokens > 0


async def test_stream_falls_back_when_the_primary_fails_before_its_first_event(tmp_path: Path) -> None:
    provider = Scripted(UpstreamError("overloaded", status=529), _text_response("streamed"))
    pipe, writer = await _pipeline(provider, tmp_path)
    turn = await pipe.open_stream(_ctx(USER, stream=True))
    events = [e async for e in turn.events]
    await writer.close()
    assert turn.headers["x-turnstile-deployment"] == "b"
    assert isinstance(events[-1], MessageEnd) and events[-1].usage.cost_usd is not None
    assert recent(tmp_path / "t.db")[0]["stop"] == "stop"


async def test_stream_cut_after_first_byte_ends_with_an_error_and_is_not_retried(tmp_path: Path) -> None:
    provider = Scripted(_text_response("abcdefgh"), _text_response("never"), fail_after=3)
    pipe, writer = await _pipeline(provider, tmp_path)
    turn = await pipe.open_stream(_ctx(USER, stream=True))
    events = [e async for e in turn.events]
    await writer.close()
    assert isinstance(events[-1], StreamError) and "connection reset" in events[-1].message
    assert len(provider.calls) == 1
    row = recent(tmp_path / "t.db")[0]
    assert row["status"] == 502 and row["error"]


async def test_stream_holds_tool_calls_until_the_stop_reason_is_known(tmp_path: Path) -> None:
    pipe, writer = await _pipeline(Scripted(_truncated_call_response()), tmp_path)
    turn = await pipe.open_stream(_ctx(USER, stream=True))
    events = [e async for e in turn.events]
    await writer.close()
    assert not any(isinstance(e, PartStart) and e.kind == "tool_call" for e in events)
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.stop_reason == "length"
    assert [w.id for w in end.withheld_tool_calls] == ["t1"]


def test_transcript_keeps_only_the_new_part_of_each_turn() -> None:
    from gateway.layers.record import HISTORY_OMITTED_KEY, turn_part
    from gateway.schema import SystemMessage

    call = ToolCallPart(id="c1", name="bash", raw_arguments="{}")
    req = Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="be brief")]),
            USER,
            AssistantMessage(content=[call]),
            ToolResultMessage(tool_call_id="c1", content=[TextPart(text="ok")]),
        ],
    )
    part = turn_part(req)
    assert [m.role for m in part.messages] == ["system", "tool"]
    assert part.metadata[HISTORY_OMITTED_KEY] == 2
    first = Request(model="m", messages=[USER])
    assert turn_part(first) is first


async def test_retry_policy_asks_again_only_once_then_withholds(tmp_path: Path) -> None:
    provider = Scripted(_truncated_call_response(), _truncated_call_response(), _truncated_call_response())
    pipe, writer = await _pipeline(provider, tmp_path, truncation="retry")
    result = await pipe.complete(_ctx(USER, max_output_tokens=30))
    await writer.close()
    assert [c[1].max_output_tokens for c in provider.calls] == [30, 60]
    assert result.response.message.tool_calls == [] and result.response.stop_reason == "length"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_gateway_bug_before_the_answer_still_writes_one_row(tmp_path: Path, stream: bool) -> None:
    provider = Scripted(RuntimeError("a bug in an adapter"))
    pipe, writer = await _pipeline(provider, tmp_path)
    with pytest.raises(RuntimeError, match="a bug in an adapter"):
        if stream:
            await pipe.open_stream(_ctx(USER, stream=True))
        else:
            await pipe.complete(_ctx(USER))
    await writer.close()
    rows = recent(tmp_path / "t.db")
    assert len(rows) == 1 and rows[0]["status"] == 500
    assert "internal error: RuntimeError: a bug in an adapter" in rows[0]["error"]
