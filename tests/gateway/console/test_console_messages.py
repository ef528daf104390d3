"""Stored messages made readable (gateway/console/messages.py): text, tool calls with their
arguments, tool results, and a line for media that never shows its bytes."""

from __future__ import annotations

from gateway.console.messages import MAX_TEXT_CHARS, conversation, message_view, part_view


def test_parts_are_shown_by_kind_and_media_never_by_its_bytes() -> None:
    image = part_view({"type": "image", "media_type": "image/png", "data": "A" * 4000})
    assert image["kind"] == "image" and "3,000 bytes inline" in image["note"] and "AAAA" not in str(image)
    call = part_view({"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}})
    assert (call["name"], call["id"]) == ("get_weather", "c1") and '"city": "Paris"' in call["arguments"]
    assert part_view({"type": "redacted_thinking", "data": "xyz"})["note"].startswith("3 bytes")
    assert part_view({"type": "thinking", "text": "hmm", "signature": "s"})["note"] == "signed"
    assert part_view({"type": "mystery", "x": 1})["kind"] == "other"
    long = part_view({"type": "text", "text": "x" * (MAX_TEXT_CHARS + 10)})
    assert long["text"].endswith("(10 more characters not shown)")
    assert set(part_view("not a part")) == {"kind", "text", "name", "id", "arguments", "note"}


def test_a_conversation_is_the_request_messages_then_the_answer() -> None:
    request = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "tool", "tool_call_id": "c1", "name": "t", "is_error": True, "content": []},
        ]
    }
    response = {"message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}}
    views = conversation(request, response)
    assert [v["role"] for v in views] == ["user", "tool", "assistant"]
    assert views[1]["is_error"] and views[1]["tool_call_id"] == "c1"
    assert views[2]["answer"] and not views[0]["answer"]
    assert conversation(None, "not json") == []
    assert message_view({"role": "user", "content": "plain"})["parts"][0]["text"] == "plain"
