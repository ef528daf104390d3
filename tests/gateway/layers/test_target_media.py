"""The target layer refuses a document or audio part a deployment cannot take by name (its
location and the deployment), and lets through what each wire API carries."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.layers.target_media import check_capabilities
from gateway.schema import AudioPart, DocumentPart, Request, TextPart, UserMessage

PDF = DocumentPart(data="JVBERi0=", media_type="application/pdf", src="messages[0].content[1]")
URL_DOC = DocumentPart(url="https://example.com/a.pdf", src="messages[0].content[1]")
WAV = AudioPart(data="UklGRg==", media_type="audio/wav", src="messages[0].content[1]")


def req(part: Any) -> Request:
    return Request(
        model="m", messages=[UserMessage(content=[TextPart(text="read"), part], src="messages[0]")]
    )


def dep(api: str, model: str = "some-model", **kw: Any) -> Deployment:
    return Deployment(name="target", api=api, model=model, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "api", ["anthropic_messages", "openai_chat", "openai_responses", "gemini", "litellm", "demo"]
)
def test_an_inline_pdf_goes_to_every_wire_api(api: str) -> None:
    check_capabilities(req(PDF), dep(api))


@pytest.mark.parametrize(
    ("part", "api", "says"),
    [
        (PDF, "openai_chat", "cannot take documents"),
        (WAV, "anthropic_messages", "cannot take audio"),
        (WAV, "openai_responses", "cannot take audio"),
        (URL_DOC, "openai_chat", "only inline"),
        (URL_DOC, "litellm", "only inline"),
        (
            AudioPart(url="gs://b/a.wav", media_type="audio/wav", src="messages[0].content[1]"),
            "openai_chat",
            "only inline",
        ),
        (
            AudioPart(data="AA==", media_type="audio/flac", src="messages[0].content[1]"),
            "openai_chat",
            "wav or mp3",
        ),
        (
            DocumentPart(file_id="file-1", file_api="openai", src="messages[0].content[1]"),
            "anthropic_messages",
            "files",
        ),
        (
            DocumentPart(file_id="file_1", file_api="anthropic", src="messages[0].content[1]"),
            "openai_chat",
            "files",
        ),
        (DocumentPart(file_id="file-1", file_api="openai", src="messages[0].content[1]"), "gemini", "files"),
    ],
)
def test_a_part_the_target_cannot_take_is_refused_naming_its_location_and_the_deployment(
    part: Any, api: str, says: str
) -> None:
    kw = {"supports_documents": False} if says == "cannot take documents" else {}
    with pytest.raises(CapabilityError) as exc:
        check_capabilities(req(part), dep(api, **kw))
    assert exc.value.param == "messages[0].content[1]"
    assert (
        "messages[0].content[1]" in str(exc.value) and "'target'" in str(exc.value) and says in str(exc.value)
    )


def test_document_context_and_citations_go_only_to_anthropic() -> None:
    part = DocumentPart(data="JVBERi0=", citations={"enabled": True}, src="messages[0].content[1]")
    check_capabilities(req(part), dep("anthropic_messages"))
    with pytest.raises(CapabilityError) as exc:
        check_capabilities(req(part), dep("gemini"))
    assert exc.value.param == "messages[0].content[1].citations"


def test_a_file_id_goes_to_a_deployment_of_the_provider_that_holds_it() -> None:
    check_capabilities(
        req(DocumentPart(file_id="file-1", file_api="openai", src="x")), dep("openai_responses")
    )
    check_capabilities(
        req(DocumentPart(file_id="file_1", file_api="anthropic", src="x")), dep("anthropic_messages")
    )


def test_capabilities_default_from_the_model_table_where_it_says_false() -> None:
    # litellm's table marks this Bedrock model without audio input (supports_audio_input: false)
    with pytest.raises(CapabilityError):
        check_capabilities(req(WAV), dep("litellm", model="bedrock/ap-northeast-1/deepseek.v3.2"))
    check_capabilities(
        req(WAV), dep("litellm", model="bedrock/ap-northeast-1/deepseek.v3.2", supports_audio=True)
    )
