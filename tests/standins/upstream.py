"""A protocol-faithful upstream stand-in: a real aiohttp server on 127.0.0.1 (random port)
that answers like OpenAI, Anthropic and Gemini by replaying recorded provider traffic.

Endpoints (paths exactly as the providers serve them):

* ``POST /v1/chat/completions``                                  OpenAI Chat Completions
* ``POST /v1/responses``                                          OpenAI Responses
* ``POST /v1/messages``                                           Anthropic Messages
* ``POST /v1beta/models/{model}:generateContent``                 Gemini
* ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``   Gemini, streamed

What a real provider checks first is checked here too, with the provider's own error shape:
the API key header (``Authorization: Bearer``, ``x-api-key`` + ``anthropic-version``,
``x-goog-api-key`` or ``?key=``), a JSON object body, the model, Anthropic's required
``max_tokens``, Anthropic's structured-output schema rule
(:mod:`standins.structured_output`), Anthropic's extended-thinking rules (a tool loop's final
assistant turn starts with thinking when thinking is on; signatures only as this stand-in
issued them: :mod:`standins.anthropic_thinking_rule`), Gemini 3's thought signatures on the
function calls of the current turn (:mod:`standins.gemini_signature_rule`), Gemini's
``Schema`` rule (no unknown member at any depth of a function declaration's parameters or the
response schema:
:mod:`standins.gemini_schema_rule`), and the Responses API's rules (unknown parameters,
``function_call_output`` paired to an earlier ``function_call``, ``encrypted_content`` only as
this stand-in issued it for that model, strict function schemas: :mod:`standins.responses_rules`).

A test *scripts* the stand-in with :class:`Answer` objects (see the factory functions
:func:`replay`, :func:`http_error`, :func:`reset_mid_stream`, :func:`cut_before_stop`,
:func:`huge`, :func:`held`, :func:`structured_answer`): each request takes the first queued
answer whose ``api``/``model`` match. A request with no matching answer gets HTTP 418 naming
what was asked, so a missing script fails loudly. Every request is recorded
(:class:`Received`: parsed JSON body, headers, query) so a test can assert what went upstream,
and that nothing did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .anthropic_thinking_rule import Signatures
from .anthropic_thinking_rule import violation as thinking_violation
from .gemini_schema_rule import error_body as schema_error_body
from .gemini_schema_rule import one_of_violation, request_violations
from .gemini_signature_rule import violation as gemini_signature_violation
from .media_rule import media_violation
from .recordings import Exchange, split_sse
from .responses_rules import Issued
from .responses_rules import error as responses_error
from .responses_rules import violation as responses_violation
from .structured_output import anthropic_violations, structured

OPENAI = "openai_chat"
RESPONSES = "openai_responses"
ANTHROPIC = "anthropic_messages"
GEMINI = "gemini"


# ------------------------------------------------------------------------------------ script


class Gate:
    """Holds a scripted answer before its response headers until the test calls
    :meth:`release` (thread-safe) or ``timeout_s`` passes."""

    def __init__(self, timeout_s: float = 5.0) -> None:
        self.timeout_s = timeout_s
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._released = threading.Event()
        self.waited = threading.Event()

    async def wait(self) -> None:
        """Wait (in the stand-in's loop) until released or the bound passes."""
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        if self._released.is_set():
            return
        self.waited.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout=self.timeout_s)

    def release(self) -> None:
        """Let the held answer go (callable from any thread)."""
        self._released.set()
        if self._loop is not None and self._event is not None:
            self._loop.call_soon_threadsafe(self._event.set)


@dataclass
class Answer:
    """One scripted upstream answer.

    ``exchange`` is what is sent (status, content type, body bytes). ``api``/``model`` restrict
    which request takes it. ``fault`` is None (send everything), ``"reset"`` (send the first
    ``frames`` SSE frames, then abort the TCP connection) or ``"cut"`` (send the first
    ``frames`` frames, then end the body cleanly) or ``"huge"`` (``size`` bytes, see
    :func:`huge`). ``stream``, when set, restricts it to requests that stream (or do not).
    ``gate`` holds the answer before its
    headers (slow first byte). ``reset_gate`` (with ``"reset"``) holds the reset until the
    test has seen the frames arrive at the client, so the reset cannot overtake them."""

    exchange: Exchange
    api: str | None = None
    model: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    fault: str | None = None
    frames: int = 0
    gate: Gate | None = None
    reset_gate: Gate | None = None
    size: int = 0
    declare_length: bool = False
    stream: bool | None = None
    respond: Callable[[str, Any, bool], Exchange] | None = None

    def matches(self, api: str, model: str, stream: bool) -> bool:
        return (
            (self.api is None or self.api == api)
            and (self.model is None or self.model == model)
            and (self.stream is None or self.stream == stream)
        )


