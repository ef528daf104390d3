"""What a deployment can take (part of the target layer): tools, images, the client's same-wire
fields (:func:`check_capabilities`, also asked by the route layer before it tries a deployment),
and which document and audio parts.

A part a target cannot carry is refused by name (:class:`CapabilityError`, a 400 naming
``messages[i].content[j]`` and the deployment), never dropped. What each wire API accepts:

============================  =====================================  ==========================
wire API                      documents                              audio
============================  =====================================  ==========================
``anthropic_messages``        base64, URL, plain text, own file ids  none
``openai_chat`` / litellm     base64 (``file_data``), own file ids   base64 wav / mp3
``openai_responses``          base64, URL (``file_url``), own ids    none
``gemini``                    base64 (``inlineData``), URL           base64, URL
``demo``                      all but file ids                       all
============================  =====================================  ==========================

``context`` and ``citations`` are Anthropic document options and go only to an Anthropic
upstream. A provider's file id (``file_id``) names a file uploaded to that provider, so it
goes only to a deployment of the same provider whose API takes file ids.
Sources: https://docs.anthropic.com/en/docs/build-with-claude/pdf-support,
https://platform.openai.com/docs/guides/pdf-files, https://platform.openai.com/docs/guides/audio,
https://ai.google.dev/gemini-api/docs/document-processing.
"""

from __future__ import annotations

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.providers import passthrough
from gateway.providers.catalog import model_info
from gateway.providers.media_wire import OPENAI_AUDIO_FORMATS
from gateway.schema import AudioPart, DocumentPart, ImagePart, Request, ToolResultMessage, UserMessage

_DOC_URL = frozenset({"anthropic_messages", "openai_responses", "gemini", "demo"})
_FILE_IDS = frozenset({"anthropic_messages", "openai_chat", "openai_responses"})
_AUDIO = frozenset({"openai_chat", "litellm", "gemini", "demo"})
_AUDIO_URL = frozenset({"gemini", "demo"})


def _supports(dep: Deployment, flag: bool | None, key: str) -> bool:
    if flag is not None:
        return flag
    info = model_info(dep.model, dep.provider)
    value = info.get(key) if info else None
    return value if type(value) is bool else True


def _refuse(where: str, what: str, dep: Deployment, why: str) -> CapabilityError:
    return CapabilityError(
        f"{where} is {what}, and model {dep.name!r} ({dep.api} wire API, model {dep.model}) {why}",
        param=where,
    )


def _check_document(part: DocumentPart, where: str, dep: Deployment) -> None:
    api = dep.api
    if not _supports(dep, dep.supports_documents, "supports_pdf_input"):
        raise _refuse(where, "a document", dep, "cannot take documents")
    if part.file_id is not None:
        if api not in _FILE_IDS or part.file_api != dep.provider:
            raise _refuse(
                where,
                f"a file uploaded to {part.file_api} ({part.file_id!r})",
                dep,
                "cannot read that provider's files; send the file's content (base64) instead",
            )
        return
    if part.url is not None and api not in _DOC_URL:
        raise _refuse(where, "a document by URL", dep, "takes documents only inline; send it as base64")
    if api != "anthropic_messages" and api != "demo":
        if type(part.content_source) is list and any(
            type(b) is dict and b.get("type") == "image" for b in part.content_source
        ):
            raise _refuse(
                f"{where}.source.content", "a content document with images", dep, "has no such document"
            )
        if part.context is not None:
            raise _refuse(f"{where}.context", "a document context", dep, "has no document context")
        if part.citations is not None:
            raise _refuse(f"{where}.citations", "a citations request", dep, "cannot cite documents")


def _check_audio(part: AudioPart, where: str, dep: Deployment) -> None:
    api = dep.api
    if api not in _AUDIO or not _supports(dep, dep.supports_audio, "supports_audio_input"):
        raise _refuse(where, "audio", dep, "cannot take audio")
    if part.url is not None and api not in _AUDIO_URL:
        raise _refuse(where, "audio by URL", dep, "takes audio only inline; send it as base64")
    if (api == "openai_chat" or api == "litellm") and part.media_type not in OPENAI_AUDIO_FORMATS:
        raise _refuse(where, f"audio of type {part.media_type!r}", dep, "takes only wav or mp3 audio")


def check_media(request: Request, dep: Deployment) -> None:
    """Raise :class:`CapabilityError` for the first document or audio part of ``request``'s
    user messages that ``dep`` cannot take (the rules in this module's table)."""
    for msg in request.messages:  # the plain case: one pass of type checks, nothing else
        if type(msg) is UserMessage:
            for part in msg.content:
                if type(part) is DocumentPart or type(part) is AudioPart:
                    _check_all(request, dep)
                    return


def _check_all(request: Request, dep: Deployment) -> None:
    for i, msg in enumerate(request.messages):
        if type(msg) is not UserMessage:
            continue
        for j, part in enumerate(msg.content):
            if type(part) is DocumentPart:
                _check_document(part, part.src or f"{msg.src or f'messages[{i}]'}.content[{j}]", dep)
            elif type(part) is AudioPart:
                _check_audio(part, part.src or f"{msg.src or f'messages[{i}]'}.content[{j}]", dep)


def check_capabilities(request: Request, dep: Deployment) -> None:
    """Raise :class:`CapabilityError` when ``dep`` cannot take the request's tools, images,
    documents or audio (:func:`gateway.layers.target_media.check_media`), or
    the request carries answer-changing fields of a wire API (``request.native.paths``) that
    ``dep`` does not speak (its serving-only fields are dropped instead: :meth:`TargetLayer.drop_serving`;
    those the other OpenAI API has are translated: :func:`gateway.providers.passthrough.sibling_fields`)."""
    native = request.native
    if native is not None and native.paths and native.api != dep.api:
        paths = native.paths
        if (native.api, dep.api) in passthrough.SIBLINGS:  # the other OpenAI API: some translate
            kept = passthrough.translated_names(native.fields, native.api, dep.api)
            paths = [p for p in paths if p not in kept]
        if paths:
            them = "them" if len(paths) > 1 else "it"
            raise CapabilityError(
                f"{', '.join(paths)}: carried only to an upstream of the {native.api} wire API, and model "
                f"{dep.name!r} is served by the {dep.api} wire API; remove {them} or use a model served by "
                f"{native.api}",
                param=paths[0],
            )
    if request.tools and not dep.supports_tools:
        raise CapabilityError(
            f"the request offers {len(request.tools)} tool(s), and model {dep.name!r} cannot take tools",
            param="tools",
        )
    check_media(request, dep)
    if dep.supports_images:
        return
    for i, msg in enumerate(request.messages):
        if (type(msg) is UserMessage or type(msg) is ToolResultMessage) and any(
            type(p) is ImagePart for p in msg.content
        ):
            where = msg.src or f"messages[{i}]"
            what = (
                f"the tool result for {msg.tool_call_id}"
                if type(msg) is ToolResultMessage
                else "a user message"
            )
            raise CapabilityError(
                f"{what} ({where}) contains an image, and model {dep.name!r} cannot take images",
                param=where,
            )
