"""Document and audio parts in each upstream wire API's shape (one function per shape).

The target layer has already refused what a deployment cannot take
(:mod:`gateway.layers.target_media`); :func:`refuse` is the adapters' guard for a part that
reaches them anyway (an adapter called directly), so nothing is ever dropped.
Sources: https://docs.anthropic.com/en/docs/build-with-claude/pdf-support,
https://platform.openai.com/docs/guides/pdf-files, https://platform.openai.com/docs/guides/audio,
https://ai.google.dev/gemini-api/docs/document-processing.
"""

from __future__ import annotations

import base64
from typing import Any

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.schema import AudioPart, DocumentPart

PDF = "application/pdf"
OPENAI_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
"""Media type -> OpenAI ``input_audio.format``."""


def refuse(part: DocumentPart | AudioPart, deployment: Deployment, why: str) -> CapabilityError:
    """The :class:`CapabilityError` for ``part`` (named by its ``src``) toward ``deployment``."""
    where = part.src or "a message"
    what = "a document" if type(part) is DocumentPart else "audio"
    return CapabilityError(
        f"{where} is {what}, and model {deployment.name!r} ({deployment.api} wire API, "
        f"model {deployment.model}) {why}",
        param=where,
    )


def _base64(part: DocumentPart) -> tuple[str, str]:
    """``(media_type, base64 data)`` of an inline document (a text source encoded as UTF-8)."""
    if part.text is not None:
        return part.media_type or "text/plain", base64.b64encode(part.text.encode()).decode()
    return part.media_type or PDF, part.data or ""


def anthropic_document(part: DocumentPart) -> dict[str, Any]:
    """An Anthropic ``document`` block (base64 / url / text / file source, ``title``,
    ``context``, ``citations``, ``cache_control``)."""
    source: dict[str, Any]
    if part.content_source is not None:
        source = {"type": "content", "content": part.content_source}
    elif part.file_id is not None:
        source = {"type": "file", "file_id": part.file_id}
    elif part.url is not None:
        source = {"type": "url", "url": part.url}
    elif part.text is not None:
        source = {"type": "text", "media_type": part.media_type or "text/plain", "data": part.text}
    else:
        source = {"type": "base64", "media_type": part.media_type or PDF, "data": part.data or ""}
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.filename is not None:
        block["title"] = part.filename
    if part.context is not None:
        block["context"] = part.context
    if part.citations is not None:
        block["citations"] = part.citations
    if part.cache_control is not None:
        block["cache_control"] = part.cache_control
    return block


def document_text(part: DocumentPart) -> str:
    """A plain-text document (Anthropic's ``text`` or ``content`` source) as the text an API
    without text documents reads (OpenAI Chat and Responses take PDF files only): its text
    between ``<document>`` tags, with its title when it has one."""
    head = f'<document title="{part.filename}">' if part.filename else "<document>"
    return f"{head}\n{part.text}\n</document>"


def openai_chat_file(part: DocumentPart, deployment: Deployment) -> dict[str, Any]:
    """An OpenAI Chat ``file`` part (``file_data`` data URI, or ``file_id``; ``filename``).
    Raises :class:`CapabilityError` for a URL document (Chat has no ``file_url``)."""
    file: dict[str, Any]
    if part.file_id is not None:
        file = {"file_id": part.file_id}
    elif part.url is not None:
        raise refuse(part, deployment, "takes documents only inline; send it as base64")
    else:
        media_type, data = _base64(part)
        file = {"file_data": f"data:{media_type};base64,{data}"}
    if part.filename is not None:
        file["filename"] = part.filename
    elif "file_data" in file:
        file["filename"] = (
            "document.pdf" if file["file_data"].startswith("data:application/pdf") else "document"
        )
    return {"type": "file", "file": file}


def openai_chat_audio(part: AudioPart, deployment: Deployment) -> dict[str, Any]:
    """An OpenAI Chat ``input_audio`` part (base64 ``data``, ``format`` wav or mp3).
    Raises :class:`CapabilityError` for audio by URL or of another type."""
    fmt = OPENAI_AUDIO_FORMATS.get(part.media_type or "")
    if part.data is None or fmt is None:
        raise refuse(part, deployment, "takes only inline wav or mp3 audio")
    return {"type": "input_audio", "input_audio": {"data": part.data, "format": fmt}}


def responses_input_file(part: DocumentPart) -> dict[str, Any]:
    """An OpenAI Responses ``input_file`` part (``file_data`` data URI, ``file_url`` or
    ``file_id``; ``filename``)."""
    out: dict[str, Any] = {"type": "input_file"}
    if part.file_id is not None:
        out["file_id"] = part.file_id
    elif part.url is not None:
        out["file_url"] = part.url
    else:
        media_type, data = _base64(part)
        out["file_data"] = f"data:{media_type};base64,{data}"
        out["filename"] = part.filename or ("document.pdf" if media_type == PDF else "document")
        return out
    if part.filename is not None:
        out["filename"] = part.filename
    return out


def gemini_media(part: DocumentPart | AudioPart, deployment: Deployment) -> dict[str, Any]:
    """A Gemini ``inlineData`` (base64) or ``fileData`` (URI) part. A document's filename is
    not sent: the Gemini API's ``Blob`` / ``FileData`` have no name slot (``displayName`` is
    Vertex-only, and the name is a label the content does not depend on). Raises
    :class:`CapabilityError` for a provider's file id."""
    if type(part) is DocumentPart:
        if part.file_id is not None:
            raise refuse(part, deployment, "cannot read another provider's files")
        if part.url is not None:
            media: dict[str, Any] = {"mimeType": part.media_type or PDF, "fileUri": part.url}
            key = "fileData"
        else:
            mime, data = _base64(part)
            media, key = {"mimeType": mime, "data": data}, "inlineData"
        return {key: media}
    if part.url is not None:
        return {"fileData": {"mimeType": part.media_type or "audio/wav", "fileUri": part.url}}
    return {"inlineData": {"mimeType": part.media_type or "audio/wav", "data": part.data or ""}}
