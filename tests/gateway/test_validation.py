from __future__ import annotations

import pytest

from gateway.errors import InvalidRequest
from gateway.schema import ImagePart, Request, TextPart, ToolChoice, ToolDefinition, UserMessage
from gateway.validation import validate_request

USER = UserMessage(content=[TextPart(text="hi")])
T = ToolDefinition(name="bash")


def _req(**kw) -> Request:
    return Request(model="m", messages=[kw.pop("message", USER)], **kw)


@pytest.mark.parametrize(
    ("kw", "param", "words"),
    [
        ({"tools": [T, T]}, "tools[1]", "already used by tools[0]"),
        ({"tool_choice": ToolChoice(mode="required")}, "tool_choice", "offers none"),
        ({"tools": [T], "tool_choice": ToolChoice(mode="tool", name="nope")}, "tool_choice", "'nope'"),
        ({"temperature": 5.0}, "temperature", "between 0 and 2"),
        ({"temperature": -1.0}, "temperature", "got -1"),
        ({"top_p": 7.0}, "top_p", "between 0 and 1"),
        ({"top_k": 0}, "top_k", "at least 1"),
        ({"max_output_tokens": 0}, "max_tokens", "at least 1"),
        (
            {
                "message": UserMessage(
                    content=[ImagePart(data="!!!", media_type="image/png")], src="messages[0]"
                )
            },
            "messages[0].content[0]",
            "not valid base64",
        ),
    ],
)
def test_inconsistent_requests_are_refused_naming_the_field(kw: dict, param: str, words: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        validate_request(_req(**kw))
    assert err.value.param == param and words in err.value.message


def test_a_consistent_request_passes() -> None:
    validate_request(
        _req(
            tools=[T],
            tool_choice=ToolChoice(mode="tool", name="bash"),
            temperature=1.0,
            message=UserMessage(content=[ImagePart(data="iVBORw0KGgo=", media_type="image/png")]),
        )
    )
