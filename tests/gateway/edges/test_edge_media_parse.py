"""Documents and audio at every edge: Anthropic ``document`` blocks, OpenAI Chat ``file`` /
``input_audio`` parts, Responses ``input_file``, Gemini non-image ``inlineData`` / ``fileData``
become :class:`DocumentPart` / :class:`AudioPart` with their source, name and location."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.edges import anthropic_messages, gemini, openai_chat, openai_responses
from gateway.errors import InvalidRequest
from gateway.schema import AudioPart, DocumentPart, TextPart, UserMessage

PDF = "JVBERi0xLjQK"


def dumped(parts: list[Any]) -> list[dict[str, Any]]:
    """Parts as the schema stores them (``src``, a location for errors only, left out)."""
    return [p.model_dump() for p in parts]


def _anthropic(content: list[dict[str, Any]]) -> UserMessage:
    body = {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": content}]}
    msg = anthropic_messages.parse_request(orjson.dumps(body)).messages[0]
    assert type(msg) is UserMessage
    return msg


def _chat(content: list[dict[str, Any]]) -> UserMessage:
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    msg = openai_chat.parse_request(orjson.dumps(body)).messages[0]
    assert type(msg) is UserMessage
    return msg


def _responses(content: list[dict[str, Any]]) -> UserMessage:
    body = {"model": "m", "input": [{"role": "user", "content": content}]}
    msg = openai_responses.parse_request(orjson.dumps(body)).messages[0]
    assert type(msg) is UserMessage
    return msg


def _gemini(parts: list[dict[str, Any]]) -> UserMessage:
    body = {"contents": [{"role": "user", "parts": parts}]}
    msg = gemini.parse_request(orjson.dumps(body), model="gemini-2.5-flash", stream=False).messages[0]
    assert type(msg) is UserMessage
    return msg


def test_anthropic_document_blocks_of_every_source_carry_title_context_citations_and_cache() -> None:
    msg = _anthropic(
        [
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                "title": "report.pdf",
                "context": "Q3 numbers",
                "citations": {"enabled": True},
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "plain words"},
            },
            {"type": "document", "source": {"type": "file", "file_id": "file_011"}},
            {"type": "text", "text": "Summarise."},
        ]
    )
    assert dumped(msg.content) == dumped(
        [
            DocumentPart(
                data=PDF,
                media_type="application/pdf",
                filename="report.pdf",
                context="Q3 numbers",
                citations={"enabled": True},
                cache_control={"type": "ephemeral"},
            ),
            DocumentPart(url="https://example.com/a.pdf", media_type="application/pdf"),
            DocumentPart(text="plain words", media_type="text/plain"),
            DocumentPart(file_id="file_011", file_api="anthropic"),
            TextPart(text="Summarise."),
        ]
    )
    assert [p.src for p in msg.content if type(p) is DocumentPart] == [
        f"messages[0].content[{j}]" for j in range(4)
    ]


def test_an_anthropic_document_source_of_an_unknown_type_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequest) as exc:
        _anthropic([{"type": "document", "source": {"type": "clay", "content": []}}])
    assert exc.value.param == "messages[0].content[0].source.type"


def test_an_anthropic_content_document_keeps_its_blocks_and_its_text() -> None:
    blocks = [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]
    msg = _anthropic([{"type": "document", "source": {"type": "content", "content": blocks}, "title": "T"}])
    (part,) = msg.content
    assert (part.content_source, part.text, part.filename) == (blocks, "One.\n\nTwo.", "T")


def test_openai_chat_file_parts_by_data_uri_and_file_id_and_input_audio() -> None:
    msg = _chat(
        [
            {
                "type": "file",
                "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "r.pdf"},
            },
            {"type": "file", "file": {"file_id": "file-abc"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        ]
    )
    assert dumped(msg.content) == dumped(
        [
            DocumentPart(data=PDF, media_type="application/pdf", filename="r.pdf"),
            DocumentPart(file_id="file-abc", file_api="openai"),
            AudioPart(data="UklGRg==", media_type="audio/wav"),
            AudioPart(data="SUQz", media_type="audio/mpeg"),
        ]
    )
    assert [p.src for p in msg.content] == [f"messages[0].content[{j}]" for j in range(4)]


@pytest.mark.parametrize(
    ("part", "param"),
    [
        ({"type": "file", "file": {"filename": "x.pdf"}}, "messages[0].content[0].file"),
        (
            {"type": "file", "file": {"file_data": "data:application/pdf,abc"}},
            "messages[0].content[0].file.file_data",
        ),
        (
            {"type": "input_audio", "input_audio": {"data": "x", "format": "flac"}},
            "messages[0].content[0].input_audio.format",
        ),
    ],
)
def test_openai_chat_bad_file_or_audio_parts_are_refused_naming_the_field(
    part: dict[str, Any], param: str
) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _chat([part])
    assert exc.value.param == param


def test_openai_chat_file_in_a_tool_message_is_refused_by_name() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "file", "file": {"file_id": "f"}}]},
        ],
    }
    with pytest.raises(InvalidRequest) as exc:
        openai_chat.parse_request(orjson.dumps(body))
    assert exc.value.param == "messages[2].content[0].type"


def test_responses_input_file_by_data_url_and_id() -> None:
    msg = _responses(
        [
            {"type": "input_file", "file_data": f"data:application/pdf;base64,{PDF}", "filename": "r.pdf"},
            {"type": "input_file", "file_url": "https://example.com/a.pdf"},
            {"type": "input_file", "file_id": "file-abc"},
        ]
    )
    assert dumped(msg.content) == dumped(
        [
            DocumentPart(data=PDF, media_type="application/pdf", filename="r.pdf"),
            DocumentPart(url="https://example.com/a.pdf"),
            DocumentPart(file_id="file-abc", file_api="openai"),
        ]
    )
    assert [p.src for p in msg.content] == [f"input[0].content[{j}]" for j in range(3)]


def test_gemini_non_image_inline_and_file_data_become_documents_and_audio() -> None:
    msg = _gemini(
        [
            {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
            {
                "fileData": {
                    "mimeType": "application/pdf",
                    "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/f1",
                }
            },
            {"inlineData": {"mimeType": "text/plain", "data": "aGk="}},
            {"inlineData": {"mimeType": "audio/mp3", "data": "SUQz"}},
            {"text": "What is in these?"},
        ]
    )
    assert dumped(msg.content) == dumped(
        [
            DocumentPart(data=PDF, media_type="application/pdf"),
            DocumentPart(
                url="https://generativelanguage.googleapis.com/v1beta/files/f1", media_type="application/pdf"
            ),
            DocumentPart(data="aGk=", media_type="text/plain"),
            AudioPart(data="SUQz", media_type="audio/mp3"),
            TextPart(text="What is in these?"),
        ]
    )
    assert [p.src for p in msg.content[:4]] == [f"contents[0].parts[{j}]" for j in range(4)]
