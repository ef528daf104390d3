"""Replay of recorded provider exchanges: each recorded answer through its adapter and out
through every client dialect.

For one exchange: the wire API comes from the reader, the URL or the content; APIs with no
adapter (Gemini interactions, Bedrock, embeddings, stored OpenAI responses ...) are reported
as unsupported.
The recorded request, when it is a client-dialect body (OpenAI Chat, Anthropic Messages,
OpenAI Responses or Gemini histories, often multi-turn), goes through the edge, the guards
(findings) and the round trip like a conversation turn. The recorded answer goes through the wire module
(``parse_response`` or ``new_stream_parser``) and the truncation guard, then is rendered to
each client dialect, streamed and not; the client-visible meaning is compared with the
meaning read independently from the recording (:mod:`gateway.providers.recorded.meaning`).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway import invariants
from gateway.config import Deployment
from gateway.edges import get_dialect
from gateway.errors import GuardViolation, InvalidRequest, UnknownStopReason, UpstreamError
from gateway.providers import anthropic_messages, gemini, openai_chat, openai_responses
from gateway.providers.recorded import meaning as mn
from gateway.providers.recorded import meaning_responses as mr
from gateway.providers.recorded import readers
from gateway.providers.sse import decode_all
from gateway.providers.wire import CallContext
from gateway.replay import clientview
from gateway.replay.conversations import STRICT
from gateway.replay.records import Exchange
from gateway.replay.report import Report
from gateway.replay.roundtrip import record_round_trip
from gateway.schema import Request, Response, TextPart, UserMessage

WIRES = {
    "openai_chat": openai_chat,
    "anthropic_messages": anthropic_messages,
    "gemini": gemini,
    "openai_responses": openai_responses,
}


def _stream_objects(body: bytes) -> list[Any]:
    out = []
    for _, data in decode_all(body):
        text = data.strip()
        if not text or text == b"[DONE]":
            continue
        try:
            out.append(orjson.loads(text))
        except orjson.JSONDecodeError:
            continue
    return out


def _api(ex: Exchange) -> tuple[str | None, str]:
    if ex.api:
        return ex.api, ""
    if ex.url:
        return readers.api_of_url(ex.url)
    if ex.stream:
        objs = _stream_objects(ex.body)
        api = readers.sniff_stream_api(objs[0]) if objs else None
        if api is None and objs and isinstance(objs[0], dict):
            kind = objs[0].get("type") or objs[0].get("object") or objs[0].get("event_type") or "unknown"
            known = {
                "message-start": "Cohere chat API stream",
                "text_completion": "legacy OpenAI completions stream",
                "interaction.created": "Gemini interactions API stream",
            }
            return None, known.get(str(kind), f"stream of {kind} events")
        return api, "" if api else "empty or unrecognised stream"
    try:
        api = readers.sniff_body_api(orjson.loads(ex.body))
    except orjson.JSONDecodeError:
        return None, "body is not JSON"
    return api, "" if api else "unrecognised response body"


def _server_tools(ex: Exchange) -> str | None:
    """The server-side tool an answer carries (Anthropic ``server_tool_use``,
    ``*_tool_result``, ``tool_reference``, programmatic calls from code execution, context
    ``compaction`` (usage then has per-iteration counts); Gemini
    ``executableCode`` / ``codeExecutionResult``), or None."""
    body = ex.body.replace(b" ", b"")
    for marker, name in (
        (b'"type":"server_tool_use"', "server_tool_use"),
        (b'_tool_result"', "*_tool_result"),
        (b'"type":"tool_reference"', "tool_reference"),
        (b'"caller":{"type":"code_execution', "programmatic tool calling"),
        (b'"type":"compaction"', "server-side compaction"),
        (b'"executableCode"', "executableCode"),
        (b'"codeExecutionResult"', "codeExecutionResult"),
    ):
        if marker in body:
            return name
    return None


_HISTORY = {
    "openai_chat": "messages",
    "anthropic_messages": "messages",
    "openai_responses": "input",
    "gemini": "contents",
}
"""The top-level key of each client dialect's conversation history: a recorded request that
has it goes through that dialect's edge."""


