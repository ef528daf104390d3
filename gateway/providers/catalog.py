"""Model metadata from litellm's *bundled* tables: prices, context windows, token counts.

litellm is imported lazily inside the functions (importing it takes seconds) with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first, so the bundled ``model_prices_and_context_window``
table is used and nothing is fetched from the network. Lookups are cached per model name.

Units: prices are USD per **million** tokens (:class:`gateway.config.Price`); litellm stores
USD per token. Context windows and counts are tokens.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import orjson

from gateway.config import Deployment, Price
from gateway.schema import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["context_window", "count_tokens", "model_info", "resolve_price", "table_price"]

# Provider names used in deployments -> litellm's prefixes for the same vendor.
_PROVIDER_ALIASES = {
    "google": ("gemini", "vertex_ai"),
    "gemini": ("gemini",),
    "vertex": ("vertex_ai",),
    "vertex_ai": ("vertex_ai",),
    "azure": ("azure",),
    "bedrock": ("bedrock",),
}


_TOKENIZER = {"ready": False, "loading": False}
"""Whether litellm (the tokenizer) is imported, or being imported by :func:`warm_tokenizer`'s
thread (process state of the import itself, not configuration)."""


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    _TOKENIZER["ready"] = True
    return litellm


def warm_tokenizer() -> None:
    """Import litellm (the tokenizer :func:`count_tokens` uses) in a daemon thread, once. The
    import takes seconds (12 s seen on a busy 2-core machine) and about 150 MB: done on the
    event loop it stalls every request, so the loop never waits for it (``wait=False``)."""
    if _TOKENIZER["ready"] or _TOKENIZER["loading"]:
        return
    _TOKENIZER["loading"] = True
    import threading

    def load() -> None:
        try:
            _litellm()
        except Exception:  # counted by the fallback estimate instead
            pass
        finally:
            _TOKENIZER["loading"] = False

    threading.Thread(target=load, name="tokenizer-import", daemon=True).start()


def load_tokenizer() -> None:
    """Import litellm (the tokenizer) now, blocking (seconds), so that every later
    :func:`count_tokens` counts with it, ``wait=False`` included. For batch work whose numbers
    must not depend on timing (``turnstile replay``); never on the event loop of a server."""
    import contextlib

    with contextlib.suppress(Exception):  # then counted by the fallback estimate, every time alike
        _litellm()


@functools.lru_cache(maxsize=1)
def _cost_table() -> dict[str, Any]:
    """litellm's bundled price table (``model_prices_and_context_window_backup.json``) read
    straight from the installed package, without importing litellm (the import costs about
    150 MB of resident memory and seconds of start-up). Entries with ``alias_of`` are
    resolved to their target and the ``fallback_generalizations`` block is dropped, exactly
    as ``litellm.model_cost`` does with ``LITELLM_LOCAL_MODEL_COST_MAP=True``. When litellm
    is already imported, its own ``model_cost`` is used."""
    import importlib.util
    import sys
    from pathlib import Path

    if "litellm" in sys.modules:
        return dict(_litellm().model_cost)
    spec = importlib.util.find_spec("litellm")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        path = Path(loc) / "model_prices_and_context_window_backup.json"
        if path.exists():
            raw = orjson.loads(path.read_bytes())
            raw.pop("fallback_generalizations", None)  # routing rules, not a model
            table = {k: v for k, v in raw.items() if isinstance(v, dict)}
            for name, entry in table.items():
                target = raw.get(entry["alias_of"]) if "alias_of" in entry else None
                if isinstance(target, dict):
                    table[name] = target
            return table
    return dict(_litellm().model_cost)


def _candidates(model: str, provider: str) -> list[str]:
    names = [model]
    bare = model
    if model.startswith("models/"):
        bare = model[len("models/") :]
        names.append(bare)
    if "/" in bare:
        names.append(bare.split("/", 1)[1])
    prefixes = [provider, *_PROVIDER_ALIASES.get(provider, ())] if provider else []
    for prefix in prefixes:
        names.append(f"{prefix}/{bare}")
    return list(dict.fromkeys(n for n in names if n))


@functools.lru_cache(maxsize=1024)
def model_info(model: str, provider: str = "") -> dict[str, Any] | None:
    """litellm's bundled table entry for ``model`` (tried as given, without a ``models/`` or
    ``provider/`` prefix, and as ``{provider}/{model}``), or None when unknown. Cached."""
    table = _cost_table()
    for name in _candidates(model, provider):
        entry = table.get(name)
        if isinstance(entry, dict):
            return entry
    return None


def _per_million(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return round(float(value) * 1_000_000, 10)
    except (TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=1024)
def table_price(model: str, provider: str = "") -> Price:
    """The bundled table's price for ``model`` in USD per million tokens; all fields None for
    an unknown model. Fields: ``input_cost_per_token``, ``output_cost_per_token``,
    ``cache_read_input_token_cost``, ``cache_creation_input_token_cost``,
    ``output_cost_per_reasoning_token`` (each x 1e6)."""
    info = model_info(model, provider) or {}
    return Price(
        input=_per_million(info.get("input_cost_per_token")),
        output=_per_million(info.get("output_cost_per_token")),
        cache_read=_per_million(info.get("cache_read_input_token_cost")),
        cache_write=_per_million(info.get("cache_creation_input_token_cost")),
        reasoning=_per_million(info.get("output_cost_per_reasoning_token")),
    )


def resolve_price(deployment: Deployment) -> Price:
    """The price of ``deployment`` (USD per million tokens): the bundled table for
    ``deployment.model`` with each field set in ``deployment.price`` overriding the table's.
    An unknown model without override gives a :class:`Price` whose fields are all None."""
    base = table_price(deployment.model, deployment.provider)
    if deployment.price is None:
        return base
    override = deployment.price.model_dump(exclude_none=True)
    return base.model_copy(update=override)


def context_window(deployment: Deployment) -> int | None:
    """Input context window of ``deployment`` in tokens: ``deployment.context_window`` when
    set, else the table's ``max_input_tokens`` (or ``max_tokens``), else None."""
    if deployment.context_window is not None:
        return deployment.context_window
    info = model_info(deployment.model, deployment.provider) or {}
    for key in ("max_input_tokens", "max_tokens"):
        value = info.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


