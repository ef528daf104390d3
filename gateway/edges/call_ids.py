"""Tool-call ids a client may send: refused when no upstream could take them as ids.

A client's tool-call id travels to whichever upstream a turn is routed to, comes back in the
answer, is stored in the transcript and the session log, and pairs a tool result with its call.
What each upstream accepts (the limits as found, with their source):

* **OpenAI Chat Completions**: ``tool_calls[].id`` / ``tool_call_id`` at most **40** characters,
  any characters. The API answers ``Invalid 'messages[3].tool_calls[0].id': string too long.
  Expected a string with maximum length 40, but got a string with length 41 instead.``
  (reported in microsoft/autogen#6377 and Portkey-AI/gateway#1062; the OpenAPI spec and the
  ``openai`` SDK types (``ChatCompletionMessageToolCallParam.id: str``) state no limit).
* **Anthropic Messages**: ``tool_use.id`` / ``tool_result.tool_use_id`` must match
  ``^[a-zA-Z0-9_-]+$`` (error ``messages.7.content.1.tool_use.id: String should match pattern
  '^[a-zA-Z0-9_-]+$'``, anthropics/claude-agent-sdk-python#856); so at least one character, and
  no documented maximum length (``anthropic`` SDK ``ToolUseBlockParam.id: str``).
* **Gemini**: ``FunctionCall.id`` / ``FunctionResponse.id`` are optional strings with no
  documented constraint (ai.google.dev/api/caching#FunctionCall: "Optional. The unique id of the
  function call").
* **Bedrock Converse** (through LiteLLM): ``toolUseId`` of 1-64 characters of
  ``[a-zA-Z0-9_.:-]`` (litellm ``_sanitize_bedrock_tool_use_id``, which hashes longer ids).

An id that merely breaks one upstream's rule (an OpenAI ``call_...`` with a dot going to
Anthropic, a 60-character id going to OpenAI) is rewritten deterministically for that upstream
and mapped back (:mod:`gateway.providers.naming`). An id that cannot be an id at all is refused
at the edge with HTTP 400 naming every place it occurs, before anything goes upstream,
whatever the pairing policy (:func:`unusable_call_id`):

* empty, or whitespace only: no upstream's rule admits it, and a rewrite would invent an id
  the client never sent (two empty ids would pair a result with the wrong call);
* holding a control character (Unicode ``Cc``: NUL, CR, LF, TAB, DEL...) or a line/paragraph
  separator: Anthropic refuses it, it breaks the headers, logs and SSE frames an id appears in;
* longer than :data:`MAX_CALL_ID_CHARS` (256) characters: no upstream documents a limit above
  Bedrock's 64 or OpenAI's 40 (those get the rewrite), Anthropic and Gemini document none; the
  longest ids seen in real traffic are about 50-80 characters (OpenAI Responses ``fc_`` /
  ``ws_`` ids of 51-53, proxy-made ids of 83: vercel/ai#8132, openclaw/openclaw#875), so 256
  is the gateway's own bound for "longer than any upstream allows", with room to spare.
"""

from __future__ import annotations

import re
import unicodedata

import orjson

from gateway.errors import InvalidRequest

MAX_CALL_ID_CHARS = 256
"""The longest tool-call id (characters) the gateway takes from a client."""

_PLAIN = re.compile(rf"(?=[\x20-\x7e]*[\x21-\x7e])[\x20-\x7e]{{1,{MAX_CALL_ID_CHARS}}}")
"""Printable ASCII, not blank, within the bound: the common case, one C call."""

_CONTROL = frozenset({"Cc", "Zl", "Zp"})

plain_call_id = _PLAIN.fullmatch
"""Not None for the common id (printable ASCII, not blank, within the bound), which every
upstream takes: the one C call the edges make per id before :func:`unusable_call_id`."""


def unusable_call_id(value: str) -> str | None:
    """Why ``value`` cannot be a tool-call id for any upstream (a phrase for the error
    message: ``"is empty"``, ``"is whitespace only"``, ``"holds control character U+000A"``,
    ``"is 300 characters long (at most 256)"``), or None when some upstream takes it, possibly
    after its deterministic rewrite."""
    if plain_call_id(value) is not None:
        return None
    if not value:
        return "is empty"
    if not value.strip():
        return "is whitespace only"
    for ch in value:
        if unicodedata.category(ch) in _CONTROL:
            return f"holds control character U+{ord(ch):04X}"
    if len(value) > MAX_CALL_ID_CHARS:
        return f"is {len(value)} characters long (at most {MAX_CALL_ID_CHARS})"
    return None


class BadIds:
    """The tool-call ids of one request that no upstream accepts, noted while an edge parses
    it (``problems``: ``(location, id, reason)`` in request order) and refused together after
    the messages are read (:func:`refusal`). Each edge's parse state derives from it."""

    __slots__ = ("bad_ids",)

    def __init__(self) -> None:
        self.bad_ids: list[tuple[str, str, str]] = []

    def check_id(self, call_id: str, location: str) -> None:
        """Note ``call_id`` (at ``location``) when no upstream accepts it (callers test
        :func:`plain_call_id` first: the common id needs no call)."""
        reason = unusable_call_id(call_id)
        if reason is not None:
            self.bad_ids.append((location, call_id, reason))


def refusal(problems: list[tuple[str, str, str]]) -> InvalidRequest:
    """The HTTP 400 for ``problems``: ``(location, id, reason)`` in request order, e.g.
    ``("messages[1].tool_calls[0].id", "", "is empty")``. The message names every location;
    ``param`` is the first; ``details`` lists ``{"location", "id", "reason"}`` (an id longer
    than 64 characters is shown by its first 64)."""
    parts = []
    details = []
    for location, value, reason in problems:
        shown = value if len(value) <= 64 else value[:64] + "..."
        parts.append(f"{location}: the tool-call id {orjson.dumps(shown).decode()} {reason}")
        details.append({"location": location, "id": shown, "reason": reason})
    message = (
        "; ".join(parts) + "; no upstream accepts such a tool-call id (send the id the call was made with)"
    )
    return InvalidRequest(message, param=problems[0][0], details=details)


__all__ = ["MAX_CALL_ID_CHARS", "BadIds", "plain_call_id", "refusal", "unusable_call_id"]