def replay(
    exchange: Exchange,
    *,
    api: str | None = None,
    model: str | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """Answer with a recorded exchange, byte for byte."""
    return Answer(exchange, api=api, model=model, headers=dict(headers or exchange.headers))


def http_error(
    status: int,
    body: Any,
    *,
    api: str | None = None,
    model: str | None = None,
    retry_after: str | None = None,
) -> Answer:
    """Answer with an error status. ``body`` is a recorded :class:`Exchange` (its body is
    used), bytes, or a JSON-able value; ``retry_after`` becomes the ``retry-after`` header."""
    if isinstance(body, Exchange):
        raw, ctype = body.body, body.content_type
    elif isinstance(body, bytes):
        raw, ctype = body, "application/json"
    else:
        raw, ctype = json.dumps(body).encode(), "application/json"
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    ex = Exchange(status=status, content_type=ctype, body=raw, stream=False, source="http_error")
    return Answer(ex, api=api, model=model, headers=headers)


def reset_mid_stream(
    exchange: Exchange,
    frames: int,
    *,
    api: str | None = None,
    model: str | None = None,
    gate: Gate | None = None,
) -> Answer:
    """Send the first ``frames`` SSE frames of a recorded stream, then reset the connection
    (TCP RST). With ``gate``, the reset waits until the gate is released (or times out): a
    test releases it once the client has received data, so the reset is truly mid-stream."""
    return Answer(exchange, api=api, model=model, fault="reset", frames=frames, reset_gate=gate)


def stop_frame_index(exchange: Exchange) -> int:
    """Index of the first SSE frame that carries the stream's stop information: Anthropic
    ``message_delta``/``message_stop``, an OpenAI chunk with a non-null ``finish_reason`` or
    ``[DONE]``, a Gemini chunk with ``finishReason``."""
    for i, frame in enumerate(exchange.sse_frames()):
        for line in frame.decode().splitlines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                return i
            try:
                data = json.loads(payload)
            except ValueError:
                continue
            if data.get("type") in ("message_delta", "message_stop"):
                return i
            if data.get("type") in ("response.completed", "response.incomplete", "response.failed"):
                return i
            if any(c.get("finish_reason") for c in data.get("choices") or []):
                return i
            if any(c.get("finishReason") for c in data.get("candidates") or []):
                return i
    raise ValueError(f"{exchange.source}: no stop frame found")


def cut_before_stop(exchange: Exchange, *, api: str | None = None, model: str | None = None) -> Answer:
    """Send a recorded stream up to (not including) its stop frame, then end the body
    cleanly: a stream cut off before the stop event."""
    return Answer(exchange, api=api, model=model, fault="cut", frames=stop_frame_index(exchange))


_TEXT_AT: dict[tuple[str, bool], tuple[str | int, ...]] = {
    ("openai_chat", False): ("choices", 0, "message", "content"),
    ("openai_chat", True): ("choices", 0, "delta", "content"),
    ("anthropic_messages", False): ("content", 0, "text"),
    ("anthropic_messages", True): ("delta", "text"),
    ("gemini", False): ("candidates", 0, "content", "parts", 0, "text"),
    ("gemini", True): ("candidates", 0, "content", "parts", 0, "text"),
}
"""Where a recorded answer of each wire API carries its text (a stream: in a text chunk)."""
_MARK = "\x00HUGE\x00"


def _has_text(obj: Any, path: tuple[str | int, ...]) -> bool:
    for key in path:
        if isinstance(key, int):
            if not isinstance(obj, list) or len(obj) <= key:
                return False
        elif not isinstance(obj, dict) or key not in obj:
            return False
        obj = obj[key]
    return isinstance(obj, str) and bool(obj)


def _set_text(obj: Any, path: tuple[str | int, ...]) -> Any:
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = _MARK
    return obj


def huge(
    exchange: Exchange, size: int, *, api: str, model: str | None = None, declare_length: bool = False
) -> Answer:
    """A recorded text answer blown up to ``size`` bytes: a whole body's text becomes ``size``
    bytes of ``x`` (sent in 64 KiB writes, chunked, or with ``content-length`` when
    ``declare_length``); a stream repeats its first text chunk, with 16 KiB of text each, until
    ``size`` bytes have gone, then ends as recorded. Nothing of the answer is held in memory at
    once; a client that goes away stops it."""
    return Answer(
        exchange,
        api=api,
        model=model,
        fault="huge",
        size=size,
        declare_length=declare_length,
        stream=exchange.stream,
    )


def _huge_parts(ans: Answer) -> tuple[bytes, bytes, bytes]:
    """``(head, filler, tail)`` of a :func:`huge` answer: the bytes before the text, the unit
    repeated in the middle (text bytes, or a whole SSE frame), the bytes after."""
    ex = ans.exchange
    api = ans.api or ""
    path = _TEXT_AT[(api, ex.stream)]
    if not ex.stream:
        head, _, tail = json.dumps(_set_text(ex.json(), path)).partition(json.dumps(_MARK)[1:-1])
        return head.encode(), b"x" * 65_536, tail.encode()
    frames = split_sse(ex.body)
    for i, frame in enumerate(frames):
        lines = frame.decode().split("\n")
        for j, line in enumerate(lines):
            if not line.startswith("data:") or line[5:].strip() in ("", "[DONE]"):
                continue
            obj = json.loads(line[5:])
            if _has_text(obj, path):
                lines[j] = "data: " + json.dumps(_set_text(obj, path)).replace(
                    json.dumps(_MARK)[1:-1], "x" * 16_384
                )
                return b"".join(frames[: i + 1]), "\n".join(lines).encode(), b"".join(frames[i + 1 :])
    raise ValueError(f"{ex.source}: no text chunk to repeat")


def structured_answer(*, api: str | None = None, model: str | None = None) -> Answer:
    """Answer with a minimal instance of the schema the request asks for, in the request's own
    shape, whole or streamed (:func:`standins.structured_output.structured`)."""
    placeholder = Exchange(
        status=200, content_type="application/json", body=b"{}", stream=False, source="structured"
    )
    return Answer(placeholder, api=api, model=model, fault="structured")


def answering(
    respond: Callable[[str, Any, bool], Exchange], *, api: str | None = None, model: str | None = None
) -> Answer:
    """An answer built when the request arrives: ``respond(api, body, stream)`` gives the
    exchange, so one scripted answer serves a client whether it streams or not (e.g.
    ``answering(lambda api, body, stream: text_answer(api, "hi", stream=stream))``)."""
    placeholder = Exchange(
        status=200, content_type="application/json", body=b"{}", stream=False, source="dynamic"
    )
    return Answer(placeholder, api=api, model=model, respond=respond)


def held(answer: Answer, gate: Gate) -> Answer:
    """``answer`` delayed before its first byte until ``gate`` is released (or times out)."""
    answer.gate = gate
    return answer


# ------------------------------------------------------------------------------------ record


@dataclass
class Received:
    """One request the stand-in received: ``api`` (openai_chat | openai_responses |
    anthropic_messages | gemini),
    ``model``, ``stream``, the parsed JSON ``body`` (None if not JSON), lower-cased
    ``headers`` and the ``query`` string values."""

    api: str
    path: str
    model: str
    stream: bool
    body: Any
    headers: dict[str, str]
    query: dict[str, str]
    raw: bytes


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == ANTHROPIC:
        kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}.get(
            status, "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api == GEMINI:
        st = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": message, "status": st}}
    if api == RESPONSES and status == 400:
        return responses_error(message)
    kind = {400: "invalid_request_error", 401: "invalid_request_error"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class UpstreamStandin:
    """The stand-in server. Construct, ``await start()`` inside an event loop, then script it
    from any thread with :meth:`script`; read :attr:`received` afterwards."""

    def __init__(self) -> None:
        self._queue: list[Answer] = []
        self._lock = threading.Lock()
        self.received: list[Received] = []
        self.gates: list[Gate] = []
        self.url = ""
        self._runner: web.AppRunner | None = None
        self.issued = Issued()  # encrypted reasoning this stand-in sent, by model (Responses)
        self.signatures = Signatures()  # thinking signatures this stand-in sent (Anthropic)
        self.on_request: Callable[[Received], None] | None = None

    # -------------------------------------------------------------- test-facing API

    def script(self, *answers: Answer) -> None:
        """Queue answers, in order."""
        with self._lock:
            self._queue.extend(answers)
            self.gates.extend(g for a in answers for g in (a.gate, a.reset_gate) if g is not None)

    def pending(self) -> list[Answer]:
        """Scripted answers nobody asked for yet."""
        with self._lock:
            return list(self._queue)

    def reset(self) -> None:
        """Forget the script and the received requests; release every held answer."""
        with self._lock:
            self._queue.clear()
            gates, self.gates = self.gates, []
        for g in gates:
            g.release()
        self.received.clear()
        self.issued.clear()
        self.signatures.clear()

    def requests(self, api: str | None = None, model: str | None = None) -> list[Received]:
        """Received requests, optionally only those to ``api`` / naming ``model``."""
        return [
            r for r in self.received if (api is None or r.api == api) and (model is None or r.model == model)
        ]

    # -------------------------------------------------------------- server

    async def start(self) -> None:
        """Start listening on 127.0.0.1 at a random free port; sets :attr:`url`."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1beta/models/{tail}", self._gemini)
        app.router.add_route("*", "/{path:.*}", self._unknown)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        site = web.SockSite(self._runner, sock)
        await site.start()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    async def stop(self) -> None:
        """Release held answers and stop the server."""
        self.reset()
        if self._runner is not None:
            await self._runner.cleanup()

    # -------------------------------------------------------------- handlers

    async def _read(
        self, request: web.Request, api: str, model_from_path: str | None
    ) -> tuple[Received, Any]:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        model = model_from_path or (body.get("model", "") if isinstance(body, dict) else "")
        if api == GEMINI:
            stream = request.match_info["tail"].endswith(":streamGenerateContent")
        else:
            stream = bool(body.get("stream")) if isinstance(body, dict) else False
        rec = Received(
            api=api,
            path=request.path,
            model=str(model),
            stream=stream,
            body=body,
            headers={k.lower(): v for k, v in request.headers.items()},
            query=dict(request.query),
            raw=raw,
        )
        self.received.append(rec)
        if self.on_request is not None:
            self.on_request(rec)
        return rec, body

    def _check(self, rec: Received, body: Any) -> web.Response | None:
        h = rec.headers
        if rec.api in (OPENAI, RESPONSES) and not h.get("authorization", "").startswith("Bearer "):
            return self._fail(rec.api, 401, "You didn't provide an API key (Authorization: Bearer).")
        if rec.api == ANTHROPIC:
            if not h.get("x-api-key"):
                return self._fail(rec.api, 401, "x-api-key header is required")
            if not h.get("anthropic-version"):
                return self._fail(rec.api, 400, "anthropic-version: header is required")
        if rec.api == GEMINI and not (h.get("x-goog-api-key") or rec.query.get("key")):
            return self._fail(rec.api, 401, "Method doesn't allow unregistered callers. Please use API Key.")
        if not isinstance(body, dict):
            return self._fail(rec.api, 400, "request body is not a JSON object")
        if rec.api in (OPENAI, ANTHROPIC) and not rec.model:
            return self._fail(rec.api, 400, "model: Field required")
        media_bad = media_violation(rec.api, body)
        if media_bad is not None:  # documents, files and audio in the API's own shape (media_rule)
            return self._fail(rec.api, 400, media_bad)
        if rec.api == RESPONSES:
            bad = responses_violation(body, self.issued)
            if bad is not None:
                return web.json_response(bad, status=400)
        if rec.api == ANTHROPIC and not isinstance(body.get("max_tokens"), int):
            return self._fail(rec.api, 400, "max_tokens: Field required")
        if rec.api == ANTHROPIC:
            refused = anthropic_violations(body)
            if refused:  # structured outputs' schema rule (standins.structured_output)
                return self._fail(rec.api, 400, refused[0])
            thinking_bad = thinking_violation(body, self.signatures)
            if thinking_bad is not None:  # extended thinking's rules (standins.anthropic_thinking_rule)
                return self._fail(rec.api, 400, thinking_bad)
        if rec.api == GEMINI and not body.get("contents"):
            return self._fail(rec.api, 400, "* GenerateContentRequest.contents: contents is not specified")
        if rec.api == GEMINI:
            violations = request_violations(body)
            if violations:  # Gemini refuses unknown Schema members at any depth (gemini_schema_rule)
                return web.json_response(schema_error_body(violations), status=400)
            one_of = one_of_violation(body)
            if one_of is not None:  # fields Gemini takes one of (gemini_schema_rule)
                return self._fail(rec.api, 400, one_of)
            unsigned = gemini_signature_violation(rec.model, body)
            if unsigned is not None:  # Gemini 3's thought signatures (gemini_signature_rule)
                return self._fail(rec.api, 400, unsigned)
        return None

    @staticmethod
    def _fail(api: str, status: int, message: str) -> web.Response:
        return web.json_response(_error_body(api, status, message), status=status)

    def _take(self, api: str, model: str, stream: bool) -> Answer | None:
        with self._lock:
            for i, ans in enumerate(self._queue):
                if ans.matches(api, model, stream):
                    return self._queue.pop(i)
        return None

    async def _serve(
        self, request: web.Request, api: str, model_from_path: str | None = None
    ) -> web.StreamResponse:
        rec, body = await self._read(request, api, model_from_path)
        bad = self._check(rec, body)
        if bad is not None:
            return bad
        ans = self._take(api, rec.model, rec.stream)
        if ans is None:
            return self._fail(
                api,
                418,
                f"upstream stand-in: no scripted answer for api={api} model={rec.model!r} "
                f"stream={rec.stream}",
            )
        if ans.gate is not None:
            await ans.gate.wait()
        ex = ans.exchange
        if ans.fault == "structured":
            ex = structured(api, body, rec.stream)
        elif ans.respond is not None:
            ex = ans.respond(api, body, rec.stream)
        if api == RESPONSES and ex.status < 400:
            self.issued.note(rec.model, ex.body)
        if api == ANTHROPIC and ex.status < 400:
            self.signatures.note(ex)
        headers = {"content-type": ex.content_type, **ans.headers}
        if ans.fault == "huge":
            return await self._huge(request, ans, headers)
        if not ex.stream or ex.status >= 400:
            return web.Response(status=ex.status, body=ex.body, headers=headers)
        resp = web.StreamResponse(status=ex.status, headers=headers)
        await resp.prepare(request)
        frames = split_sse(ex.body)
        if ans.fault is not None and ans.fault != "structured":
            frames = frames[: ans.frames]
        for frame in frames:
            await resp.write(frame)
        if ans.fault == "reset":
            if ans.reset_gate is not None:
                await ans.reset_gate.wait()
            await self._abort(request)
            return resp
        await resp.write_eof()
        return resp

    @staticmethod
    async def _huge(request: web.Request, ans: Answer, headers: dict[str, str]) -> web.StreamResponse:
        head, filler, tail = _huge_parts(ans)
        count = max(1, (ans.size - len(head) - len(tail)) // len(filler))
        resp = web.StreamResponse(status=200, headers=headers)
        if ans.declare_length:
            resp.content_length = len(head) + count * len(filler) + len(tail)
        try:
            await resp.prepare(request)
            await resp.write(head)
            for _ in range(count):
                await resp.write(filler)
            await resp.write(tail)
            await resp.write_eof()
        except (ConnectionError, RuntimeError):  # the gateway stopped reading: as it should
            pass
        return resp

    @staticmethod
    async def _abort(request: web.Request) -> None:
        transport = request.transport
        if transport is None:
            return
        for _ in range(1000):  # let the written frames leave the socket buffer first
            if transport.get_write_buffer_size() == 0:
                break
            await asyncio.sleep(0)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # RST instead of FIN: a connection reset, as a crashed upstream gives
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, OPENAI)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, RESPONSES)

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, ANTHROPIC)

    async def _gemini(self, request: web.Request) -> web.StreamResponse:
        tail = request.match_info["tail"]
        model, _, method = tail.partition(":")
        if method not in ("generateContent", "streamGenerateContent"):
            await self._read(request, GEMINI, model)
            return self._fail(GEMINI, 404, f"method {method!r} not found for models/{model}")
        if method == "streamGenerateContent" and request.query.get("alt") != "sse":
            # Without alt=sse Gemini streams one JSON array, which the gateway must not expect.
            await self._read(request, GEMINI, model)
            return self._fail(
                GEMINI, 400, "upstream stand-in serves streamGenerateContent only with ?alt=sse"
            )
        return await self._serve(request, GEMINI, model)

    async def _unknown(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.received.append(
            Received(
                api="unknown",
                path=request.path,
                model="",
                stream=False,
                body=None,
                headers={k.lower(): v for k, v in request.headers.items()},
                query=dict(request.query),
                raw=raw,
            )
        )
        return web.json_response(
            {"error": {"message": f"no such endpoint {request.method} {request.path}"}}, status=404
        )
