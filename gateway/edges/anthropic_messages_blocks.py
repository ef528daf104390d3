"""Anthropic Messages content blocks and nested objects -> part dicts, every key checked.

The rule (issue 14, ``docs/fidelity.md``): a key of a block or nested object that this edge
does not read never vanishes. The keys the SDK's types define (``anthropic.types`` and
``anthropic.types.beta``, SDK 2.17) are read or carried: ``image.transformations`` and
``tool_use`` / ``tool_result`` ``toolset_name`` are schema fields
(:attr:`gateway.schema.ImagePart.transformations`, ``ToolCallPart.toolset_name``,
``ToolResultMessage.toolset_name``) that only the Anthropic adapter sends, their client paths
added to the edge's ``serving`` list (dropped toward another wire API, named in
``x-turnstile-dropped``). Any other key is refused by name (:func:`only_keys`: HTTP 400
``<path>.<key>: unknown <what> field``), as the Anthropic API refuses it ("Extra inputs are not
permitted").

The checks cost one ``len`` for a block of the common shape: callers test ``len(block) == N``
(the keys a plain block has) before calling :func:`only_keys`.
"""

from __future__ import annotations

from gateway.edges._common import JSONObj, as_obj, check, join, opt, req, unsupported, wrong_type
from gateway.errors import InvalidRequest

TEXT_KEYS = frozenset({"type", "text", "cache_control", "citations"})
IMAGE_KEYS = frozenset({"type", "source", "cache_control", "transformations"})
DOCUMENT_KEYS = frozenset({"type", "source", "title", "context", "citations", "cache_control"})
TOOL_USE_KEYS = frozenset({"type", "id", "name", "input", "caller", "cache_control", "toolset_name"})
TOOL_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"})
THINKING_KEYS = frozenset({"type", "thinking", "signature"})
REDACTED_KEYS = frozenset({"type", "data"})
METADATA_KEYS = frozenset({"user_id"})
OUTPUT_CONFIG_KEYS = frozenset({"effort", "format", "task_budget"})
FORMAT_KEYS = frozenset({"type", "schema"})
"""The keys of each block (and of ``metadata``, ``output_config`` and its ``format``) in the
SDK's types."""

_SOURCE_KEYS = {
    "base64": frozenset({"type", "media_type", "data"}),
    "url": frozenset({"type", "url"}),
    "file": frozenset({"type", "file_id"}),
}
_DOCUMENT_SOURCE_KEYS = {
    "base64": frozenset({"type", "media_type", "data"}),
    "text": frozenset({"type", "media_type", "data"}),
    "url": frozenset({"type", "url"}),
    "file": frozenset({"type", "file_id"}),
    "content": frozenset({"type", "content"}),
}
_CHOICE_KEYS = {
    "auto": frozenset({"type", "disable_parallel_tool_use"}),
    "any": frozenset({"type", "disable_parallel_tool_use"}),
    "tool": frozenset({"type", "name", "disable_parallel_tool_use"}),
    "none": frozenset({"type"}),
}
_THINKING_CONFIG_KEYS = {
    "enabled": frozenset({"type", "budget_tokens", "display", "block_binding"}),
    "adaptive": frozenset({"type", "display", "block_binding"}),
    "disabled": frozenset({"type"}),
    "between_tools": frozenset({"type"}),
}
THINKING_SERVING = ("display", "block_binding")
"""``thinking`` keys that reach only an Anthropic upstream (how thinking is shown, and which
blocks it binds to): dropped and named toward another wire API, which gets the schema's
thinking setting."""


def only_keys(obj: JSONObj, known: frozenset[str], path: str, what: str) -> None:
    """Raise :class:`InvalidRequest` naming ``<path>.<key>`` for the first (sorted) key of
    ``obj`` not in ``known``; ``what`` names the object (``text block``)."""
    unknown = sorted(k for k in obj if k not in known)
    if unknown:
        field = join(path, unknown[0])
        expected = ", ".join(sorted(known))
        message = f"{field}: unknown {what} field {unknown[0]!r} (expected {expected})"
        raise InvalidRequest(message, param=field)


def text_part(block: JSONObj, path: str, serving: list[str] | None = None) -> JSONObj | None:
    """A ``text`` block -> a text part dict; None when empty (dropped, handed case C07). Its
    ``citations`` are kept verbatim, their path added to ``serving`` (dropped and named toward
    another wire API). Raises :class:`InvalidRequest` for a key not in :data:`TEXT_KEYS`."""
    text = req(block, "text", str, path)
    if len(block) == 2:
        return {"type": "text", "text": text} if text else None
    only_keys(block, TEXT_KEYS, path, "text block")
    if not text:
        return None
    cache = block.get("cache_control")
    citations = block.get("citations")
    if cache is None and citations is None:
        return {"type": "text", "text": text}
    if cache is not None and type(cache) is not dict:
        raise wrong_type(join(path, "cache_control"), "an object", cache)
    part: JSONObj = {"type": "text", "text": text, "cache_control": cache}
    if citations is not None:
        part["citations"] = check(citations, list, join(path, "citations"))
        if serving is not None:
            serving.append(join(path, "citations"))
    return part


