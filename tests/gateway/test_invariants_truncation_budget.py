"""The truncation judgement reads every signal: the stop reason, the output usage against the
request's output budget, and argument completeness. Whenever the budget was reached the client
is told ``length`` (the cause it can act on) and no call is released, whatever stop reason the
upstream gave, whole or streamed; over every stop reason each provider knows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.config import Deployment, TimeoutConfig
from gateway.invariants import (
    LENGTH_REASON,
    StreamTruncationGuard,
    budget_reached,
    check_truncation,
    collect,
)
from gateway.providers import (
    anthropic_common,
    anthropic_messages,
    gemini,
    gemini_common,
    openai_chat,
    openai_common,
)
from gateway.providers.base import HttpProvider
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    Response,
    StopReason,
    StreamEvent,
    TextPart,
    ToolCallPart,
    Usage,
    UserMessage,
)
from gateway.tool_loop import plan_step

# Every raw stop value each provider maps, with the internal reason it becomes.
PROVIDER_STOPS: list[tuple[str, str, StopReason]] = [
    *(("openai_chat", raw, openai_chat.map_stop_reason(raw)) for raw in openai_common._STOP_REASONS),
    *(
        ("anthropic_messages", raw, anthropic_messages.map_stop_reason(raw))
        for raw in anthropic_common._STOP_REASONS
    ),
    *(("gemini", raw, gemini_common.map_stop_reason(raw)) for raw in gemini_common._STOP_REASONS),
]
KEPT_AT_BUDGET = {"content_filter", "aborted"}  # not a cause a bigger budget would cure

COMPLETE = '{"path": "/tmp/a"}'
CUT = '{"path": "/tm'


def _response(stop: StopReason, raw: str | None, output_tokens: int, text: str = "") -> Response:
    content: list[TextPart | ToolCallPart] = [TextPart(text=text)] if text else []
    if raw is not None:
        content.append(ToolCallPart(id="call_1", name="write", raw_arguments=raw))
    return Response(
        id="r",
        model="m",
        message=AssistantMessage(content=content),
        stop_reason=stop,
        usage=Usage(input_tokens=10, output_tokens=output_tokens),
    )


def _events(resp: Response) -> list[StreamEvent]:
    out: list[StreamEvent] = [MessageStart(id="r", model="m")]
    for i, p in enumerate(resp.message.content):
        if isinstance(p, ToolCallPart):
            out += [
                PartStart(index=i, kind="tool_call", id=p.id, name=p.name),
                PartDelta(index=i, arguments=p.raw_arguments),
                PartEnd(index=i),
            ]
        elif isinstance(p, TextPart):
            out += [PartStart(index=i, kind="text"), PartDelta(index=i, text=p.text), PartEnd(index=i)]
    out.append(MessageEnd(stop_reason=resp.stop_reason, usage=resp.usage))
    return out


def _streamed(resp: Response, budget: int | None) -> Response:
    guard = StreamTruncationGuard(budget)
    return collect([out for ev in _events(resp) for out in guard.feed(ev)])


@pytest.mark.parametrize(
    ("api", "raw_stop", "stop"), PROVIDER_STOPS, ids=[f"{a}-{r}" for a, r, _ in PROVIDER_STOPS]
)
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
def test_a_tool_call_at_the_output_budget_is_withheld_and_reported_as_length(
    api: str, raw_stop: str, stop: StopReason, streamed: bool
) -> None:
    if api == "gemini" and stop == "stop":
        stop = "tool_use"  # Gemini's STOP with function calls, as the adapter reports it
    resp = _response(stop, COMPLETE, output_tokens=128)
    out = _streamed(resp, 128) if streamed else check_truncation(resp, 128)

    assert out.message.tool_calls == [], "never executable at the budget"
    assert [w.id for w in out.withheld_tool_calls] == ["call_1"]
    expected = stop if stop in KEPT_AT_BUDGET else "length"
    assert out.stop_reason == expected


@pytest.mark.parametrize(
    ("api", "raw_stop", "stop"), PROVIDER_STOPS, ids=[f"{a}-{r}" for a, r, _ in PROVIDER_STOPS]
)
def test_below_the_budget_only_the_stop_reason_and_the_arguments_decide(
    api: str, raw_stop: str, stop: StopReason
) -> None:
    resp = _response(stop, COMPLETE, output_tokens=127)
    out = check_truncation(resp, 128)
    assert out.stop_reason == stop
    assert (out.message.tool_calls == []) == (stop == "length")


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
def test_a_text_answer_that_used_the_whole_budget_stops_for_length(streamed: bool) -> None:
    resp = _response("stop", None, output_tokens=64, text="It was the best of")
    out = _streamed(resp, 64) if streamed else check_truncation(resp, 64)
    assert out.stop_reason == "length"
    assert out.message.text == "It was the best of"


def test_an_unknown_budget_or_missing_usage_decides_nothing() -> None:
    resp = _response("tool_use", COMPLETE, output_tokens=4096)
    assert check_truncation(resp, None).message.tool_calls
    assert check_truncation(_response("tool_use", COMPLETE, output_tokens=0), 1).message.tool_calls
    assert not budget_reached(Usage(output_tokens=10, estimated=True), 10)


def test_the_withheld_reason_names_the_budget_and_the_tool_loop_says_so() -> None:
    out = check_truncation(_response("tool_use", COMPLETE, output_tokens=300), 256)
    [withheld] = out.withheld_tool_calls
    assert withheld.reason != LENGTH_REASON
    assert "300 of 256" in withheld.reason
    step = plan_step(out, frozenset({"write"}), frozenset(), last=False)
    text = step.blocked["call_1"]
    assert "output token" in text and "256" in text


@given(
    stop=st.sampled_from(sorted({s for _, _, s in PROVIDER_STOPS} | {"tool_use"})),
    raw=st.sampled_from([COMPLETE, CUT, "", None]),
    used=st.integers(min_value=0, max_value=300),
    budget=st.one_of(st.none(), st.integers(min_value=1, max_value=300)),
    streamed=st.booleans(),
)
def test_no_call_is_released_at_the_budget_and_released_calls_are_complete(
    stop: StopReason, raw: str | None, used: int, budget: int | None, streamed: bool
) -> None:
    resp = _response(stop, raw, used)
    out = _streamed(resp, budget) if streamed else check_truncation(resp, budget)
    reached = budget is not None and used >= budget
    if reached:
        assert out.message.tool_calls == []
        assert out.stop_reason == (stop if stop in KEPT_AT_BUDGET else "length")
    for call in out.message.tool_calls:
        assert out.stop_reason != "length"
        assert call.raw_arguments.strip() == "" or call.raw_arguments == COMPLETE
    assert len(out.message.tool_calls) + len(out.withheld_tool_calls) == (0 if raw is None else 1)
    other = check_truncation(resp, budget) if streamed else _streamed(resp, budget)
    assert (other.stop_reason, other.withheld_tool_calls) == (out.stop_reason, out.withheld_tool_calls), (
        "stream and whole answer judge alike"
    )


def _request(max_tokens: int | None, thinking_budget: int | None = None) -> Request:
    return Request.model_validate(
        {
            "model": "m",
            "messages": [UserMessage(content=[TextPart(text="hi")])],
            "max_output_tokens": max_tokens,
            "thinking": {"budget_tokens": thinking_budget} if thinking_budget else None,
        }
    )


@pytest.mark.parametrize(
    ("api", "max_tokens", "dep_max", "thinking", "expected"),
    [
        ("openai_chat", 500, None, None, 500),
        ("openai_chat", None, None, None, None),
        ("anthropic_messages", None, None, None, anthropic_messages.DEFAULT_MAX_TOKENS),
        ("anthropic_messages", None, 1000, None, 1000),
        ("anthropic_messages", 1000, None, 2048, 3048),
        ("gemini", None, 800, None, 800),
        ("gemini", None, None, None, None),
    ],
)
def test_the_output_budget_is_what_the_provider_sends_upstream(
    api: str, max_tokens: int | None, dep_max: int | None, thinking: int | None, expected: int | None
) -> None:
    wire = {"openai_chat": openai_chat, "anthropic_messages": anthropic_messages, "gemini": gemini}[api]
    dep = Deployment(name="d", api=api, model="m", max_output_tokens=dep_max, supports_thinking=True)
    provider = HttpProvider(wire, session=None, timeouts=TimeoutConfig())  # type: ignore[arg-type]
    assert provider.output_budget(_request(max_tokens, thinking), dep) == expected
