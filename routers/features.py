"""Turn features: what routing knows about a turn, computed once and cheaply.

Token counts here are a **character-based estimate** (characters / 4, images a flat
:data:`IMAGE_TOKENS`), not a tokenizer count: ``gateway.providers.catalog.count_tokens`` costs
milliseconds per call on long histories, too slow for a per-turn decision, and routing only
needs the size class (does it fit the window, what does it cost). Upstream usage remains the
record for accounting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import orjson

from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Provenance,
    RedactedThinkingPart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

TurnKind = Literal["fresh_user", "tool_digest", "final_answer", "tool_error_retry", "other"]

#: Characters per token for the routing estimate.
CHARS_PER_TOKEN = 4
#: Tokens counted per image for the routing estimate (a mid-size image on most APIs).
IMAGE_TOKENS = 1000

_CODE = re.compile(
    r"```|^\s*(def|class|import|from|function|const|let|var|#include|SELECT|public)\b|[;{}]\s*$", re.MULTILINE
)


# Treated as immutable (changed with dataclasses.replace); not frozen: a frozen init costs µs per turn.
@dataclass(slots=True)
class TurnFeatures:
    """Features of one turn.

    * ``kind``: ``fresh_user`` (the turn answers a user message), ``tool_digest`` (digesting
      tool results; the model may call more tools), ``final_answer`` (tool results arrived
      and no more tools can be called), ``tool_error_retry`` (the last tool result is an
      error: flagged, or its text opens like one), ``other`` (e.g. the request ends with an
      assistant prefill).
    * ``input_tokens``: estimated input tokens (chars / 4 + tools + images);
      ``history_tokens`` the prefix up to and including the last assistant message (what a
      warm prompt cache holds from the previous turn);
      ``reserved_output_tokens``: the request's ``max_output_tokens`` (0 when absent).
    * ``tools``: names of tools offered; ``tool_choice``: its mode or None.
    * ``images``: image parts anywhere in the request; ``has_code``: code-like text in the
      last user message or tool results; ``depth``: assistant messages so far;
      ``tool_loop_depth``: assistant messages with tool calls since the last user message;
      ``recent_tool_errors``: error tool results since the last user message.
    * ``thinking``: the request asks for reasoning; ``json_mode``: a JSON response format.
    * ``current``: provenance of the last assistant message (the session's current model),
      or None; ``signed_open_loop``: the request ends with tool results for an assistant
      message that carries signed thinking (handed case C16: this loop must stay on the model
      that signed it).
    * ``text``: the last user message's text (for text scorers, at most 4000 characters).
    """

    kind: TurnKind
    input_tokens: int
    history_tokens: int = 0
    reserved_output_tokens: int = 0
    tools: tuple[str, ...] = ()
    tool_choice: str | None = None
    images: int = 0
    has_code: bool = False
    depth: int = 0
    tool_loop_depth: int = 0
    recent_tool_errors: int = 0
    thinking: bool = False
    json_mode: bool = False
    current: Provenance | None = None
    signed_open_loop: bool = False
    text: str = ""
    extra: dict[str, object] = field(default_factory=dict)


_ERROR_TEXT = re.compile(
    r"^\s*(error\b|traceback \(most recent call last\)|exception\b|\w+error:)", re.IGNORECASE
)


def _is_error(msg: ToolResultMessage) -> bool:
    """A tool result is an error when flagged (Anthropic ``is_error``) or, for dialects with
    no flag (OpenAI ``role: tool``), when its text opens like an error ("Error: …",
    "Traceback (most recent call last)", "ValueError: …") — observed in τ-bench airline
    trajectories (``tau-bench/gpt-4o-airline.json``)."""
    if msg.is_error:
        return True
    content = msg.content
    if content and type(content[0]) is TextPart:
        first = content[0].text
    else:
        first = next((p.text for p in content if type(p) is TextPart), "")
    return bool(first) and bool(_ERROR_TEXT.match(first[:200]))


def _clip(text: str, limit: int = 4000) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n" + text[-half:]


def _tools_chars(request: Request) -> int:
    """Characters of the request's tool definitions as compact JSON without nulls (what
    ``orjson.dumps([t.model_dump(exclude_none=True) ...])`` gives, without pydantic's
    serialiser)."""
    if not request.tools:
        return 0
    out = []
    for t in request.tools:
        d: dict[str, object] = {"name": t.name}
        if t.description is not None:
            d["description"] = t.description
        d["parameters"] = t.parameters
        if t.strict is not None:
            d["strict"] = t.strict
        if t.cache_control is not None:
            d["cache_control"] = t.cache_control
        out.append(d)
    return len(orjson.dumps(out))


def extract(request: Request, *, current: Provenance | None = None, text: bool = True) -> TurnFeatures:
    """Compute :class:`TurnFeatures` for ``request`` in one pass over its messages.

    The session's current model is read from the provenance of the last assistant message's
    parts (signed thinking, tool calls); ``current`` (e.g. from a session store) is used when
    the messages carry none. ``text`` False skips what only text-reading policies use
    (``text`` stays empty, ``has_code`` False): the ordered policy reads neither.

    Cost is linear in the request's size with no tokenizer and no JSON parsing of message
    text (tool definitions are serialised once with orjson to size them).
    """
    msgs = request.messages
    chars = 0
    images = 0
    depth = 0
    last_user_idx = -1
    last_assistant_idx = -1
    history_chars = 0
    # Since the last user message: assistant messages with tool calls, and the tool results.
    tool_loop_depth = 0
    tail_results: list[ToolResultMessage] = []
    for i, msg in enumerate(msgs):
        if type(msg) is UserMessage:
            last_user_idx = i
            tool_loop_depth = 0
            if tail_results:
                tail_results = []
            for p in msg.content:
                if type(p) is TextPart:
                    chars += len(p.text)
                else:
                    images += 1
        elif type(msg) is AssistantMessage:
            depth += 1
            last_assistant_idx = i
            calls = False
            for ap in msg.content:
                if type(ap) is ToolCallPart:
                    chars += len(ap.raw_arguments) + len(ap.name)
                    calls = True
                elif type(ap) is TextPart or type(ap) is ThinkingPart:
                    chars += len(ap.text)
                elif type(ap) is RedactedThinkingPart:
                    chars += len(ap.data) // 2
            if calls:
                tool_loop_depth += 1
            history_chars = chars
        elif type(msg) is ToolResultMessage:
            tail_results.append(msg)
            for rp in msg.content:
                if type(rp) is TextPart:
                    chars += len(rp.text)
                elif type(rp) is ImagePart:
                    images += 1
        elif type(msg) is SystemMessage:
            chars += sum(len(p.text) for p in msg.content)
    tool_chars = _tools_chars(request)
    input_tokens = (chars + tool_chars) // CHARS_PER_TOKEN + images * IMAGE_TOKENS
    history_tokens = (history_chars + tool_chars) // CHARS_PER_TOKEN

    recent_errors = 0
    for m in tail_results:
        if _is_error(m):
            recent_errors += 1

    kind: TurnKind = "other"
    last = msgs[-1] if msgs else None
    can_call = bool(request.tools) and not (request.tool_choice and request.tool_choice.mode == "none")
    if type(last) is UserMessage:
        kind = "fresh_user"
    elif type(last) is ToolResultMessage:
        kind = "tool_error_retry" if _is_error(last) else "tool_digest" if can_call else "final_answer"

    found: Provenance | None = None
    signed = False
    if last_assistant_idx >= 0:
        am = msgs[last_assistant_idx]
        assert type(am) is AssistantMessage
        has_calls = False
        for ap in am.content:
            prov = getattr(ap, "provenance", None)
            if prov is not None and found is None:
                found = prov
            if type(ap) is ToolCallPart:
                has_calls = True
            if type(ap) is RedactedThinkingPart or (
                (type(ap) is ThinkingPart or type(ap) is ToolCallPart) and ap.signature
            ):
                signed = True
        signed = signed and has_calls and kind in ("tool_digest", "final_answer", "tool_error_retry")

    last_text = ""
    if text and last_user_idx >= 0:
        um = msgs[last_user_idx]
        content = um.content
        if len(content) == 1 and type(content[0]) is TextPart:
            last_text = _clip(content[0].text)
        else:
            last_text = _clip("".join(p.text for p in content if type(p) is TextPart))
    code_text = last_text
    for m in tail_results if text else ():
        code_text += "".join(p.text for p in m.content if type(p) is TextPart)[:2000]
    rf = request.response_format
    return TurnFeatures(
        kind=kind,
        input_tokens=input_tokens,
        history_tokens=history_tokens,
        reserved_output_tokens=request.max_output_tokens or 0,
        tools=tuple(t.name for t in request.tools),
        tool_choice=request.tool_choice.mode if request.tool_choice else None,
        images=images,
        has_code=bool(_CODE.search(code_text)) if code_text else False,
        depth=depth,
        tool_loop_depth=tool_loop_depth,
        recent_tool_errors=recent_errors,
        thinking=bool(request.thinking and request.thinking.enabled),
        json_mode=rf is not None and rf.type != "text",
        current=found or current,
        signed_open_loop=signed,
        text=last_text,
    )
