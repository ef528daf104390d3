"""Reasoning sent back on an OpenAI Chat assistant message, in the shapes other servers use
(the tolerated extensions of :mod:`gateway.edges.openai_chat_parse`): OpenRouter's
``reasoning_details``, LiteLLM's ``thinking_blocks``, Anthropic-style ``thinking`` blocks and
Mistral's chunked thinking text -> thinking part dicts of :mod:`gateway.schema`; signatures
unwrapped from Turnstile's envelope (:mod:`gateway.edges.signatures`)."""

from __future__ import annotations

from typing import Any

from gateway.edges._common import JSONObj, as_obj, join, opt, req, unsupported, wrong_type
from gateway.edges.signatures import unwrap_signature
from gateway.errors import InvalidRequest
from gateway.schema import Provenance

__all__ = ["ANTHROPIC", "reasoning_details", "signed", "thinking_blocks", "thinking_text", "unwrap_sig"]


ANTHROPIC = Provenance(api="anthropic_messages", provider="anthropic", model="")
"""Who signed a raw (unwrapped) signature of format ``anthropic-claude-v1`` or in LiteLLM's
``thinking_blocks`` (LiteLLM returns them only for Anthropic models)."""

FORMATS = {"anthropic-claude-v1": ANTHROPIC}


def signed(value: str | None, path: str, native: Provenance | None) -> tuple[str | None, Any]:
    """``(signature, provenance)`` of a signature sent back: unwrapped from Turnstile's envelope,
    or raw with ``native`` as its provenance."""
    sig, prov = unwrap_sig(value, path)
    return sig, (prov if prov is not None or sig is None else native)


def reasoning_details(value: Any, path: str) -> list[JSONObj]:
    """OpenRouter ``reasoning_details`` -> thinking part dicts: ``reasoning.text`` (``text``,
    ``signature``), ``reasoning.encrypted`` (``data``: redacted thinking), ``reasoning.summary``
    (``summary``: unsigned thinking); an entry with neither text nor data carries nothing.
    Other types are refused by name."""
    if type(value) is not list:
        raise wrong_type(path, "an array", value)
    out: list[JSONObj] = []
    for k, raw in enumerate(value):
        dpath = f"{path}[{k}]"
        entry = as_obj(raw, dpath)
        kind = req(entry, "type", str, dpath)
        fmt = opt(entry, "format", str, dpath)
        native = FORMATS.get(fmt or "")
        if kind == "reasoning.text":
            sig, prov = signed(opt(entry, "signature", str, dpath), join(dpath, "signature"), native)
            text = opt(entry, "text", str, dpath) or ""
            if text or sig:
                out.append({"type": "thinking", "text": text, "signature": sig, "provenance": prov})
        elif kind == "reasoning.encrypted":
            # without ``data`` the entry carries nothing (seen from Vercel's gateway: fantasy
            # recording TestVercelThinking/gemini-3-pro-preview/thinking.yaml)
            data, prov = signed(opt(entry, "data", str, dpath), join(dpath, "data"), native)
            if data:
                out.append({"type": "redacted_thinking", "data": data, "provenance": prov})
        elif kind == "reasoning.summary":
            text = req(entry, "summary", str, dpath)
            if text:
                out.append({"type": "thinking", "text": text})
        else:
            raise unsupported(join(dpath, "type"), f"reasoning detail type {kind!r}")
    return out


def thinking_blocks(value: Any, path: str) -> list[JSONObj]:
    """LiteLLM ``thinking_blocks`` (Anthropic's ``thinking`` / ``redacted_thinking`` blocks) ->
    thinking part dicts; a raw signature is Anthropic's."""
    if type(value) is not list:
        raise wrong_type(path, "an array", value)
    out: list[JSONObj] = []
    for k, raw in enumerate(value):
        bpath = f"{path}[{k}]"
        block = as_obj(raw, bpath)
        kind = req(block, "type", str, bpath)
        if kind == "thinking":
            sig, prov = signed(opt(block, "signature", str, bpath), join(bpath, "signature"), ANTHROPIC)
            out.append(
                {
                    "type": "thinking",
                    "text": thinking_text(block, bpath),
                    "signature": sig,
                    "provenance": prov,
                }
            )
        elif kind == "redacted_thinking":
            data, prov = signed(req(block, "data", str, bpath), join(bpath, "data"), ANTHROPIC)
            out.append({"type": "redacted_thinking", "data": data or "", "provenance": prov})
        else:
            raise unsupported(join(bpath, "type"), f"thinking block type {kind!r}")
    return out


def thinking_text(part: JSONObj, path: str) -> str:
    """A ``thinking`` block's text: a string, or Mistral's list of ``{"text": ...}`` chunks
    (observed in pydantic-ai cassette ``test_mistral/test_mistral_model_thinking_part.yaml``)."""
    value = part.get("thinking")
    tpath = join(path, "thinking")
    if isinstance(value, list):
        chunks = [as_obj(c, join(tpath, k)) for k, c in enumerate(value)]
        return "".join(req(c, "text", str, join(tpath, k)) for k, c in enumerate(chunks))
    return req(part, "thinking", str, path)


def unwrap_sig(value: str | None, path: str) -> tuple[str | None, Any]:
    if value is None:
        return None, None
    try:
        return unwrap_signature(value)
    except ValueError as exc:
        raise InvalidRequest(f"{path}: damaged Turnstile signature envelope ({exc})", param=path) from None
