"""Foreign-thinking policy (gateway.invariants.apply_thinking_policy) and handed case C16
(turn 2 converted by hand from /work/shared/cases/handed.jsonl)."""

from __future__ import annotations

import pytest

from gateway.config import GuardPolicy
from gateway.errors import CapabilityError
from gateway.invariants import apply_thinking_policy, provenance_matches
from gateway.schema import (
    AssistantMessage,
    Provenance,
    RedactedThinkingPart,
    Request,
    TextPart,
    ThinkingConfig,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

MODEL_A = Provenance(api="anthropic_messages", provider="anthropic", model="model-A")
MODEL_B = Provenance(api="anthropic_messages", provider="anthropic", model="model-B")
STRIP = GuardPolicy(foreign_thinking="strip")
TEXT = GuardPolicy(foreign_thinking="text")
REJECT = GuardPolicy(foreign_thinking="reject")


def c16_turn2(provenance: Provenance | None = MODEL_A) -> Request:
    return Request(
        model="auto",
        max_output_tokens=2048,
        thinking=ThinkingConfig(budget_tokens=1024),
        messages=[
            UserMessage(content=[TextPart(text="Price of SKU X1?")], src="messages[0]"),
            AssistantMessage(
                content=[
                    ThinkingPart(
                        text="Need the price tool.", signature="SIG_A_opaque", provenance=provenance
                    ),
                    ToolCallPart(
                        id="toolu_k1",
                        name="get_price",
                        arguments={"sku": "X1"},
                        raw_arguments='{"sku":"X1"}',
                        src="messages[1].content[1]",
                    ),
                ],
                src="messages[1]",
            ),
            ToolResultMessage(
                tool_call_id="toolu_k1", content=[TextPart(text="9.99")], src="messages[2].content[0]"
            ),
        ],
    )


def test_C16_signed_thinking_goes_back_byte_identical_to_the_model_that_signed_it() -> None:
    request = c16_turn2()
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP)
    assert repairs == []
    assert out == request
    part = out.messages[1].content[0]  # type: ignore[union-attr]
    assert isinstance(part, ThinkingPart) and part.signature == "SIG_A_opaque"
    assert out.thinking is not None and out.thinking.enabled


def test_C16_signature_of_model_A_never_reaches_model_B_and_thinking_is_disabled() -> None:
    request = c16_turn2()
    out, repairs = apply_thinking_policy(request, MODEL_B, STRIP, leading_thinking=True)
    assert "SIG_A_opaque" not in out.model_dump_json()
    assert [type(p).__name__ for p in out.messages[1].content] == ["ToolCallPart"]  # type: ignore[union-attr]
    assert out.thinking is not None and out.thinking.enabled is False
    assert [r.code for r in repairs] == ["foreign_thinking_stripped", "thinking_disabled"]
    assert repairs[0].location == "messages[1].content[0]"
    # the input still holds the signature for a later turn toward model-A
    assert "SIG_A_opaque" in request.model_dump_json() and request.thinking.enabled  # type: ignore[union-attr]


def test_C16_reject_policy_names_the_location() -> None:
    with pytest.raises(CapabilityError) as info:
        apply_thinking_policy(c16_turn2(), MODEL_B, REJECT)
    assert info.value.status == 400
    assert info.value.param == "messages[1].content[0]"
    assert "messages[1].content[0]" in info.value.message


def test_text_policy_turns_thinking_into_tagged_text_and_drops_redacted() -> None:
    request = c16_turn2()
    msg = request.messages[1]
    assert isinstance(msg, AssistantMessage)
    msg2 = msg.model_copy(
        update={"content": [RedactedThinkingPart(data="ENC", provenance=MODEL_A), *msg.content]}
    )
    request = request.model_copy(update={"messages": [request.messages[0], msg2, request.messages[2]]})
    out, repairs = apply_thinking_policy(request, MODEL_B, TEXT, leading_thinking=True)
    content = out.messages[1].content  # type: ignore[union-attr]
    assert content[0] == TextPart(text="<thinking>Need the price tool.</thinking>")
    assert isinstance(content[1], ToolCallPart)
    assert "SIG_A_opaque" not in out.model_dump_json() and "ENC" not in out.model_dump_json()
    assert [r.code for r in repairs] == [
        "foreign_thinking_stripped",
        "foreign_thinking_as_text",
        "thinking_disabled",
    ]


