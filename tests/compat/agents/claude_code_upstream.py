"""A scripted Claude for Claude Code headless runs through the gateway: the upstream stand-in
(:class:`standins.upstream.UpstreamStandin`, Anthropic Messages wire API, streamed and whole)
answering each request from what it holds, not from a queue, and enforcing the real API's tool
rules (:mod:`compat.agents.claude_code_rules`) besides the stand-in's own.

The rule, applied to every ``POST /v1/messages`` the gateway sends:

1. A request declaring the web search server tool (``web_search_<date>``: Claude Code's
   ``WebSearch`` tool asks the API to search) is answered as the API does: a
   ``server_tool_use`` block calling ``web_search``, its ``web_search_tool_result`` (one result
   whose title holds :data:`SEARCH_MARKER`, at :data:`SEARCH_URL`) and a text.
2. A request without client tools (a side request) gets a short text.
3. Else the conversation's scenario is read from the user's prompt (:data:`PROMPTS`); its
   :data:`PLANS` entry lists the tool calls the model makes in order, one per answer, the next
   once the previous one's ``tool_result`` is in the conversation. A deferred tool
   (``defer_loading``) is called only once a ``tool_reference`` to it came back in a tool result,
   as the real model can; a step the request does not let the model take is answered with a
   text saying so (the test then fails naming it). When every step is done the answer is a text
   quoting the last tool result's line holding a marker (:data:`MARKER`, :data:`SEARCH_MARKER`),
   else its first line.

With thinking on (``thinking.type`` ``enabled``/``adaptive``) every answer starts with a signed
``thinking`` block (empty text when ``display`` is ``omitted``), as the API's tool-loop rule
requires of the turn echoed back. Which rule answered each request is in :attr:`answered`.

A Chat Completions request (Claude Code routed to an OpenAI upstream by the gateway) gets the
plain scenario's answer, or a short text.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from aiohttp import web
from standins.agent_upstream import MARKER, NOTE_FILE
from standins.recordings import Exchange, json_exchange, stream_exchange
from standins.tool_answers import text_answer
from standins.upstream import ANTHROPIC, OPENAI, Received, UpstreamStandin, answering

from .claude_code_rules import violation

SEARCH_MARKER = "turnstile-search-marker-5KW2"
SEARCH_URL = "https://turnstile.example/compat-search"
SEARCH_TITLE = f"Turnstile gateway: {SEARCH_MARKER}"
PLAIN_ANSWER = "Hello from the scripted Claude."
PROMPTS = {
    "plain": "Say hello.",
    "read": f"Read {NOTE_FILE} and tell me what it says.",
    "tool-search": "List my scheduled cron jobs.",
    "web-search": "Search the web for the Turnstile gateway.",
}
"""Scenario -> the prompt Claude Code is run with (how the model tells the scenarios apart)."""
SEARCH_QUERY = "Turnstile gateway"
FOUND_TOOL = "CronList"
"""The deferred tool the tool-search scenario loads and calls (read-only, no arguments)."""


def plans(workspace: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Scenario -> the tool calls the model makes, in order (``(tool name, input)``)."""
    return {
        "plain": [],
        "read": [("Read", {"file_path": str(workspace / NOTE_FILE)})],
        "tool-search": [("ToolSearch", {"query": f"select:{FOUND_TOOL}"}), (FOUND_TOOL, {})],
        "web-search": [("ToolSearch", {"query": "select:WebSearch"}), ("WebSearch", {"query": SEARCH_QUERY})],
    }


# ------------------------------------------------------------------------------------ answers


