"""Pieces of the OpenAI Chat Completions wire API shared by the response parser
(:mod:`gateway.providers.openai_chat`) and the stream parser
(:mod:`gateway.providers.openai_stream`): the stop-reason table, usage, thinking provenance
and the readers of message / delta content, reasoning and tool-call arguments.
"""

from __future__ import annotations

import functools
from typing import Any

from gateway.config import Deployment
from gateway.errors import UnknownStopReason
from gateway.providers import wire_common
from gateway.schema import Provenance, StopReason, Usage

API = "openai_chat"

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "content_filter",
}


def map_stop_reason(raw: str | None) -> StopReason:
    """``finish_reason`` -> internal stop reason: ``stop``, ``length``, ``tool_calls`` and the
    legacy ``function_call`` (-> ``tool_use``), ``content_filter``. Anything else (including a
    missing value) raises :class:`UnknownStopReason`."""
    if not isinstance(raw, str) or raw not in _STOP_REASONS:
        raise UnknownStopReason(f"unknown OpenAI chat finish_reason {raw!r}")
    return _STOP_REASONS[raw]


@functools.lru_cache(maxsize=1024)
def _provenance(provider: str, model: str) -> Provenance:
    return Provenance(api=API, provider=provider, model=model)


def thinking_provenance(deployment: Deployment) -> Provenance:
    """Provenance of reasoning text read from this deployment (one shared, frozen instance
    per provider and model)."""
    return _provenance(deployment.provider, deployment.model)


def usage_fields(u: dict[str, Any] | None) -> dict[str, int]:
    """The :class:`Usage` fields (tokens) of an OpenAI ``usage`` object, as a dict; rules in
    :func:`usage_from_wire`. Empty for a missing usage."""
    if not u:
        return {}
    pdet = u.get("prompt_tokens_details")
    if not isinstance(pdet, dict):
        pdet = None
    cdet = u.get("completion_tokens_details")
    if not isinstance(cdet, dict):
        cdet = None
    int_field = wire_common.int_field
    prompt = int_field(u, "prompt_tokens") or 0
    completion = int_field(u, "completion_tokens") or 0
    cached = int_field(pdet, "cached_tokens")
    if cached is None:
        cached = int_field(u, "prompt_cache_hit_tokens")
    cached = cached or 0
    written = int_field(pdet, "cache_write_tokens") or 0
    reasoning = int_field(cdet, "reasoning_tokens") or 0
    total = int_field(u, "total_tokens")
    output = completion
    outside = total is not None and total == prompt + completion + reasoning
    if reasoning and (outside or reasoning > completion):
        # reasoning above completion cannot be a part of it: the Vercel AI gateway reports
        # completion 9, reasoning 61, total = prompt + completion (corpus fantasy
        # TestVercelThinking/gemini-3-pro-preview/thinking-streaming.yaml)
        output = completion + reasoning
    return {
        "input_tokens": max(prompt - cached - written, 0),
        "output_tokens": output,
        "cache_read_tokens": cached,
        "cache_write_tokens": written,
        "reasoning_tokens": reasoning,
    }


def usage_from_wire(u: dict[str, Any] | None) -> Usage:
    """OpenAI ``usage`` -> :class:`Usage` (tokens).

    * ``cache_read = prompt_tokens_details.cached_tokens`` (DeepSeek's
      ``prompt_cache_hit_tokens`` when that is absent);
    * ``cache_write = prompt_tokens_details.cache_write_tokens`` (OpenRouter,
      https://openrouter.ai/docs/use-cases/usage-accounting);
    * ``input = prompt_tokens - cache_read - cache_write`` (``prompt_tokens`` includes both);
    * ``output = completion_tokens``; ``reasoning = completion_tokens_details.reasoning_tokens``.
      xAI reports ``completion_tokens`` WITHOUT the reasoning tokens (``total_tokens =
      prompt + completion + reasoning``, vercel-ai ``xai/src/__fixtures__/xai-tool-call.json``);
      then ``output = completion_tokens + reasoning_tokens``.

    Extra fields (``cost``, ``cost_in_usd_ticks``, ``num_sources_used``…) are ignored. A
    missing usage gives all zeros (the accounting layer then estimates).
    """
    return Usage.model_validate(usage_fields(u))


def content_items(content: Any) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs of a message/delta ``content``: a string, or a list of parts
    (``{"type": "text"}``; Mistral's ``{"type": "thinking", "thinking": [text parts]}``,
    vercel-ai ``mistral/src/__fixtures__/mistral-reasoning.chunks.txt``)."""
    if isinstance(content, str):
        return [("text", content)] if content else []
    out: list[tuple[str, str]] = []
    if isinstance(content, list):
        for item in content:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "text" and isinstance(item.get("text"), str):
                if item["text"]:
                    out.append(("text", item["text"]))
            elif item.get("type") == "thinking":
                inner = item.get("thinking")
                if isinstance(inner, str):
                    text = inner
                elif isinstance(inner, list):
                    text = "".join(str(x.get("text", "")) for x in inner if isinstance(x, dict))
                else:
                    text = ""
                if text:
                    out.append(("thinking", text))
    return out


def reasoning_text(obj: dict[str, Any]) -> str:
    """Reasoning text of a message or delta: ``reasoning_content`` (DeepSeek, xAI, Qwen, vLLM)
    or ``reasoning`` (OpenRouter, Ollama)."""
    for key in ("reasoning_content", "reasoning"):
        val = obj.get(key)
        if isinstance(val, str) and val:
            return val
    return ""


def raw_arguments_of(value: Any) -> str:
    """The arguments string of a ``function`` object: kept byte-exact when a string; a JSON
    object some servers send instead is serialised compactly; missing -> ``""``."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return wire_common.dumps_arguments(value)
