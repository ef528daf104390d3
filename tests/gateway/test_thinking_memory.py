"""Signed thinking kept server-side by tool-call id (gateway.thinking_memory): what is
remembered, where it is put back, and the bounds (entries, TTL)."""

from __future__ import annotations

from gateway.schema import (
    AssistantMessage,
    Provenance,
    RedactedThinkingPart,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.thinking_memory import ThinkingMemory

CLAUDE = Provenance(api="anthropic_messages", provider="anthropic", model="claude-sonnet-4")
T1 = ThinkingPart(text="Need the weather tool.", signature="SIG1", provenance=CLAUDE)
T2 = ThinkingPart(text="And the second one.", signature="SIG2", provenance=CLAUDE)
R1 = RedactedThinkingPart(data="REDACTED1", provenance=CLAUDE)


def call(cid: str) -> ToolCallPart:
    return ToolCallPart(id=cid, name="weather", arguments={"location": "Florence"}, raw_arguments="{}")


def answer(*parts: object) -> Response:
    return Response(
        id="msg_1",
        model="claude-sonnet-4",
        message=AssistantMessage(content=list(parts)),  # type: ignore[arg-type]
        stop_reason="tool_use",
    )


def round_two(*assistant: object) -> Request:
    calls = [p for p in assistant if type(p) is ToolCallPart]
    return Request(
        model="an",
        messages=[
            UserMessage(content=[TextPart(text="Weather in Florence?")]),
            AssistantMessage(content=list(assistant), src="messages[1]"),  # type: ignore[arg-type]
            *[ToolResultMessage(tool_call_id=c.id, content=[TextPart(text="40 C")]) for c in calls],
        ],
    )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def content(request: Request) -> list[object]:
    return list(request.messages[1].content)  # type: ignore[union-attr]


def test_dropped_thinking_is_put_back_first_in_the_assistant_turn() -> None:
    mem = ThinkingMemory()
    mem.remember(answer(T1, TextPart(text="Let me check."), call("toolu_1")))
    out, repairs = mem.restore(round_two(TextPart(text="Let me check."), call("toolu_1")))
    assert content(out) == [T1, TextPart(text="Let me check."), call("toolu_1")]
    assert [(r.code, r.id, r.location) for r in repairs] == [("thinking_restored", "toolu_1", "messages[1]")]


def test_unsigned_reasoning_text_is_replaced_by_the_signed_parts() -> None:
    mem = ThinkingMemory()
    mem.remember(answer(T1, R1, call("toolu_1")))
    echoed = ThinkingPart(text="Need the weather tool.")  # reasoning_content: no signature
    out, _ = mem.restore(round_two(echoed, call("toolu_1")))
    assert content(out) == [T1, R1, call("toolu_1")]


def test_interleaved_thinking_goes_back_before_the_call_it_preceded() -> None:
    mem = ThinkingMemory()
    mem.remember(answer(T1, call("toolu_1"), T2, call("toolu_2")))
    out, _ = mem.restore(round_two(call("toolu_1"), call("toolu_2")))
    assert content(out) == [T1, call("toolu_1"), T2, call("toolu_2")]


def test_a_message_with_its_own_signed_thinking_is_left_alone() -> None:
    mem = ThinkingMemory()
    mem.remember(answer(T1, call("toolu_1")))
    request = round_two(T1, call("toolu_1"))
    out, repairs = mem.restore(request)
    assert out is request and repairs == []


def test_answers_without_tool_calls_or_without_signed_thinking_are_not_kept() -> None:
    mem = ThinkingMemory()
    mem.remember(answer(T1, TextPart(text="It is hot.")))
    mem.remember(answer(ThinkingPart(text="unsigned"), call("toolu_1")))
    assert len(mem) == 0


def test_a_different_set_of_calls_is_not_restored() -> None:
    mem = ThinkingMemory()
    mem.remember(answer(T1, call("toolu_1"), call("toolu_2")))
    request = round_two(call("toolu_1"), call("toolu_3"))
    out, repairs = mem.restore(request)
    assert out is request and repairs == []


def test_entries_past_the_ttl_are_forgotten() -> None:
    clock = Clock()
    mem = ThinkingMemory(entries=10, ttl_s=60, clock=clock)
    mem.remember(answer(T1, call("toolu_1")))
    clock.now = 59.0
    assert mem.restore(round_two(call("toolu_1")))[1]
    clock.now = 60.0
    request = round_two(call("toolu_1"))
    assert mem.restore(request) == (request, [])
    assert len(mem) == 0


def test_the_least_recently_used_answer_goes_first_when_full() -> None:
    mem = ThinkingMemory(entries=2)
    mem.remember(answer(T1, call("toolu_1")))
    mem.remember(answer(T1, call("toolu_2")))
    assert mem.restore(round_two(call("toolu_1")))[1]  # toolu_1 used: toolu_2 is now the oldest
    mem.remember(answer(T1, call("toolu_3")))
    assert len(mem) == 2
    assert mem.restore(round_two(call("toolu_2")))[1] == []
    assert mem.restore(round_two(call("toolu_1")))[1]
    assert mem.restore(round_two(call("toolu_3")))[1]


def test_zero_entries_keeps_nothing() -> None:
    mem = ThinkingMemory(entries=0)
    mem.remember(answer(T1, call("toolu_1")))
    assert len(mem) == 0


def test_the_same_id_naming_another_tool_is_not_that_answer() -> None:
    mem = ThinkingMemory()
    mem.remember(answer(T1, call("toolu_1")))
    other = ToolCallPart(id="toolu_1", name="delete_files", arguments={}, raw_arguments="{}")
    request = round_two(other)
    assert mem.restore(request) == (request, [])