def test_unknown_provenance_matches_nothing_unless_assumed() -> None:
    request = c16_turn2(provenance=None)
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP)
    assert "SIG_A_opaque" not in out.model_dump_json() and repairs
    any_anthropic = Provenance(api="anthropic_messages", provider="anthropic", model="")
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP, assume_provenance=any_anthropic)
    assert out == request and repairs == []


def test_provenance_matching_rules() -> None:
    assert provenance_matches(MODEL_A, MODEL_A)
    assert not provenance_matches(MODEL_A, MODEL_B)
    assert provenance_matches(Provenance(api="anthropic_messages", provider="anthropic"), MODEL_B)
    assert not provenance_matches(Provenance(api="gemini", provider="anthropic", model="model-A"), MODEL_A)
    assert not provenance_matches(
        Provenance(api="anthropic_messages", provider="x", model="model-A"), MODEL_A
    )
    assert not provenance_matches(None, MODEL_A)


def test_tool_call_signature_is_dropped_toward_another_model_and_kept_toward_its_own() -> None:
    gem = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")
    call = ToolCallPart(id="c", name="f", signature="TS", provenance=gem)
    request = Request(
        model="x",
        messages=[
            UserMessage(content=[TextPart(text="q")]),
            AssistantMessage(content=[call]),
            ToolResultMessage(tool_call_id="c"),
        ],
    )
    out, repairs = apply_thinking_policy(request, gem, STRIP)
    assert out == request and repairs == []
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP)
    kept = out.messages[1].content[0]  # type: ignore[union-attr]
    assert (
        isinstance(kept, ToolCallPart)
        and kept.signature is None
        and kept.provenance is None
        and kept.id == "c"
    )
    assert [(r.code, r.id) for r in repairs] == [("foreign_signature_dropped", "c")]
    assert out.thinking is None


def test_thinking_stays_enabled_when_stripped_thinking_is_not_in_the_open_tool_loop() -> None:
    request = c16_turn2().model_copy(deep=True)
    request.messages.append(AssistantMessage(content=[TextPart(text="It is 9.99.")]))
    request.messages.append(UserMessage(content=[TextPart(text="thanks")]))
    out, repairs = apply_thinking_policy(request, MODEL_B, STRIP)
    assert out.thinking is not None and out.thinking.enabled
    assert [r.code for r in repairs] == ["foreign_thinking_stripped"]


def _without_thinking(request: Request) -> Request:
    msgs = list(request.messages)
    msg = msgs[1]
    assert isinstance(msg, AssistantMessage)
    msgs[1] = msg.model_copy(update={"content": [p for p in msg.content if type(p) is ToolCallPart]})
    return request.model_copy(update={"messages": msgs})


def test_open_tool_loop_without_thinking_turns_thinking_off_for_a_target_that_requires_it() -> None:
    request = _without_thinking(c16_turn2())
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP, leading_thinking=True)
    assert out.thinking is not None and out.thinking.enabled is False
    assert [(r.code, r.location) for r in repairs] == [("thinking_disabled", "messages[1]")]
    assert "carries no thinking signed by anthropic/model-A" in repairs[0].message
    assert out.messages == request.messages, "nothing else changes"


def test_open_tool_loop_without_thinking_is_left_alone_for_a_target_that_does_not_require_it() -> None:
    request = _without_thinking(c16_turn2())
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP)
    assert out is request and repairs == []


def test_leading_signed_thinking_keeps_thinking_on_where_it_is_required() -> None:
    request = c16_turn2()
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP, leading_thinking=True)
    assert out is request and repairs == []


def test_leading_rule_ignores_requests_without_thinking() -> None:
    request = _without_thinking(c16_turn2()).model_copy(update={"thinking": None})
    out, repairs = apply_thinking_policy(request, MODEL_A, STRIP, leading_thinking=True)
    assert out is request and repairs == []


OPENAI = Provenance(api="openai_responses", provider="openai", model="gpt-5")


def test_stripped_thinking_in_a_tool_round_keeps_thinking_on_for_a_target_without_the_leading_rule() -> None:
    """OpenAI has no rule that a tool round starts with signed thinking: the client's reasoning
    request stands although the foreign thinking was removed."""
    request = c16_turn2()
    out, repairs = apply_thinking_policy(request, OPENAI, STRIP)
    assert out.thinking is not None and out.thinking.enabled
    assert [r.code for r in repairs] == ["foreign_thinking_stripped"]
    assert [type(p).__name__ for p in out.messages[1].content] == ["ToolCallPart"]  # type: ignore[union-attr]