def message_answer(
    blocks: list[dict[str, Any]], *, stop: str, stream: bool, model: str, usage: dict[str, Any] | None = None
) -> Exchange:
    """An Anthropic Messages answer holding ``blocks`` (``thinking``, ``text``, ``tool_use``,
    ``server_tool_use``, ``*_tool_result``), whole or as the API's SSE event sequence (a
    ``thinking`` block streamed as ``thinking_delta`` + ``signature_delta``, tool inputs as one
    ``input_json_delta``, result blocks whole in ``content_block_start``)."""
    usage = {"input_tokens": 20, "output_tokens": 10, **(usage or {})}
    message = {"id": "msg_cc_scripted", "type": "message", "role": "assistant", "model": model}
    if not stream:
        return json_exchange(
            {**message, "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        )
    start_usage = {"input_tokens": usage["input_tokens"], "output_tokens": 1}
    events: list[dict[str, Any]] = [
        _event(
            "message_start",
            message={
                **message,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        )
    ]
    for i, block in enumerate(blocks):
        kind = block["type"]
        if kind == "thinking":
            events.append(
                _event(
                    "content_block_start", index=i, content_block={**block, "thinking": "", "signature": ""}
                )
            )
            if block["thinking"]:
                events.append(_delta(i, type="thinking_delta", thinking=block["thinking"]))
            events.append(_delta(i, type="signature_delta", signature=block["signature"]))
        elif kind == "text":
            events.append(_event("content_block_start", index=i, content_block={"type": "text", "text": ""}))
            events.append(_delta(i, type="text_delta", text=block["text"]))
        elif kind in ("tool_use", "server_tool_use"):
            events.append(_event("content_block_start", index=i, content_block={**block, "input": {}}))
            events.append(_delta(i, type="input_json_delta", partial_json=json.dumps(block["input"])))
        else:
            events.append(_event("content_block_start", index=i, content_block=block))
        events.append(_event("content_block_stop", index=i))
    end_usage = {k: v for k, v in usage.items() if k != "input_tokens"}
    events.append(
        _event("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=end_usage)
    )
    events.append(_event("message_stop"))
    return stream_exchange(ANTHROPIC, events)


def _event(kind: str, **data: Any) -> dict[str, Any]:
    return {"event": kind, "data": {"type": kind, **data}}


def _delta(index: int, **delta: Any) -> dict[str, Any]:
    return _event("content_block_delta", index=index, delta=delta)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(b.get("text") or b.get("content")) for b in content if isinstance(b, dict))
    return ""


def quote(result: str) -> str:
    """The line of ``result`` holding a marker, else its first line."""
    lines = [ln.strip() for ln in result.splitlines() if ln.strip()]
    hit = [ln for ln in lines if MARKER in ln or SEARCH_MARKER in ln]
    return (hit or lines or ["(empty tool result)"])[0]


def user_text(body: dict[str, Any]) -> str:
    """Every text of the request's user messages, joined."""
    msgs = body.get("messages") or []
    return "\n".join(_text(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") == "user")


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's ``tool_result`` blocks, in conversation order."""
    out = []
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        out += [b for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_result"]
    return out


def referenced(body: dict[str, Any]) -> set[str]:
    """Tool names loaded by ``tool_reference`` blocks in the request's tool results."""
    return {
        str(ref.get("tool_name"))
        for r in tool_results(body)
        for ref in (r.get("content") if isinstance(r.get("content"), list) else [])
        if isinstance(ref, dict) and ref.get("type") == "tool_reference"
    }


# ------------------------------------------------------------------------------------ model


class ClaudeCodeUpstream(UpstreamStandin):
    """:class:`UpstreamStandin` answering Anthropic Messages requests by the rule in the module
    docstring. ``answered`` lists ``(model, rule, detail)`` per request, in arrival order:
    rule ``tool_use``, ``final``, ``web_search``, ``side``, ``stuck`` or ``refused``."""

    def __init__(self, workspace: Path) -> None:
        super().__init__()
        self.plans = plans(workspace)
        self.answered: list[tuple[str, str, str]] = []
        self._ids = itertools.count(1)
        self.on_request = self._answer

    def restart(self, workspace: Path) -> None:
        """Forget everything (:meth:`reset`, :attr:`answered`) and script the scenarios for
        ``workspace``."""
        self.reset()
        self.answered.clear()
        self.plans = plans(workspace)

    def _check(self, rec: Received, body: Any) -> web.Response | None:
        bad = super()._check(rec, body)
        if bad is None and rec.api == ANTHROPIC:
            refused = violation(body)
            if refused is not None:
                bad = self._fail(rec.api, 400, refused)
        if bad is not None:
            # The answer queued for this request (the only one queued: requests are answered
            # between reading and taking with no await in between) is not taken.
            with self._lock:
                self._queue.clear()
            self.answered.append((rec.model, "refused", bad.text or ""))
        return bad

    def _answer(self, rec: Received) -> None:
        # Runs between reading the request and taking an answer, with no await in between.
        if rec.api == OPENAI and isinstance(rec.body, dict):
            self._answer_openai(rec)
            return
        if rec.api != ANTHROPIC or not isinstance(rec.body, dict):
            return  # nothing queued: the stand-in's 418 names the request
        body = rec.body
        blocks, stop, rule, detail, usage = self._decide(body)
        if _thinking_on(body):
            display = (body.get("thinking") or {}).get("display")
            thought = "" if display == "omitted" else "Following the script."
            blocks = [
                {"type": "thinking", "thinking": thought, "signature": f"sig-cc-{next(self._ids)}"},
                *blocks,
            ]
        self.answered.append((rec.model, rule, detail))
        model = rec.model
        self.script(
            answering(
                lambda _api, _body, stream: message_answer(
                    blocks, stop=stop, stream=stream, model=model, usage=usage
                ),
                api=ANTHROPIC,
            )
        )

    def _answer_openai(self, rec: Received) -> None:
        """A Chat Completions request (Claude Code routed to an OpenAI upstream): the plain
        scenario's answer, else a short text (no tool loop is scripted on this wire API)."""
        plain = PROMPTS["plain"] in json.dumps(rec.body.get("messages"))
        text = PLAIN_ANSWER if plain else "OK."
        self.answered.append((rec.model, "final" if plain else "side", text))
        self.script(
            answering(
                lambda api, _body, stream: text_answer(api, text, stream=stream), api=OPENAI, model=rec.model
            )
        )

    def _decide(
        self, body: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], str, str, str, dict[str, Any] | None]:
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        search = next((t for t in tools if str(t.get("type", "")).startswith("web_search_")), None)
        if search is not None:
            return self._web_search(body, search)
        client_tools = {str(t.get("name")): t for t in tools if t.get("type") in (None, "custom")}
        scenario = next((s for s, p in PROMPTS.items() if p in user_text(body)), None)
        if not client_tools or scenario is None:
            return [{"type": "text", "text": "OK."}], "end_turn", "side", f"scenario {scenario}", None
        plan = self.plans[scenario]
        results = tool_results(body)
        if len(results) < len(plan):
            name, args = plan[len(results)]
            tool = client_tools.get(name)
            loaded = tool is not None and (tool.get("defer_loading") is not True or name in referenced(body))
            if not loaded:
                text = f"I cannot call {name}: the request does not offer it loaded."
                return [{"type": "text", "text": text}], "end_turn", "stuck", name, None
            call = {"type": "tool_use", "id": f"toolu_cc_{next(self._ids):02d}", "name": name, "input": args}
            return [call], "tool_use", "tool_use", name, None
        text = PLAIN_ANSWER if not plan else f"The result says: {quote(_text(results[-1].get('content')))}"
        return [{"type": "text", "text": text}], "end_turn", "final", text, None

    def _web_search(
        self, body: dict[str, Any], tool: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], str, str, str, dict[str, Any] | None]:
        text = user_text(body)
        query = SEARCH_QUERY if SEARCH_QUERY in text else text.strip().splitlines()[-1][:100]
        call_id = f"srvtoolu_cc_{next(self._ids):02d}"
        result = {
            "type": "web_search_result",
            "title": SEARCH_TITLE,
            "url": SEARCH_URL,
            "encrypted_content": "enc-cc-search-result-0001",
            "page_age": "December 1, 2026",
        }
        blocks = [
            {
                "type": "server_tool_use",
                "id": call_id,
                "name": str(tool.get("name")),
                "input": {"query": query},
            },
            {"type": "web_search_tool_result", "tool_use_id": call_id, "content": [result]},
            {"type": "text", "text": f"The Turnstile gateway is described at {SEARCH_URL} ({SEARCH_TITLE})."},
        ]
        usage = {"server_tool_use": {"web_search_requests": 1}}
        return blocks, "end_turn", "web_search", query, usage


def _thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