def image_part(block: JSONObj, path: str, serving: list[str], native: list[str] | None = None) -> JSONObj:
    """An ``image`` block (base64, URL or Files API ``file`` source) -> an image part dict;
    ``transformations`` carried (its path added to ``serving``); a ``file`` source's path added
    to ``native`` (a file uploaded to Anthropic: refused toward any other wire API). Raises
    :class:`InvalidRequest` for a key of the block or its source the SDK types do not define."""
    spath = join(path, "source")
    source = as_obj(req(block, "source", dict, path), spath)
    stype = req(source, "type", str, spath)
    if len(block) > 2:
        only_keys(block, IMAGE_KEYS, path, "image block")
    known = _SOURCE_KEYS.get(stype)
    if known is None:
        raise unsupported(join(spath, "type"), f"image source type {stype!r}")
    if not source.keys() <= known:
        only_keys(source, known, spath, f"{stype} image source")
    part: JSONObj = {"type": "image", "cache_control": opt(block, "cache_control", dict, path)}
    if stype == "base64":
        part["data"] = req(source, "data", str, spath)
        part["media_type"] = req(source, "media_type", str, spath)
    elif stype == "file":
        part["file_id"] = req(source, "file_id", str, spath)
        if native is None:
            raise unsupported(join(spath, "type"), "an image by file id here")
        native.append(f"{spath} (a file uploaded to Anthropic)")
    else:
        part["url"] = req(source, "url", str, spath)
    transformations = opt(block, "transformations", dict, path)
    if transformations:
        part["transformations"] = transformations
        serving.append(join(path, "transformations"))
    return part


def document_part(block: JSONObj, path: str) -> JSONObj:
    """A ``document`` block (base64 / URL / text / file source; ``title``, ``context``,
    ``citations``, ``cache_control``) -> a document part dict (``src`` = ``path``).
    Source: https://docs.anthropic.com/en/docs/build-with-claude/pdf-support. Raises
    :class:`InvalidRequest` for a key not in :data:`DOCUMENT_KEYS`."""
    spath = join(path, "source")
    source = as_obj(req(block, "source", dict, path), spath)
    stype = req(source, "type", str, spath)
    if len(block) > 2:
        only_keys(block, DOCUMENT_KEYS, path, "document block")
    known = _DOCUMENT_SOURCE_KEYS.get(stype)
    if known is not None and not source.keys() <= known:
        only_keys(source, known, spath, f"{stype} document source")
    out: JSONObj = {
        "type": "document",
        "filename": opt(block, "title", str, path),
        "context": opt(block, "context", str, path),
        "citations": opt(block, "citations", dict, path),
        "cache_control": opt(block, "cache_control", dict, path),
        "src": path,
    }
    if stype == "base64":
        out["data"] = req(source, "data", str, spath)
        out["media_type"] = req(source, "media_type", str, spath)
    elif stype == "url":
        out["url"] = req(source, "url", str, spath)
        out["media_type"] = "application/pdf"
    elif stype == "text":
        out["text"] = req(source, "data", str, spath)
        out["media_type"] = opt(source, "media_type", str, spath) or "text/plain"
    elif stype == "file":
        out["file_id"] = req(source, "file_id", str, spath)
        out["file_api"] = "anthropic"
    elif stype == "content":
        _content_source(source, spath, out)
    else:
        raise unsupported(join(spath, "type"), f"document source type {stype!r}")
    return out


def _content_source(source: JSONObj, spath: str, out: JSONObj) -> None:
    """A ``content`` document source (a string, or text and image blocks: a document in
    chunks Claude cites block by block) into ``out``: ``content_source`` verbatim (an Anthropic
    upstream gets it as sent) and ``text``, its text blocks joined by blank lines (what another
    wire API gets; one with image blocks is refused toward it: :mod:`gateway.layers.target_media`)."""
    cpath = join(spath, "content")
    content = source.get("content")
    if type(content) is str:
        out["text"], out["content_source"] = content, content
        out["media_type"] = "text/plain"
        return
    texts = []
    for k, raw in enumerate(req(source, "content", list, spath)):
        bpath = f"{cpath}[{k}]"
        block = as_obj(raw, bpath)
        kind = req(block, "type", str, bpath)
        if kind == "text":
            texts.append(req(block, "text", str, bpath))
        elif kind != "image":
            raise unsupported(join(bpath, "type"), f"content document block type {kind!r}")
    out["text"], out["content_source"] = "\n\n".join(texts), content
    out["media_type"] = "text/plain"


def toolset_name(block: JSONObj, path: str, serving: list[str]) -> str | None:
    """A ``tool_use`` / ``tool_result`` block's ``toolset_name`` (its path added to
    ``serving`` when set), or None."""
    name = opt(block, "toolset_name", str, path)
    if name is not None:
        serving.append(join(path, "toolset_name"))
    return name


def check_tool_choice(raw: JSONObj, ctype: str) -> None:
    """Raise :class:`InvalidRequest` for a ``tool_choice`` key its ``type`` does not have."""
    known = _CHOICE_KEYS.get(ctype)
    if known is not None and len(raw) > 1:
        only_keys(raw, known, "tool_choice", f"tool_choice {ctype!r}")


def check_thinking(raw: JSONObj, ttype: str, serving: list[str]) -> None:
    """Raise :class:`InvalidRequest` for a ``thinking`` key its ``type`` does not have; add
    the paths of the set :data:`THINKING_SERVING` keys to ``serving``."""
    known = _THINKING_CONFIG_KEYS.get(ttype)
    if known is None or len(raw) == 1:
        return
    only_keys(raw, known, "thinking", f"thinking {ttype!r}")
    serving.extend(f"thinking.{k}" for k in THINKING_SERVING if raw.get(k) is not None)
