"""A transcript row keeps a bounded part of a large request or answer, marked as cut with its
original size, and is made even when a value cannot be encoded at all."""

from __future__ import annotations

import json

import orjson
import pytest

from gateway.schema import AssistantMessage, Request, Response, TextPart, ToolCallPart, UserMessage
from gateway.transcript import TurnRecord
from gateway.transcript_cut import CUT_KEY, UNSTORABLE_KEY, bounded

BOUND = 64 * 1024
REQUEST, RESPONSE = 22, 23  # column indexes of the row tuple


def _record(**kw: object) -> TurnRecord:
    return TurnRecord(
        request_id="r",
        ts=0.0,
        client_dialect="openai_chat",
        requested_model="m",
        stream=False,
        status=200,
        **kw,
    )  # type: ignore[arg-type]


def _answer(text: str, **extra: object) -> Response:
    return Response(
        id="a",
        model="m",
        message=AssistantMessage(content=[TextPart(text=text)]),
        stop_reason="stop",
        **extra,
    )  # type: ignore[arg-type]


def test_an_answer_longer_than_the_bound_is_stored_cut_with_its_original_size() -> None:
    resp = _answer("y" * 5_000_000)
    full = resp.__pydantic_serializer__.to_json(resp)
    stored = _record(response=resp).row(BOUND)[RESPONSE]

    assert len(stored.encode()) <= BOUND
    kept = json.loads(stored)
    assert kept[CUT_KEY]["original_bytes"] == len(full)
    assert kept[CUT_KEY]["stored_bytes"] == len(stored.encode())
    assert kept[CUT_KEY]["strings_shortened"] == 1
    text = kept["message"]["content"][0]["text"]
    assert text.startswith("yyyy") and text.endswith("…") and len(text) > BOUND // 2
    assert kept["stop_reason"] == "stop" and kept["model"] == "m"  # the rest of the answer is whole


def test_an_answer_within_the_bound_is_stored_whole() -> None:
    resp = _answer("short")
    assert _record(response=resp).row(BOUND)[RESPONSE] == resp.__pydantic_serializer__.to_json(resp).decode()


def test_a_request_of_many_small_items_is_stored_as_a_marked_head() -> None:
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text=f"m{i}")]) for i in range(20_000)])
    stored = _record(request=req).row(BOUND)[REQUEST]
    assert len(stored.encode()) <= BOUND
    kept = json.loads(stored)
    assert kept[CUT_KEY]["original_bytes"] > BOUND
    assert kept["head"].startswith('{"model":"m","messages":[')


def test_non_ascii_text_is_cut_to_the_bound_in_bytes() -> None:
    stored = bounded(orjson.dumps({"text": "é" * 400_000, "n": 1}), BOUND)
    assert len(stored.encode()) <= BOUND
    assert json.loads(stored)["n"] == 1


def test_an_answer_that_cannot_be_encoded_still_gets_its_row_saying_why() -> None:
    deep: dict[str, object] = {}
    for _ in range(400):
        deep = {"a": deep}
    call = ToolCallPart(id="c", name="f", arguments=deep, raw_arguments="{}")
    resp = Response(id="a", model="m", message=AssistantMessage(content=[call]), stop_reason="tool_use")
    row = _record(response=resp, request={"deep": deep}).row(BOUND)

    for column in (REQUEST, RESPONSE):
        note = json.loads(row[column])[UNSTORABLE_KEY]
        assert "recursion" in note.lower() or "depth" in note.lower(), note


@pytest.mark.parametrize("size", [BOUND + 1, 3 * BOUND])
def test_any_json_over_the_bound_comes_back_valid_and_within_it(size: int) -> None:
    raw = orjson.dumps({"a": ["x" * (size // 3)] * 3, "b": {"c": "d" * (size // 4)}})
    stored = bounded(raw, BOUND)
    assert len(stored.encode()) <= BOUND
    assert CUT_KEY in json.loads(stored)
