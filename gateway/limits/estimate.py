"""A cheap upper bound of a request's input tokens, for budget reservations on the hot path.

Counting a request's input tokens exactly (:func:`gateway.providers.catalog.count_tokens`:
``litellm.token_counter``) is the largest part of what a keyed turn adds to the hot path, and a
reservation needs no exact count, only one that is never below it. :func:`input_token_bound`
walks the request once and adds up UTF-8 byte lengths:

* **Text** (system, user and assistant text, thinking, text documents, tool results, tool
  call arguments and ids): **1 token per UTF-8 byte**. Every tokenizer the count uses is
  byte-level (tiktoken's ``cl100k``/``o200k``, litellm's bundled Anthropic and DeepSeek BPE
  tokenizers; tokenizers litellm would download are replaced by tiktoken): each ordinary token
  stands for at least one byte, so no text has more tokens than bytes. CJK text (3 bytes a
  character, often 1–2 tokens) and emoji (4 bytes) are therefore bounded too, as is code.
* **Per message**: :data:`MESSAGE_OVERHEAD` tokens (litellm counts 3 or 4 per message, plus
  the role, plus 1 for a name), and :data:`REQUEST_OVERHEAD` once (the 3 reply-primer tokens).
* **Tool definitions**: litellm renders them as TypeScript-like text and counts that, plus 9;
  the text is bounded by :data:`TOOL_FACTOR` times the bytes of the definition's name,
  description and JSON schema, plus :data:`TOOL_OVERHEAD` per tool (an empty schema
  ``{}`` renders as ``any``, longer than its JSON).
* **Images**: None — the caller counts exactly (their count is a per-image constant there,
  not a function of the bytes).

The bound is typically 3–4 times the count for English text, so under a budget near its
limit a reservation of the bound can be refused where the exact count would fit; the limits
layer then counts exactly and tries again (:meth:`gateway.limits.holds.Admitter.admit`), so no
turn is refused that the exact count admits. ``tests/gateway/limits/test_limits_estimate.py``
checks the bound against the exact count on generated prompts (ASCII, non-ASCII, code,
tools).
"""

from __future__ import annotations

import orjson

from gateway.schema import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

MESSAGE_OVERHEAD = 8
"""Tokens a message adds beyond its text: litellm's 3–4 per message, the role, a name."""

REQUEST_OVERHEAD = 16
"""Tokens a request adds once: the 3 reply-primer tokens, the tool section's 9, margin."""

TOOL_FACTOR = 2
"""Tokens per byte of a tool's name, description and JSON schema (their rendering as text)."""

TOOL_OVERHEAD = 64
"""Tokens a tool definition adds beyond ``TOOL_FACTOR`` times its bytes (its rendering's frame)."""

TOOLS_PREAMBLE = 320
"""Tokens a request with tools adds once: litellm renders the tool section of some tokenizers
with a fixed preamble (deepseek-chat counts 262 tokens for one empty tool and a short question,
16 without the tool; found by the property test in tests/gateway/limits/test_limits_estimate.py)."""


def _bytes(texts: list[str]) -> int:
    """UTF-8 bytes of ``texts`` together: one join, one length (no loop in Python)."""
    joined = "".join(texts)
    return len(joined) if joined.isascii() else len(joined.encode("utf-8", "surrogatepass"))


def input_token_bound(request: Request) -> int | None:
    """An upper bound (tokens) of the input tokens :func:`gateway.providers.catalog.count_tokens`
    counts for ``request`` with any tokenizer it uses (see the module docstring), or None when
    the request holds an image (count it exactly then). Never raises for a well-formed request.
    """
    texts: list[str] = []
    add = texts.append
    overhead = REQUEST_OVERHEAD + MESSAGE_OVERHEAD * len(request.messages)
    for msg in request.messages:
        if isinstance(msg, UserMessage):
            for part in msg.content:
                if isinstance(part, TextPart):
                    add(part.text)
                elif isinstance(part, ImagePart):
                    return None
                elif isinstance(part, DocumentPart) and part.text is not None:
                    add(part.text)
        elif isinstance(msg, AssistantMessage):
            for apart in msg.content:
                if isinstance(apart, ToolCallPart):
                    add(apart.raw_arguments)
                    overhead += MESSAGE_OVERHEAD
                elif isinstance(apart, TextPart | ThinkingPart):
                    add(apart.text)
        elif isinstance(msg, ToolResultMessage):
            add(msg.tool_call_id)
            for rpart in msg.content:
                if isinstance(rpart, TextPart):
                    add(rpart.text)
        elif isinstance(msg, SystemMessage):
            for p in msg.content:
                add(p.text)
    total = overhead + _bytes(texts)
    if request.tools:
        names: list[str] = []
        schema_bytes = 0
        for t in request.tools:
            names.append(t.name)
            if t.description:
                names.append(t.description)
            schema_bytes += len(orjson.dumps(t.parameters))
        tools = _bytes(names) + schema_bytes
        total += TOOLS_PREAMBLE + TOOL_FACTOR * tools + TOOL_OVERHEAD * len(request.tools)
    return total
