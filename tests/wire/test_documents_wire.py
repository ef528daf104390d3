"""Documents and audio through the gateway (issue 14 item 8), driven by the official SDKs: an
Anthropic ``document`` block, an OpenAI Chat ``file`` part and ``input_audio``, a Responses
``input_file`` and a google-genai inline PDF each reach every upstream that takes them in
that API's own shape (the stand-in refuses any other: :mod:`standins.media_rule`), and a part
a target cannot take is refused by name before anything goes upstream."""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from standins.tool_answers import text_answer
from standins.upstream import UpstreamStandin, replay

PDF_BYTES = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
PDF = base64.b64encode(PDF_BYTES).decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
API_OF = {"an": "anthropic_messages", "oa": "openai_chat", "rs": "openai_responses", "ge": "gemini"}


def _reached(upstream: UpstreamStandin, target: str) -> Any:
    """The document as it reached the upstream of ``target`` (its wire shape)."""
    (got,) = upstream.requests()
    body = got.body
    if target == "ge":
        return [p for p in body["contents"][-1]["parts"] if "text" not in p]
    if target == "rs":
        return [p for p in body["input"][-1]["content"] if p["type"] != "input_text"]
    return [p for p in body["messages"][-1]["content"] if p["type"] != "text"]


EXPECTED_PDF = {
    "an": {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
        "title": "report.pdf",
    },
    "oa": {
        "type": "file",
        "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "report.pdf"},
    },
    "rs": {"type": "input_file", "file_data": f"data:application/pdf;base64,{PDF}", "filename": "report.pdf"},
    "ge": {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
}


@pytest.mark.parametrize("target", sorted(API_OF))
def test_anthropic_sdk_document_block_reaches_every_upstream_in_its_shape(
    target: str, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer(API_OF[target], "It is a report.", stream=False)))
    message = ant.messages.create(
        model=target,
        max_tokens=100,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                        "title": "report.pdf",
                    },
                    {"type": "text", "text": "What is this?"},
                ],
            }
        ],
    )
    assert message.content[0].type == "text"
    assert _reached(upstream, target) == [EXPECTED_PDF[target]]


def test_anthropic_sdk_citations_and_a_text_document_reach_claude_as_sent(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "The grass is green."},
        "title": "facts",
        "context": "a test",
        "citations": {"enabled": True},
    }
    ant.messages.create(
        model="an",
        max_tokens=100,
        messages=[{"role": "user", "content": [doc, {"type": "text", "text": "Colour?"}]}],
    )
    assert _reached(upstream, "an") == [doc]


@pytest.mark.parametrize("target", ["an", "oa", "ge"])
def test_openai_sdk_file_part_reaches_every_upstream_in_its_shape(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer(API_OF[target], "It is a report.", stream=False)))
    oai.chat.completions.create(
        model=target,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "file",
                        "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "report.pdf"},
                    },
                    {"type": "text", "text": "What is this?"},
                ],
            }
        ],
    )
    assert _reached(upstream, target) == [EXPECTED_PDF[target]]


@pytest.mark.parametrize("target", ["oa", "ge"])
def test_openai_sdk_input_audio_reaches_upstreams_that_hear(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer(API_OF[target], "A beep.", stream=False)))
    oai.chat.completions.create(
        model=target,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
                    {"type": "text", "text": "What is this sound?"},
                ],
            }
        ],
    )
    expected = {
        "oa": {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
        "ge": {"inlineData": {"mimeType": "audio/wav", "data": WAV}},
    }
    assert _reached(upstream, target) == [expected[target]]


@pytest.mark.parametrize("target", ["rs", "an", "ge"])
def test_openai_sdk_responses_input_file_reaches_every_upstream_in_its_shape(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer(API_OF[target], "It is a report.", stream=False)))
    oai.responses.create(
        model=target,
        input=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_file",
                        "file_data": f"data:application/pdf;base64,{PDF}",
                        "filename": "report.pdf",
                    },
                    {"type": "input_text", "text": "What is this?"},
                ],
            }
        ],
    )
    expected = dict(EXPECTED_PDF)
    expected["ge"] = EXPECTED_PDF["ge"]
    assert _reached(upstream, target) == [expected[target]]


@pytest.mark.parametrize("target", ["ge", "an", "oa"])
def test_google_genai_inline_pdf_reaches_every_upstream_in_its_shape(
    target: str, upstream: UpstreamStandin, gem: genai.Client
) -> None:
    upstream.script(replay(text_answer(API_OF[target], "It is a report.", stream=False)))
    gem.models.generate_content(
        model=target,
        contents=[
            genai.types.Part.from_bytes(data=PDF_BYTES, mime_type="application/pdf"),
            "What is this?",
        ],
    )
    expected = {
        "ge": EXPECTED_PDF["ge"],
        "an": {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
        },
        "oa": {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "document.pdf"},
        },
    }
    assert _reached(upstream, target) == [expected[target]]


@pytest.mark.parametrize(
    ("target", "part"),
    [
        ("an", {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}}),
        ("rs", {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}}),
        ("an", {"type": "file", "file": {"file_id": "file-abc123"}}),
    ],
)
def test_a_part_the_target_cannot_take_is_refused_by_name_and_nothing_goes_upstream(
    target: str, part: dict[str, Any], upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(
            model=target, messages=[{"role": "user", "content": [{"type": "text", "text": "Listen."}, part]}]
        )
    assert exc.value.status_code == 400
    message = str(exc.value)
    assert "messages[0].content[1]" in message and f"'{target}'" in message
    assert upstream.requests() == []


TEXT_DOC: Any = {
    "type": "document",
    "source": {"type": "text", "media_type": "text/plain", "data": "Tide at noon."},
}
CONTENT_DOC: Any = {
    "type": "document",
    "source": {"type": "content", "content": [{"type": "text", "text": "Tide at noon."}]},
    "title": "tides",
}


@pytest.mark.parametrize("doc", [TEXT_DOC, CONTENT_DOC], ids=["text-source", "content-source"])
@pytest.mark.parametrize("target", ["an", "oa", "rs", "ge"])
def test_a_plain_text_document_reaches_every_upstream_as_a_document_or_its_text(
    doc: Any, target: str, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer(API_OF[target], "ok", stream=False)))
    ant.messages.create(
        model=target,
        max_tokens=100,
        messages=[{"role": "user", "content": [doc, {"type": "text", "text": "When?"}]}],
    )
    (got,) = upstream.requests()
    body = got.body
    if target == "an":
        assert body["messages"][-1]["content"][0] == doc  # as sent, content blocks and all
    elif target == "ge":
        (part,) = [p for p in body["contents"][-1]["parts"] if "inlineData" in p]
        assert part["inlineData"]["mimeType"] == "text/plain"
        assert base64.b64decode(part["inlineData"]["data"]) == b"Tide at noon."
    else:  # OpenAI's file inputs are PDFs: the document is a text part
        parts = body["input"][-1]["content"] if target == "rs" else body["messages"][-1]["content"]
        assert "Tide at noon." in parts[0]["text"] and parts[0]["text"].startswith("<document")


def test_a_content_document_with_images_is_refused_by_name_outside_claude(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    doc = {
        "type": "document",
        "source": {"type": "content", "content": [{"type": "text", "text": "x"}, image]},
    }
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="oa", max_tokens=100, messages=[{"role": "user", "content": [doc]}])
    assert "messages[0].content[0].source.content" in exc.value.message
    assert upstream.requests() == []
