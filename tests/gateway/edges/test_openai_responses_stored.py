"""Stored responses read back in the Responses shapes: the Response object from the stored
answer, input items per stored message, the list page's order, limit and cursor."""

from __future__ import annotations

import openai.types.responses as rt
import pytest
from openai.types.responses.response_item import ResponseItem
from pydantic import TypeAdapter

from gateway.edges.openai_responses import render_deleted, render_input_items, render_stored
from gateway.errors import InvalidRequest
from gateway.schema import AssistantMessage, ImagePart, TextPart, ToolCallPart, ToolResultMessage, UserMessage

ITEM = TypeAdapter(ResponseItem)
ANSWER = AssistantMessage(
    content=[TextPart(text="hi"), ToolCallPart(id="c1", name="f", arguments={}, raw_arguments="{}")]
)
INPUTS = [
    ("e1", UserMessage(content=[TextPart(text="q"), ImagePart(data="AAAA", media_type="image/png")])),
    ("e2", ToolResultMessage(tool_call_id="c0", content=[TextPart(text="42")])),
    ("e3", AssistantMessage(content=[TextPart(text="earlier")])),
]


def test_a_stored_response_reads_back_as_a_response_object() -> None:
    body = render_stored("resp_x", 1700000000.5, "model-x", ANSWER)
    parsed = rt.Response.model_validate(body)
    assert (parsed.id, parsed.model, parsed.status, parsed.store) == ("resp_x", "model-x", "completed", True)
    assert parsed.output_text == "hi"
    assert [i.type for i in parsed.output] == ["message", "function_call"]
    assert parsed.usage is None


def test_input_items_in_openai_order_by_default_newest_first() -> None:
    page = render_input_items("resp_x", INPUTS, {})
    assert [i["type"] for i in page["data"]] == ["message", "function_call_output", "message"]
    assert page["data"][0]["role"] == "assistant"
    for item in page["data"]:
        ITEM.validate_python(item)
    asc = render_input_items("resp_x", INPUTS, {"order": "asc"})["data"]
    assert asc[0]["content"] == [
        {"type": "input_text", "text": "q"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
    ]
    assert asc[1]["output"] == "42"


def test_limit_and_after_page_through_the_items() -> None:
    first = render_input_items("resp_x", INPUTS, {"order": "asc", "limit": "2"})
    assert first["has_more"] is True and len(first["data"]) == 2
    rest = render_input_items("resp_x", INPUTS, {"order": "asc", "after": first["last_id"]})
    assert [i["type"] for i in rest["data"]] == ["message"] and rest["has_more"] is False


@pytest.mark.parametrize(
    ("query", "param"),
    [({"order": "up"}, "order"), ({"limit": "0"}, "limit"), ({"after": "zz"}, "after"), ({"x": "1"}, "x")],
)
def test_bad_query_parameters_are_named(query: dict[str, str], param: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        render_input_items("resp_x", INPUTS, query)
    assert err.value.param == param


def test_deleted_body() -> None:
    assert render_deleted("resp_x") == {"id": "resp_x", "object": "response", "deleted": True}
