"""A scripted model for end-to-end runs of real agents (Codex CLI, Gemini CLI, the OpenAI Agents
SDK) through the gateway: the upstream stand-in (:mod:`standins.upstream`, OpenAI Chat
Completions wire API) answering each request from what it holds, not from a queue.

The rule, applied to every ``POST /v1/chat/completions`` the gateway sends:

1. A structured-output request (``response_format`` ``json_schema``: the agents' side requests,
   such as Gemini CLI's model-routing classifier) gets the smallest object its schema allows.
2. The request ends with tool results (after its last assistant message): the answer is a final
   text quoting the results' line that holds :data:`MARKER` (or their first line when none
   does, so a failed tool shows in the agent's output): ``The note says: <line>``.
3. Else, in a conversation without tool results yet, a request offering one of the tools in
   :data:`TOOL_CALLS` (the agent's own tools, by name, bare or namespaced) is answered with one
   call of the first such tool, reading :data:`NOTE_FILE` in the agent's working directory
   (for Codex's code-mode ``exec`` tool: JavaScript that runs ``cat note.txt``).
4. Anything else (title generation, a later turn) gets a short text.

Answers are streamed when the request streams. Every request is kept in
:attr:`AgentUpstream.received` (the :class:`standins.upstream.Received` records), and which
rule answered it in :attr:`AgentUpstream.answered`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .tool_answers import Call, text_answer, tool_call_answer
from .upstream import OPENAI, Received, UpstreamStandin, replay

NOTE_FILE = "note.txt"
MARKER = "turnstile-e2e-marker-7Q4X"
NOTE_TEXT = f"The launch code is {MARKER}.\n"

# Codex CLI's code mode (its default model's `tool_mode = "code_mode_only"`): the one tool is the
# custom tool `exec`, whose free-form input is JavaScript calling Codex's nested tools.
EXEC_JS = f'text(await tools.exec_command({{cmd: "cat {NOTE_FILE}"}}));'


def _one_string(schema: dict[str, Any], value: str) -> dict[str, Any]:
    """``{<the tool's one string parameter>: value}``: a custom (free-form) tool as a Chat
    Completions upstream sees it, a function with one string argument."""
    props = schema.get("properties") or {}
    strings = [k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "string"]
    return {strings[0] if len(strings) == 1 else "input": value}


# Tool name -> arguments reading NOTE_FILE (from the tool's parameter schema), in order of
# preference. Names and argument shapes are those the pinned agents declare
# (tests/fixtures/e2e/*.json hold their requests).
TOOL_CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "read_note": lambda _: {},  # the OpenAI Agents SDK test's own @function_tool
    "exec": lambda schema: _one_string(schema, EXEC_JS),  # Codex CLI 0.171, code mode (default model)
    "exec_command": lambda _: {"cmd": f"cat {NOTE_FILE}"},  # Codex CLI 0.171, other models
    "shell_command": lambda _: {"command": f"cat {NOTE_FILE}"},  # Codex CLI, shell_command tool type
    "shell": lambda _: {"command": ["cat", NOTE_FILE]},  # Codex CLI, classic shell tool
    "read_file": lambda _: {"file_path": NOTE_FILE},  # Gemini CLI 0.61
    "run_shell_command": lambda _: {"command": f"cat {NOTE_FILE}"},  # Gemini CLI 0.61
}
NAMESPACE_SEPARATORS = (".", "__", "/", ":")  # how an edge may flatten a namespaced tool's name


_CUSTOM_INPUT = {"type": "object", "properties": {"input": {"type": "string"}}}
"""A Chat ``custom`` tool's free-form input, as the one string argument its call carries here."""


def offered_tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The request's function tools: name -> parameter schema; a Chat ``custom`` tool (free-form
    input, which Chat Completions has too) as a function with one string argument ``input``."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            tools[fn["name"]] = params if isinstance(params, dict) else {}
        custom = tool.get("custom") if isinstance(tool, dict) else None
        if isinstance(custom, dict) and isinstance(custom.get("name"), str):
            tools[custom["name"]] = _CUSTOM_INPUT
    return tools


def names_tool(name: str, key: str) -> bool:
    """``name`` (as offered or called) is the tool ``key`` of :data:`TOOL_CALLS`, bare or
    namespaced (``functions.exec`` names ``exec``)."""
    return name == key or any(name.endswith(sep + key) for sep in NAMESPACE_SEPARATORS)


def pick_tool(offered: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
    """``(offered name, TOOL_CALLS key)`` of the first known tool offered, by bare name or by a
    namespaced one (``functions.exec``)."""
    for key in TOOL_CALLS:
        for name in offered:
            if names_tool(name, key):
                return name, key
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def quote(result: str) -> str:
    """The final answer for a tool result: the line holding :data:`MARKER`, else the first."""
    lines = [ln.strip() for ln in result.splitlines() if ln.strip()]
    hit = next((ln for ln in lines if MARKER in ln), lines[0] if lines else "(empty tool result)")
    return f"The note says: {hit}"


def smallest_instance(schema: Any) -> Any:
    """The smallest value of a JSON schema (required properties only, minimum numbers, the first
    enum value); ``type`` may be upper case, as Gemini's ``Schema`` writes it."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: smallest_instance(props.get(k)) for k in schema.get("required") or list(props)}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "simple"


class AgentUpstream(UpstreamStandin):
    """:class:`UpstreamStandin` that answers OpenAI Chat Completions requests by the rule in
    the module docstring. ``answered`` lists ``(rule, detail)`` per request, in arrival order:
    ``("tool_call", name)``, ``("final", text)`` or ``("side", kind)``."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: list[tuple[str, str]] = []
        self.on_request = self._answer

    def _answer(self, rec: Received) -> None:
        # Runs in the stand-in's loop between reading the request and taking an answer from
        # the queue, with no await in between: the answer queued here is the one taken.
        if rec.api != OPENAI or not isinstance(rec.body, dict):
            return  # no answer queued: the stand-in's 418 names the request
        body = rec.body
        stream = bool(body.get("stream"))
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            self._reply(("side", "structured"), json.dumps(smallest_instance(schema)), stream)
            return
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last_answer = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        results = [m for m in messages[last_answer + 1 :] if m.get("role") == "tool"]
        if last_answer >= 0 and results:
            text = quote("\n".join(_text_of(m.get("content")) for m in results))
            self._reply(("final", text), text, stream)
            return
        offered = offered_tools(body)
        picked = pick_tool(offered)
        if picked is not None and not any(m.get("role") == "tool" for m in messages):
            name, key = picked
            args = TOOL_CALLS[key](offered[name])
            call = Call(id=f"call_e2e_{len(self.answered)}", name=name, raw=json.dumps(args))
            self.answered.append(("tool_call", name))
            self.script(replay(tool_call_answer(OPENAI, [call], stream=stream), api=OPENAI))
            return
        self._reply(("side", f"text (tools offered: {sorted(offered)})"), "Reading the note.", stream)

    def _reply(self, note: tuple[str, str], text: str, stream: bool) -> None:
        self.answered.append(note)
        self.script(replay(text_answer(OPENAI, text, stream=stream), api=OPENAI))

    def completed_loops(self) -> list[tuple[str, str]]:
        """``(tool name, final text)`` for each tool call this stand-in issued that a later
        request answered with the call's result (a completed tool loop each)."""
        loops, pending = [], None
        for rule, detail in self.answered:
            if rule == "tool_call":
                pending = detail
            elif rule == "final" and pending is not None:
                loops.append((pending, detail))
                pending = None
        return loops