def _background(ex: Exchange) -> bool:
    """A background-mode Responses exchange (``background: true`` asked, or an answer still
    ``queued`` / ``in_progress``): the answer is polled for later, which the edge refuses."""
    if isinstance(ex.request, dict) and ex.request.get("background") is True:
        return True
    if ex.stream:
        return False
    try:
        obj = orjson.loads(ex.body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("status") in ("queued", "in_progress")


class RecordingReplayer:
    """Replays exchanges into a report; request findings and diffs are reported once per file."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.seen: dict[str, set[tuple[str, ...]]] = {}

    def replay(self, ex: Exchange) -> None:
        """Replay one exchange (see module docstring)."""
        rep = self.report
        where = ex.name
        api, why = _api(ex)
        if api is None:
            rep.unsupported.append({"file": ex.source, "where": where, "reason": why})
            return
        if api == "openai_responses" and _background(ex):
            rep.unsupported.append(
                {
                    "file": ex.source,
                    "where": where,
                    "reason": "OpenAI Responses background mode (refused by the edge)",
                }
            )
            return
        server = _server_tools(ex)
        if server:
            rep.unsupported.append(
                {
                    "file": ex.source,
                    "where": where,
                    "reason": f"server-side tools ({server}): Turnstile never requests them",
                }
            )
            return
        rep.counts["exchanges"] += 1
        seen = self.seen.setdefault(ex.source, set())
        request = self._request(ex, api, where, seen)
        model = (
            str((ex.request or {}).get("model") or "recorded") if isinstance(ex.request, dict) else "recorded"
        )
        dep = Deployment(name="recorded", api=api, model=model)  # type: ignore[arg-type]
        wire = WIRES[api]
        if ex.status >= 400:
            wire.error_message(ex.status, ex.body)
            rep.counts["error_responses"] += 1
            return
        req = request or Request(model=model, messages=[UserMessage(content=[TextPart(text="recorded")])])
        ctx = CallContext(deployment=dep, request=req)
        try:
            resp, expected = self._answer(wire, api, ex, ctx)
        except UnknownStopReason as err:
            rep.finding("unknown_stop_reason", ex.source, where, None, err.message)
            return
        except UpstreamError as err:
            rep.finding("upstream_error_in_body", ex.source, where, None, err.message[:300])
            return
        for w in resp.withheld_tool_calls:
            rep.finding("truncated_tool_call", ex.source, where, w.id, f"{w.name}: {w.reason}")
        for dialect in clientview.CLIENT_DIALECTS:
            for got in clientview.render(dialect, resp, req):
                rep.counts["rendered"] += 1
                for facet, before, after, limit in clientview.compare(
                    expected,
                    got,
                    dialect,
                    exact_args=api == "openai_chat" and dialect == "openai_chat",
                    usage=True,
                    ids=api != "gemini",
                    withheld=tuple(w.id for w in resp.withheld_tool_calls),
                ):
                    if limit:
                        rep.limit(f"client:{dialect}", facet, limit, {"file": ex.source, "where": where})
                    else:
                        rep.loss(ex.source, where, f"client:{dialect}", facet, before, after)

    def _answer(self, wire: Any, api: str, ex: Exchange, ctx: CallContext) -> tuple[Response, mn.Meaning]:
        if ex.stream:
            self.report.counts["streams"] += 1
            parser = wire.new_stream_parser(ctx)
            events = []
            for name, data in decode_all(ex.body):
                events.extend(parser.feed(name, data))
            events.extend(parser.finish())
            guard = invariants.StreamTruncationGuard()
            guarded = [out for ev in events for out in guard.feed(ev)]
            resp = invariants.collect(guarded)
            objs = _stream_objects(ex.body)
            expected = (
                mn.openai_chunks(objs)
                if api == "openai_chat"
                else mn.anthropic_events(objs)
                if api == "anthropic_messages"
                else mr.responses_events(objs)
                if api == "openai_responses"
                else mn.gemini_chunks(objs)
            )
        elif api == "gemini" and ex.body.lstrip()[:1] == b"[":
            # streamGenerateContent without alt=sse answers one JSON array of chunks
            self.report.counts["streams"] += 1
            objs = orjson.loads(ex.body)
            parser = wire.new_stream_parser(ctx)
            events = [e for o in objs for e in parser.feed_obj(o)] + parser.finish()
            guard = invariants.StreamTruncationGuard()
            resp = invariants.collect([out for ev in events for out in guard.feed(ev)])
            expected = mn.gemini_chunks(objs)
        else:
            resp = invariants.check_truncation(wire.parse_response(ex.body, ctx))
            obj = orjson.loads(ex.body)
            expected = (
                mn.openai_body(obj)
                if api == "openai_chat"
                else mn.anthropic_body(obj)
                if api == "anthropic_messages"
                else mr.responses_body(obj)
                if api == "openai_responses"
                else mn.gemini_chunks([obj])
            )
        return resp, expected

    def _request(self, ex: Exchange, api: str, where: str, seen: set[tuple[str, ...]]) -> Request | None:
        key: tuple[str, ...]
        history = _HISTORY.get(api)
        if (
            history is None
            or not isinstance(ex.request, dict)
            or not isinstance(ex.request.get(history), list)
        ):
            return None
        rep = self.report
        rep.counts["requests"] += 1
        body = {k: v for k, v in ex.request.items() if k not in ("stream", "stream_options")}
        try:
            if api == "gemini":  # the model and the stream flag are in the URL
                model = (
                    ex.url.split("/models/", 1)[-1].rsplit(":", 1)[0] if "/models/" in ex.url else "recorded"
                )
                request = get_dialect(api).parse_request(orjson.dumps(body), model=model, stream=ex.stream)
            else:
                request = get_dialect(api).parse_request(orjson.dumps(body))
        except InvalidRequest as err:
            key = ("invalid_request", err.message)
            if key not in seen:
                seen.add(key)
                kind = "edge_unsupported" if "not supported yet" in err.message else "invalid_request"
                rep.finding(kind, ex.source, where, None, err.message[:300])
            return None
        try:
            invariants.check_request(request, STRICT)
        except GuardViolation as err:
            for p in err.problems:
                key = (p.code, p.id)
                if key not in seen:
                    seen.add(key)
                    rep.finding(p.code, ex.source, where, p.id, p.message)
        record_round_trip(rep, request, ex.source, where, seen)
        return request
