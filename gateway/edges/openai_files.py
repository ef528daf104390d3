"""OpenAI file and audio content parts -> document / audio part dicts (both OpenAI dialects).

* Chat ``{"type": "file", "file": {"file_data" | "file_id", "filename"}}`` and Responses
  ``{"type": "input_file", "file_data" | "file_url" | "file_id", "filename"}``: ``file_data``
  is a base64 data URI (``data:application/pdf;base64,...``) or bare base64 (a PDF, as
  OpenAI reads it); ``file_id`` names a file uploaded to OpenAI (``file_api`` ``openai``).
  Sources: https://platform.openai.com/docs/guides/pdf-files,
  https://platform.openai.com/docs/api-reference/responses/create.
* Chat ``{"type": "input_audio", "input_audio": {"data", "format": "wav" | "mp3"}}`` ->
  an audio part with media type ``audio/wav`` / ``audio/mpeg``
  (https://platform.openai.com/docs/guides/audio).
"""

from __future__ import annotations

from gateway.edges._common import JSONObj, as_obj, join, missing, opt, parse_data_uri, req
from gateway.errors import InvalidRequest

AUDIO_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg"}
"""OpenAI ``input_audio.format`` -> media type."""


def file_fields(obj: JSONObj, path: str, url_key: str | None) -> JSONObj:
    """The file object ``obj`` at ``path`` (Chat's ``file``, or a Responses ``input_file``
    part, which also has ``file_url`` when ``url_key`` names it) -> a document part dict.
    Raises :class:`InvalidRequest` naming the field when none or several sources are given."""
    data = opt(obj, "file_data", str, path)
    file_id = opt(obj, "file_id", str, path)
    url = opt(obj, url_key, str, path) if url_key else None
    given = [k for k, v in (("file_data", data), ("file_id", file_id), (url_key, url)) if v is not None]
    if len(given) != 1:
        keys = "file_data, file_url or file_id" if url_key else "file_data or file_id"
        raise InvalidRequest(f"{path}: give exactly one of {keys} (got {len(given)})", param=path)
    out: JSONObj = {"type": "document", "filename": opt(obj, "filename", str, path)}
    if data is not None:
        parsed = parse_data_uri(data) if data.startswith("data:") else (None, data)
        if parsed is None:
            dpath = join(path, "file_data")
            raise InvalidRequest(f"{dpath}: data URI must be base64 encoded", param=dpath)
        out["media_type"] = parsed[0] or "application/pdf"
        out["data"] = parsed[1]
    elif file_id is not None:
        out["file_id"] = file_id
        out["file_api"] = "openai"
    else:
        out["url"] = url
    return out


def chat_file(part: JSONObj, path: str) -> JSONObj:
    """A Chat ``file`` content part -> a document part dict (``src`` = ``path``)."""
    fpath = join(path, "file")
    value = part.get("file")
    if value is None:
        raise missing(fpath)
    out = file_fields(as_obj(value, fpath), fpath, None)
    out["src"] = path
    return out


def chat_audio(part: JSONObj, path: str) -> JSONObj:
    """A Chat ``input_audio`` content part -> an audio part dict (``src`` = ``path``)."""
    apath = join(path, "input_audio")
    value = part.get("input_audio")
    if value is None:
        raise missing(apath)
    audio = as_obj(value, apath)
    fmt = req(audio, "format", str, apath)
    media_type = AUDIO_TYPES.get(fmt)
    if media_type is None:
        fp = join(apath, "format")
        raise InvalidRequest(f"{fp}: expected 'wav' or 'mp3', got {fmt!r}", param=fp)
    return {"type": "audio", "data": req(audio, "data", str, apath), "media_type": media_type, "src": path}