# ---------------------------------------------------------------------------- token counting


def _text_of(parts: list[Any]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def _render(request: Request) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The request as OpenAI-style chat dicts, only for counting tokens."""
    messages: list[dict[str, Any]] = []
    for msg in request.messages:
        if isinstance(msg, SystemMessage):
            messages.append({"role": "system", "content": _text_of(msg.content)})
        elif isinstance(msg, UserMessage):
            content: list[dict[str, Any]] = []
            for part in msg.content:
                if isinstance(part, TextPart):
                    content.append({"type": "text", "text": part.text})
                elif isinstance(part, ImagePart):
                    content.append({"type": "image_url", "image_url": {"url": part.url or "data:"}})
                elif isinstance(part, DocumentPart) and part.text is not None:
                    content.append({"type": "text", "text": part.text})  # a text document is its words
            messages.append({"role": "user", "content": content})
        elif isinstance(msg, AssistantMessage):
            texts: list[str] = []
            calls: list[dict[str, Any]] = []
            for apart in msg.content:
                if isinstance(apart, TextPart | ThinkingPart):
                    texts.append(apart.text)
                elif isinstance(apart, RedactedThinkingPart):
                    continue
                elif isinstance(apart, ToolCallPart):
                    calls.append(
                        {
                            "id": apart.id,
                            "type": "function",
                            "function": {"name": apart.name, "arguments": apart.raw_arguments},
                        }
                    )
            out: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
        elif isinstance(msg, ToolResultMessage):
            messages.append(
                {"role": "tool", "tool_call_id": msg.tool_call_id, "content": _text_of(msg.content)}
            )
    tools = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description or "", "parameters": t.parameters},
        }
        for t in request.tools
    ]
    return messages, tools


def _fallback_count(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    return len(orjson.dumps(messages)) // 4 + (len(orjson.dumps(tools)) // 4 if tools else 0)


def count_tokens(request: Request, model: str, *, wait: bool = True, bound: bool = False) -> int:
    """An **estimate** of the input tokens of ``request`` for ``model`` (tokens).

    ``wait=False`` (the event loop): while litellm is not imported yet, its import is started
    in a thread (:func:`warm_tokenizer`) and this call answers the ``len(JSON text) // 4``
    estimate at once, never blocking on the import — or, with ``bound`` (a hard budget's worst
    case), the JSON text's UTF-8 length, which no tokenizer exceeds (every token is at least
    one byte; ``// 4`` undercounts CJK text and emoji three- to fourfold).

    Messages and tools are rendered as OpenAI-style chat dicts and counted with
    ``litellm.token_counter`` (tiktoken, or litellm's bundled Anthropic/DeepSeek tokenizers;
    images count a default size and are never fetched; tokenizers litellm would download
    are replaced by tiktoken). If litellm cannot count, ``len(JSON text) // 4``. Upstream
    usage, when reported, always wins over this number.
    """
    messages, tools = _render(request)
    if not wait and not _TOKENIZER["ready"]:
        warm_tokenizer()
        if bound:
            return len(orjson.dumps(messages)) + (len(orjson.dumps(tools)) if tools else 0)
        return _fallback_count(messages, tools)
    try:
        litellm = _litellm()
        kind_of = getattr(litellm.utils, "huggingface_tokenizer_kind", None)
        counted_model = model
        if kind_of is not None and kind_of(model) not in (None, "anthropic", "deepseek"):
            counted_model = "gpt-4o"  # avoid a HuggingFace download: count with tiktoken
        return int(
            litellm.token_counter(
                model=counted_model,
                messages=messages,
                tools=tools or None,
                use_default_image_token_count=True,
            )
        )
    except Exception:  # litellm raises many kinds of errors on odd input; estimate instead
        return _fallback_count(messages, tools)
