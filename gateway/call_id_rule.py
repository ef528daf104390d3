"""The one rule of a usable tool-call id: what no upstream could take as an id, whoever sent it.

A tool-call id travels to whichever upstream a turn is routed to, comes back in the answer, is
stored in the transcript and the session log, and pairs a tool result with its call. The same
rule judges it on both sides: a client's id is refused at the edge
(:mod:`gateway.edges.call_ids`), and an upstream's id is replaced on the way out
(:mod:`gateway.guards.upstream_ids`), so that every id a client receives is one it may send back.
What each upstream accepts (the limits as found, with their source):

* **OpenAI Chat Completions**: ``tool_calls[].id`` / ``tool_call_id`` at most **40** characters,
  any characters. The API answers ``Invalid 'messages[3].tool_calls[0].id': string too long.
  Expected a string with maximum length 40, but got a string with length 41 instead.``
  (reported in microsoft/autogen#6377, agno-agi/agno#5382 and Portkey-AI/gateway#1062; a JSON
  Schema ``maxLength``, so characters; the OpenAPI spec and the ``openai`` SDK types
  (``ChatCompletionMessageToolCallParam.id: str``) state no limit).
* **Anthropic Messages**: ``tool_use.id`` / ``tool_result.tool_use_id`` must match
  ``^[a-zA-Z0-9_-]+$`` (error ``messages.7.content.1.tool_use.id: String should match pattern
  '^[a-zA-Z0-9_-]+$'``, anthropics/claude-agent-sdk-python#856); so at least one ASCII
  character, and no documented maximum length (``anthropic`` SDK ``ToolUseBlockParam.id: str``).
* **Gemini**: ``FunctionCall.id`` / ``FunctionResponse.id`` are optional strings with no
  documented constraint (ai.google.dev/api/caching#FunctionCall: "Optional. The unique id of the
  function call").
* **Bedrock Converse** (through LiteLLM): ``toolUseId`` of 1-64 characters of
  ``[a-zA-Z0-9_.:-]`` (litellm ``_sanitize_bedrock_tool_use_id``, which hashes longer ids).

An id that merely breaks one upstream's rule (an OpenAI ``call_...`` with a dot going to
Anthropic, a 60-character id going to OpenAI) is rewritten deterministically for that upstream
and mapped back (:mod:`gateway.providers.naming`). An id that cannot be an id at all is
*unusable* (:func:`unusable_call_id`):

* empty, or whitespace only: no upstream's rule admits it, and a rewrite would invent an id
  the client never sent (two empty ids would pair a result with the wrong call);
* invisible only: nothing but format characters (Unicode ``Cf``: ZERO WIDTH SPACE U+200B, the
  joiners, BOM U+FEFF, bidi marks), space separators (``Zs``), line/paragraph separators and
  other default-ignorable code points (variation selectors, Hangul fillers, tags:
  ``Default_Ignorable_Code_Point``) -- an id that prints as nothing is as blank as whitespace
  to whoever reads a log, a transcript or an error, and two of them look identical;
* holding a control character (Unicode ``Cc``: NUL, CR, LF, TAB, DEL...) or a line/paragraph
  separator: Anthropic refuses it, it breaks the headers, logs and SSE frames an id appears in;
* longer than :data:`MAX_CALL_ID_BYTES` (256) bytes of UTF-8. No upstream documents a bound
  in bytes; the bound is the gateway's own ("longer than any upstream allows"), and what it
  protects (headers, log lines, transcript rows, SSE frames) is measured in bytes, so it counts
  bytes: 200 emoji are 200 characters but 800 bytes. It admits every id an upstream takes:
  Anthropic's and Bedrock's are ASCII (bytes = characters, Bedrock at most 64), OpenAI's at most
  40 characters (at most 160 bytes); the longest ids seen in real traffic are about 50-80 ASCII
  characters (OpenAI Responses ``fc_`` / ``ws_`` ids of 51-53, proxy-made ids of 83:
  vercel/ai#8132, openclaw/openclaw#875).
"""

from __future__ import annotations

import re
import unicodedata

import regex

MAX_CALL_ID_BYTES = 256
"""The longest usable tool-call id, in UTF-8 bytes."""

_PLAIN = re.compile(rf"(?=[\x20-\x7e]*[\x21-\x7e])[\x20-\x7e]{{1,{MAX_CALL_ID_BYTES}}}")
"""Printable ASCII, not blank, within the bound: the common case, one C call."""

_CONTROL = frozenset({"Cc", "Zl", "Zp"})

_INVISIBLE = regex.compile(r"[\p{Cf}\p{Zs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\s]+")
"""Characters that print as nothing (module docstring); ``regex`` knows the Unicode property
``Default_Ignorable_Code_Point``, which the standard library's ``unicodedata`` does not."""

plain_call_id = _PLAIN.fullmatch
"""Not None for the common id (printable ASCII, not blank, within the bound), which every
upstream takes: the one C call made per id before :func:`unusable_call_id`."""


def unusable_call_id(value: str) -> str | None:
    """Why ``value`` cannot be a tool-call id for any upstream (a phrase for an error message or
    a log line: ``"is empty"``, ``"is whitespace only"``, ``"holds control character U+000A"``,
    ``"is invisible characters only (U+200B ZERO WIDTH SPACE)"``, ``"is 300 bytes long in UTF-8
    (at most 256)"``), or None when some upstream takes it, possibly after its deterministic
    rewrite. Never raises."""
    if plain_call_id(value) is not None:
        return None
    if not value:
        return "is empty"
    if not value.strip():
        return "is whitespace only"
    for ch in value:
        if unicodedata.category(ch) in _CONTROL:
            return f"holds control character U+{ord(ch):04X}"
    if _INVISIBLE.fullmatch(value) is not None:
        first = next(ch for ch in value if not ch.isspace())
        name = unicodedata.name(first, "")
        return f"is invisible characters only (U+{ord(first):04X}{' ' + name if name else ''})"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_CALL_ID_BYTES:
        return f"is {size} bytes long in UTF-8 (at most {MAX_CALL_ID_BYTES})"
    return None


__all__ = ["MAX_CALL_ID_BYTES", "plain_call_id", "unusable_call_id"]
