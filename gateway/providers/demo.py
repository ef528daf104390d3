"""The built-in ``demo`` deployment: a deterministic local stand-in for a model.

It lets the embedded default configuration serve with no API key and no network, so every
client scenario (a tool loop, parallel tool calls, structured output, streaming) can be tried
against it. It is labelled as a stand-in in ``GET /v1/models`` and in every text answer. The
same request always gets the same answer (no randomness; ids are a hash of the request).

What it answers, by the request's last messages:

* **Tool results** after the last assistant message (the client ran the tools): a final text
  answer that quotes each result, by tool name, in order (``get_weather returned "Sunny"``;
  an error result ``failed with "..."``). It never calls a tool again in that turn, whatever
  ``tool_choice`` says, so a client's tool loop always ends.
* **A user message, tools offered** and ``tool_choice`` not ``none``: tool calls, when
  - ``tool_choice`` names a tool: one call of it;
  - else the user text is split into clauses at ``and``, ``;`` and line breaks. A clause
    *names* a tool when it contains the tool's name as a word (case-insensitive), or one of
    its words (4+ letters, a trailing ``s`` ignored, common words such as ``what``/``please``
    left out) is a word of the tool's name (split at ``_``, ``-``, ``.`` and camelCase). A clause calls
    every tool it names; naming none, it calls the one tool whose description shares the most
    5+ letter words with it (the first offered on a tie; only when at most
    :data:`DESCRIPTION_MATCH_MAX_TOOLS` tools are offered, so an agent's shell or file tools are
    never called on a description match). A clause of at most three words that
    matches nothing continues the previous clause's tools (``weather in Paris and in Tokyo``
    gives two ``get_weather`` calls). Several calls in one turn are
    parallel tool calls (at most :data:`MAX_CALLS`); ``parallel_tool_calls: false`` (any
    dialect's equivalent) keeps only the first;
  - else, with ``tool_choice`` ``required``, one call of the first tool;
  - else no tool call: the text answer below.
  A call's arguments are :func:`gateway.providers.demo_instance.minimal_instance` of the tool's
  input schema, so they validate against it (a schema that is not an object gives ``{"input":
  <value>}``), with the clause as the value of plain strings, less the words that matched the
  tool and the filler around them (``What's the weather in Paris`` gives ``Paris``; the whole
  clause when nothing is left).
* **Otherwise** a fixed sentence quoting the user's last message.

A JSON ``response_format`` makes any text answer JSON instead: for ``json_schema`` a minimal
instance that validates against the schema, for ``json_object`` ``{"answer": <the sentence>}``.
A text answer ends before the first of the request's ``stop`` sequences it contains (stop
reason ``stop``, the sequence left out, as the chat APIs do).

Usage counts real ``cl100k_base`` tokens (:mod:`gateway.providers.demo_tokens`): input is the
messages' text, tool calls' arguments, tool results and the tool definitions, plus a few tokens
per message and tool as chat APIs add; output is the answer's text and tool-call arguments.
Usage is marked ``estimated``. ``max_output_tokens`` (else the deployment's, else 4096) bounds
the output: an answer that would exceed it is cut at the budget and reported with stop reason
``length`` (a cut tool call keeps its cut arguments and later calls are dropped, which
exercises the truncation guard). Streamed, the same answer arrives as text and tool-call
argument deltas of :data:`CHUNK_CHARS` characters, one part after another.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator

import orjson

from gateway.config import Deployment
from gateway.providers import demo_tokens
from gateway.providers.base import Provider
from gateway.providers.demo_instance import minimal_instance
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Message,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    Response,
    StopReason,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)

LABEL = "[turnstile demo deployment]"
MAX_CALLS = 8
"""Tool calls in one turn at most."""
CHUNK_CHARS = 8
"""Characters per streamed text or argument delta."""
IMAGE_TOKENS = 85
"""Input tokens counted per image (OpenAI's low-detail image cost)."""
QUOTE_CHARS = 300
"""Characters of each tool result quoted in the final answer."""

_CLAUSES = re.compile(r"\s+and\s+|;|\n", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_COMMON = frozenset(
    {
        *("what", "when", "where", "which", "with", "from", "that", "this", "these", "those"),
        *("there", "their", "them", "then", "than", "your", "have", "into", "about", "some"),
        *("only", "also", "more", "does", "tell", "please", "give", "using", "want", "would"),
        *("could", "should", "need", "call", "tool", "tools", "make", "show", "find"),
    }
)

_FILLER = frozenset(
    {
        *("what's", "what", "whats", "is", "are", "the", "a", "an", "in", "at", "of", "for", "me"),
        *("please", "get", "show", "tell", "use", "call", "with", "to", "on", "now", "current"),
    }
)


def _stem(word: str) -> str:
    word = word.lower()
    return word[:-1] if len(word) > 4 and word.endswith("s") else word


def _clause_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORDS.findall(text) if len(w) >= 4} - _COMMON


def _name_words(tool: ToolDefinition) -> set[str]:
    return {_stem(w) for w in _WORDS.findall(_CAMEL.sub(" ", tool.name)) if len(w) >= 4} - _COMMON


def _description_words(tool: ToolDefinition) -> set[str]:
    return {_stem(w) for w in _WORDS.findall(tool.description or "") if len(w) >= 5} - _COMMON


def _says_name(name: str, clause: str) -> bool:
    """Whether ``clause`` contains ``name`` as a whole word (case-insensitive)."""
    return (
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", clause, re.IGNORECASE) is not None
    )


DESCRIPTION_MATCH_MAX_TOOLS = 8
"""Above this many offered tools (a coding agent's whole tool set), only a tool the user names
is called: a description match would make the demo call an agent's shell or file tools on
words that were never meant as a command."""


def _matching_tools(tools: list[ToolDefinition], clause: str) -> list[ToolDefinition]:
    """The tools ``clause`` names (by name or a word of it), else the one whose description
    shares the most words with it (the first offered on a tie), else none."""
    words = _clause_words(clause)
    named = [t for t in tools if _says_name(t.name, clause) or words & _name_words(t)]
    if named or len(tools) > DESCRIPTION_MATCH_MAX_TOOLS:
        return named
    best, score = None, 0
    for tool in tools:
        shared = len(words & _description_words(tool))
        if shared > score:
            best, score = tool, shared
    return [best] if best is not None else []


def _argument_text(tool: ToolDefinition, clause: str) -> str:
    """The words of ``clause`` that say what to call ``tool`` on: without the words that
    matched the tool and the filler words around them (``What's the weather in Paris`` gives
    ``Paris``); the whole clause when nothing is left."""
    tool_words = _name_words(tool) | _description_words(tool) | {tool.name.lower()}
    kept = [w for w in clause.split() if _stem(w.strip(",.?!:;\"'")) not in tool_words]
    while kept and kept[0].lower().strip(",.?!:;\"'") in _FILLER:
        kept.pop(0)
    while kept and kept[-1].lower().strip(",.?!:;\"'") in _FILLER:
        kept.pop()
    return " ".join(kept).strip(",.?!:;") or clause


def _planned_calls(request: Request, text: str) -> list[tuple[ToolDefinition, str]]:
    """The (tool, clause) pairs the demo calls for the user's ``text`` (module docstring)."""
    choice = request.tool_choice
    if not request.tools or (choice is not None and choice.mode == "none"):
        return []
    if choice is not None and choice.mode == "tool":
        named = [t for t in request.tools if t.name == choice.name]
        return [(named[0], text)] if named else []
    calls: list[tuple[ToolDefinition, str]] = []
    previous: list[ToolDefinition] = []
    for raw in _CLAUSES.split(text):
        clause = raw.strip(" ,.?!")
        if not clause:
            continue
        matched = _matching_tools(request.tools, clause)
        if not matched and len(clause.split()) <= 3:
            matched = previous
        previous = matched
        calls.extend((t, clause) for t in matched if (t, clause) not in calls)
    if not calls and choice is not None and choice.mode == "required":
        calls = [(request.tools[0], text)]
    if choice is not None and choice.parallel is False:
        calls = calls[:1]
    return calls[:MAX_CALLS]


def _part_text(part: object) -> str:
    if isinstance(part, TextPart | ThinkingPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return part.name + " " + part.raw_arguments
    return ""


def _input_tokens(request: Request) -> int:
    """Plausible prompt tokens: content tokens plus chat framing (4 per message, 3 to prime the
    answer, 8 per tool definition)."""
    total = 3
    for msg in request.messages:
        total += 4
        for part in msg.content:
            total += IMAGE_TOKENS if isinstance(part, ImagePart) else demo_tokens.count(_part_text(part))
    for tool in request.tools:
        schema = orjson.dumps(tool.parameters).decode()
        total += 8 + demo_tokens.count(f"{tool.name} {tool.description or ''} {schema}")
    return total


def _last_user_text(request: Request) -> str:
    for msg in reversed(request.messages):
        if isinstance(msg, UserMessage):
            return " ".join(p.text for p in msg.content if isinstance(p, TextPart)).strip()
    return ""


def _pending_results(messages: list[Message]) -> list[ToolResultMessage]:
    """The tool results after the last assistant message (the ones this answer is about)."""
    out: list[ToolResultMessage] = []
    for msg in reversed(messages):
        if isinstance(msg, AssistantMessage):
            break
        if isinstance(msg, ToolResultMessage):
            out.append(msg)
    return out[::-1]


def _quote_results(messages: list[Message], results: list[ToolResultMessage]) -> str:
    names = {c.id: c.name for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    quotes = []
    for r in results:
        body = " ".join(p.text if isinstance(p, TextPart) else "[image]" for p in r.content)
        body = body.strip()[:QUOTE_CHARS]
        name = r.name or names.get(r.tool_call_id, r.tool_call_id)
        verb = "failed with" if r.is_error else "returned"
        quotes.append(f'{name} {verb} "{body}"')
    return f"{LABEL} The tool results: " + "; ".join(quotes) + "."


def _structured(request: Request, reply: str) -> str:
    """``reply`` as the JSON the request's response format asks for (module docstring)."""
    fmt = request.response_format
    if fmt is None or fmt.type == "text":
        return reply
    if fmt.type == "json_object" or fmt.schema_ is None:
        return orjson.dumps({"answer": reply}).decode()
    return orjson.dumps(minimal_instance(fmt.schema_)).decode()


def _tool_call_parts(
    calls: list[tuple[ToolDefinition, str]], seed: str, budget: int
) -> tuple[list[ToolCallPart], StopReason]:
    parts: list[ToolCallPart] = []
    left = budget
    for i, (tool, clause) in enumerate(calls):
        value = minimal_instance(tool.parameters, _argument_text(tool, clause)[:200])
        raw = orjson.dumps(value if isinstance(value, dict) else {"input": value}).decode()
        spent = demo_tokens.count(raw)
        cut = spent > left
        if cut:
            raw = demo_tokens.cut(raw, left)
        try:
            args = orjson.loads(raw)
        except orjson.JSONDecodeError:
            args = {}
        call_id = f"call_demo_{seed[:16]}_{i}"
        parts.append(ToolCallPart(id=call_id, name=tool.name, arguments=args, raw_arguments=raw))
        if cut:
            return parts, "length"
        left -= spent
    return parts, "tool_use"


def answer(request: Request, deployment: Deployment) -> Response:
    """The demo model's deterministic answer to ``request`` (see module docstring)."""
    budget = request.max_output_tokens or deployment.max_output_tokens or 4096
    last = request.messages[-1] if request.messages else None
    text = _last_user_text(request)
    seed = hashlib.sha256(orjson.dumps(request.model_dump(mode="json"))).hexdigest()
    results = _pending_results(request.messages)
    calls = _planned_calls(request, text) if isinstance(last, UserMessage) and not results else []
    parts: list[TextPart | ToolCallPart] = []
    if calls:
        call_parts, stop = _tool_call_parts(calls, seed, budget)
        parts.extend(call_parts)
    else:
        if results:
            reply = _quote_results(request.messages, results)
        else:
            reply = f"{LABEL} This is a local stand-in, not a model. You said: {text[:500]}"
        reply = _structured(request, reply)
        stop = "stop"
        hits = [reply.find(seq) for seq in request.stop if seq and seq in reply]
        if hits:
            reply = reply[: min(hits)]
        if demo_tokens.count(reply) > budget:
            reply, stop = demo_tokens.cut(reply, budget), "length"
        parts.append(TextPart(text=reply))
    out = sum(demo_tokens.count(p.text if isinstance(p, TextPart) else p.raw_arguments) for p in parts)
    usage = Usage(input_tokens=_input_tokens(request), output_tokens=max(1, out), estimated=True)
    return Response(
        id=f"demo_{seed[:24]}",
        model=deployment.model,
        message=AssistantMessage(content=list(parts)),
        stop_reason=stop,
        usage=usage,
    )


def response_events(resp: Response, chunk_chars: int = CHUNK_CHARS) -> list[StreamEvent]:
    """A complete internal event stream that carries ``resp`` (text in ``chunk_chars`` pieces,
    tool-call arguments in pieces of the raw string, one part after another)."""
    events: list[StreamEvent] = [
        MessageStart(id=resp.id, model=resp.model, usage=Usage(input_tokens=resp.usage.input_tokens))
    ]
    for i, part in enumerate(resp.message.content):
        if isinstance(part, TextPart):
            events.append(PartStart(index=i, kind="text"))
            for k in range(0, len(part.text), chunk_chars):
                events.append(PartDelta(index=i, text=part.text[k : k + chunk_chars]))
        elif isinstance(part, ToolCallPart):
            events.append(PartStart(index=i, kind="tool_call", id=part.id, name=part.name))
            for k in range(0, len(part.raw_arguments), chunk_chars):
                events.append(PartDelta(index=i, arguments=part.raw_arguments[k : k + chunk_chars]))
        else:
            continue
        events.append(PartEnd(index=i))
    events.append(MessageEnd(stop_reason=resp.stop_reason, usage=resp.usage))
    return events


class DemoProvider(Provider):
    """Provider for ``api: demo`` deployments."""

    api = "demo"

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        """The demo answer (never raises for a well-formed request), made in a worker thread:
        tokenizing a long agent prompt, or building the encoder on first use (~0.3 s), does
        not hold the event loop."""
        return await asyncio.to_thread(answer, request, deployment)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        """The demo answer as internal stream events (made as in :meth:`complete`)."""
        for ev in response_events(await asyncio.to_thread(answer, request, deployment)):
            yield ev
