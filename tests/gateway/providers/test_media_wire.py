"""Document and audio parts in each upstream's request body: Anthropic ``document`` blocks,
OpenAI Chat ``file`` / ``input_audio`` parts (litellm takes the same body), Responses
``input_file``, Gemini ``inlineData`` / ``fileData``; an adapter never drops one it cannot send."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.providers import anthropic_messages, gemini, openai_chat, openai_responses
from gateway.schema import AudioPart, DocumentPart, Request, TextPart, UserMessage

PDF = "JVBERi0xLjQK"
INLINE = DocumentPart(data=PDF, media_type="application/pdf", filename="r.pdf", src="messages[0].content[1]")
BY_URL = DocumentPart(
    url="https://example.com/a.pdf", media_type="application/pdf", src="messages[0].content[1]"
)
PLAIN = DocumentPart(text="hi", media_type="text/plain", src="messages[0].content[1]")
WAV = AudioPart(data="UklGRg==", media_type="audio/wav", src="messages[0].content[1]")
MODULES = {
    "anthropic_messages": anthropic_messages,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "gemini": gemini,
}


def body(api: str, *parts: Any) -> dict[str, Any]:
    req = Request(
        model="m", messages=[UserMessage(content=[TextPart(text="read"), *parts])], max_output_tokens=50
    )
    dep = Deployment(name="t", api=api, model="some-model")  # type: ignore[arg-type]
    up, _ = MODULES[api].build_request(req, dep, "k")  # type: ignore[attr-defined]
    return dict(orjson.loads(up.body))


def last_user_parts(api: str, b: dict[str, Any]) -> list[Any]:
    if api == "gemini":
        return list(b["contents"][-1]["parts"][1:])
    if api == "openai_responses":
        return list(b["input"][-1]["content"][1:])
    return list(b["messages"][-1]["content"][1:])


def test_anthropic_document_blocks_keep_every_source_and_option() -> None:
    full = DocumentPart(
        data=PDF,
        media_type="application/pdf",
        filename="r.pdf",
        context="ctx",
        citations={"enabled": True},
        cache_control={"type": "ephemeral"},
    )
    ref = DocumentPart(file_id="file_1", file_api="anthropic")
    assert last_user_parts("anthropic_messages", body("anthropic_messages", full, BY_URL, PLAIN, ref)) == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "r.pdf",
            "context": "ctx",
            "citations": {"enabled": True},
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hi"}},
        {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
    ]


def test_openai_chat_gets_file_parts_with_a_data_uri_and_input_audio() -> None:
    ref = DocumentPart(file_id="file-1", file_api="openai")
    assert last_user_parts("openai_chat", body("openai_chat", INLINE, PLAIN, ref, WAV)) == [
        {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "r.pdf"}},
        {
            "type": "text",
            "text": "<document>\nhi\n</document>",
        },  # Chat's files are PDFs: a text document is text
        {"type": "file", "file": {"file_id": "file-1"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]


def test_responses_gets_input_file_by_data_url_and_file_url() -> None:
    assert last_user_parts("openai_responses", body("openai_responses", INLINE, BY_URL)) == [
        {"type": "input_file", "file_data": f"data:application/pdf;base64,{PDF}", "filename": "r.pdf"},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
    ]


def test_gemini_gets_inline_data_and_file_data() -> None:
    assert last_user_parts("gemini", body("gemini", INLINE, BY_URL, PLAIN, WAV)) == [
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/a.pdf"}},
        {"inlineData": {"mimeType": "text/plain", "data": "aGk="}},
        {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}},
    ]


@pytest.mark.parametrize(
    ("api", "part"),
    [("anthropic_messages", WAV), ("openai_responses", WAV), ("openai_chat", BY_URL)],
)
def test_an_adapter_refuses_by_name_a_part_its_api_cannot_carry(api: str, part: Any) -> None:
    with pytest.raises(CapabilityError) as exc:
        body(api, part)
    assert exc.value.param == "messages[0].content[1]"


def test_litellm_gets_documents_and_audio_in_the_openai_chat_shape() -> None:
    from gateway.providers.litellm_adapter import LitellmProvider
    from gateway.providers.naming import NameMap

    dep = Deployment(name="ll", api="litellm", model="bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0")
    req = Request(model="ll", messages=[UserMessage(content=[TextPart(text="read"), INLINE, WAV])])
    kwargs = LitellmProvider().call_kwargs(req, dep, "k", NameMap())
    assert kwargs["messages"][0]["content"][1:] == [
        {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "r.pdf"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]
