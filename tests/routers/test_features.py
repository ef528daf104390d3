"""Turn features on real turns (τ-bench airline conversation, OpenAI dialect) and on C16."""

from __future__ import annotations

import json
from pathlib import Path

from route_turns import traj, turn

from gateway.edges.anthropic_messages import parse_request as parse_anthropic
from routers.features import extract


def test_a_user_message_is_a_fresh_user_turn_with_depth_and_no_errors() -> None:
    f = extract(turn(4))  # system, user, assistant, user
    assert f.kind == "fresh_user" and f.depth == 1 and f.tool_loop_depth == 0 and f.recent_tool_errors == 0
    assert f.text.startswith("Sure, my user ID is mia_li_3668")
    assert "book_reservation" in f.tools and f.images == 0


def test_tool_results_with_tools_still_offered_are_digestion_turns() -> None:
    f = extract(turn(8))  # ends with the get_user_details result
    assert f.kind == "tool_digest" and f.tool_loop_depth == 1
    assert f.history_tokens < f.input_tokens


def test_tool_results_when_no_tool_can_be_called_ask_for_the_final_answer() -> None:
    assert extract(turn(10, with_tools=False)).kind == "final_answer"
    assert extract(turn(10, tool_choice="none")).kind == "final_answer"


def test_an_error_text_tool_result_is_a_retry_after_a_tool_error() -> None:
    assert str(traj()[21]["content"]).startswith("Error: payment amount does not add up")
    f = extract(turn(22))
    assert f.kind == "tool_error_retry" and f.recent_tool_errors == 1 and f.tool_loop_depth == 1


def test_token_estimate_is_chars_over_four_and_grows_with_the_conversation() -> None:
    sizes = [extract(turn(n)).input_tokens for n in (2, 10, 20, 31)]
    assert sizes == sorted(sizes) and sizes[0] > 1000  # the airline policy system prompt is long
    system_chars = len(str(traj()[0]["content"]))
    assert abs(extract(turn(1, with_tools=False)).input_tokens - system_chars // 4) <= 1


def test_unsigned_openai_history_has_no_signed_loop() -> None:
    f = extract(turn(8))
    assert not f.signed_open_loop


def test_c16_turn_two_is_an_open_signed_tool_loop_on_the_signing_model() -> None:
    cases = Path(__file__).resolve().parent.parent / "fixtures" / "cases" / "handed.jsonl"
    c16 = next(json.loads(line) for line in cases.read_text().splitlines() if '"C16"' in line[:20])
    body = c16["input"]["steps"][1]["request"]
    req = parse_anthropic(json.dumps(body).encode())
    f = extract(req)
    assert f.kind == "tool_digest" and f.thinking and f.signed_open_loop
    assert f.current is None or f.current.api == "anthropic_messages"


def test_code_and_images_are_noticed() -> None:
    from gateway.schema import ImagePart, Request, TextPart, UserMessage

    req = Request(
        model="m",
        messages=[
            UserMessage(
                content=[
                    TextPart(text="why does this fail?\n```python\ndef f():\n    return 1/0\n```"),
                    ImagePart(url="https://example.invalid/x.png"),
                ]
            )
        ],
    )
    f = extract(req)
    assert f.has_code and f.images == 1 and f.input_tokens >= 1000
