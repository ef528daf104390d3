"""The Starlette app: routes, lifespan, request-id and access-log middleware.

Routes
------
* ``POST /v1/chat/completions`` — OpenAI Chat Completions dialect.
* ``POST /v1/messages`` and ``POST /v1/messages/count_tokens`` — Anthropic Messages dialect.
* ``POST /v1/responses`` (and ``/responses``), ``POST /v1/responses/input_tokens`` — OpenAI
  Responses dialect; ``GET``/``DELETE /v1/responses/{id}`` and ``GET
  /v1/responses/{id}/input_items`` read stored responses (sessions:
  :mod:`gateway.sessions.responses`).
* ``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent?alt=sse`` and
  ``:countTokens`` — Gemini dialect; the same under ``/v1/models/`` (the google-genai SDK's
  default path). The caller's key may be in ``x-goog-api-key`` or ``?key=``.
* ``GET /v1/models`` — aliases and enabled deployments (a body both SDKs read); in Gemini's
  shape for a Gemini client (:func:`_is_gemini_client`) and always under ``/v1beta/models``.
* ``GET /health`` — liveness plus the deployment table.
* ``/admin/keys``, ``/admin/teams``, ``/admin/audit`` — virtual keys and teams
  (:mod:`gateway.access.admin_api`, behind the admin key, ``access.admin_key_env``, which
  governs the MCP registry's ``/admin/mcp/*`` too).
* ``GET /metrics`` — Prometheus metrics; where keys are required, a virtual key or the admin
  key reads them.
* ``/ui`` — the admin console (:mod:`gateway.console`, behind the admin key; ``console.enabled``).

Callers: the access layer judges a turn's virtual key; :class:`gateway.access.middleware.KeyCheck`
every other request's (``access.auth``), or sees the admin key. A caller sees only the models its
key allows, and only the sessions, stored responses and threads it created
(:mod:`gateway.sessions.owners`).

Shared objects (config, deployment table, providers, aiohttp session, transcript writer) are
made in the lifespan and live on ``app.state``; there are no module globals.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from operator import methodcaller
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import structlog
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from gateway import exposure
from gateway.access import admin_api
from gateway.access.guessing import KeyGuesses
from gateway.access.identity import Identity, may_hold_key
from gateway.access.middleware import KeyCheck, judge, judged
from gateway.browser_guard import BrowserGuard, mcp_security
from gateway.coalesce import coalesce
from gateway.config import (
    GatewayConfig,
    Settings,
    default_config_path,
    deprecations,
    effective_auth,
    load_config,
    sessions_url,
    workers_state_path,
)
from gateway.console import app as console_app
from gateway.deployments import DeploymentTable
from gateway.edges import anthropic_messages as anthropic_edge
from gateway.edges import gemini as gemini_edge
from gateway.edges import openai_chat as openai_edge
from gateway.edges import openai_responses as responses_edge
from gateway.errors import (
    AnonymousRefused,
    ClientGone,
    InvalidRequest,
    PayloadTooLarge,
    RequestBodyTimeout,
    RouteNotFound,
    ThreadUnsupported,
    TranscriptUnavailable,
    TurnstileError,
    UpstreamError,
)
from gateway.http_headers import header_value, retry_after_value
from gateway.layers.target_media import check_capabilities
from gateway.logs import access_log
from gateway.memory import MemoryReturn
from gateway.metrics import fold_periodically
from gateway.pipeline import Gateway, Pipeline, Turn
from gateway.providers.registry import make_providers
from gateway.schema import ToolProgress
from gateway.serving import STATE_KEY as CONNECTIONS_KEY
from gateway.serving import body_cut, make_guard
from gateway.sessions import api as session_api
from gateway.sessions import responses as stored_responses
from gateway.sessions import threads as stored_threads
from gateway.sessions import turns as session_turns
from gateway.sessions.model import ThreadPayload
from gateway.sessions.owners import STATE_PRINCIPAL, Caller, caller_of, request_caller
from gateway.shutdown import OpenTurns, answer_cut
from gateway.sse_response import EventStream
from gateway.thinking_memory import ThinkingMemory
from gateway.transcript import TranscriptWriter
from gateway.workers_state import WorkersState
from mcp_servers import http_api as mcp_api
from mcp_servers import registry_api

log = structlog.get_logger("turnstile.server")

LARGE_BODY_BYTES = 256 * 1024
"""Request bodies larger than this (bytes) are parsed in a worker thread."""

GC_YOUNG_THRESHOLD = 20_000
"""Allocations (net, of container objects) between two young-generation garbage collections."""


_LATIN1 = methodcaller("encode", "latin-1")


class JsonResponse(Response):
    """A JSON response whose body is already encoded: the headers are built in one step, with
    none of Starlette's per-response charset and media-type handling (``headers`` values are
    printable ASCII: whatever comes from data is built by :mod:`gateway.http_headers`)."""

    media_type = "application/json"

    def __init__(self, body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.body = body
        self.background = None
        self.turn_headers = headers  # read by Front (deployment, request id) without a scan
        if headers:
            self.raw_headers = [
                (b"content-length", str(len(body)).encode()),
                (b"content-type", b"application/json"),
                # encoded by C code (zip, map): a handful of opcodes however many headers
                *zip(map(_LATIN1, headers), map(_LATIN1, headers.values()), strict=True),
            ]
        else:
            self.raw_headers = [
                (b"content-length", str(len(body)).encode()),
                (b"content-type", b"application/json"),
            ]


def _latin1(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for k, v in headers:
        if k == name:
            return v
    return None


class Front:
    """The outermost user middleware: request id, access log and the turn endpoints.

    Every HTTP request gets Turnstile's own request id (``scope["state"]["request_id"]`` and the
    ``x-turnstile-request-id`` response header; a client-chosen id could collide and overwrite
    transcript rows, so the client's ``x-request-id`` is only logged) and one access-log line:
    request id, method, path, status, deployment, duration (ms), client request id.

    ``POST`` to a turn endpoint (``routes`` maps an exact path to ``handler(scope, receive) ->
    Response``, ``prefixes`` a path prefix: Gemini's ``/v1beta/models/``) goes straight to its
    handler, past Starlette's router and exception middleware
    (a few percent of a request's CPU each); the handlers answer every error themselves, so
    nothing the skipped layers would do applies to them. Every other request takes the normal
    route. A turn is counted in ``open_turns`` until its answer was sent (or cut) and its row
    recorded: the shutdown waits for those rows before closing the transcript.
    """

    def __init__(
        self,
        app: ASGIApp,
        routes: dict[str, Any],
        open_turns: OpenTurns | None = None,
        prefixes: tuple[tuple[str, Any], ...] = (),
    ) -> None:
        self.app = app
        self.routes = routes
        self.open_turns = open_turns or OpenTurns()
        self.prefixes = prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client_rid = declared = None
        for k, v in scope["headers"]:  # one pass for both headers this layer reads
            if k == b"content-length":
                declared = v
            elif k == b"x-request-id":
                client_rid = v
        rid = os.urandom(16).hex()
        state = scope.get("state")
        if state is None:
            state = scope["state"] = {}
        state["request_id"] = rid
        state["content_length"] = declared
        t0 = time.perf_counter()
        status = 0
        deployment: str | None = None
        handler = self.routes.get(scope["path"]) if scope["method"] == "POST" else None
        if handler is None and scope["method"] == "POST":
            handler = next((h for p, h in self.prefixes if scope["path"].startswith(p)), None)
        turns = self.open_turns if handler is not None else None
        if turns is not None:
            turns.count += 1
        try:
            if handler is not None:
                response = await handler(scope, receive)
                status = response.status_code
                known: dict[str, str] | None = getattr(response, "turn_headers", None)
                if known is not None:  # the headers as a dict: no scan of the encoded list
                    deployment = known.get("x-turnstile-deployment")
                    has_rid = "x-turnstile-request-id" in known
                else:
                    deployment = _latin1(_header(response.raw_headers, b"x-turnstile-deployment"))
                    has_rid = _header(response.raw_headers, b"x-turnstile-request-id") is not None
                if not has_rid:
                    response.raw_headers.append((b"x-turnstile-request-id", rid.encode()))
                await response(scope, receive, send)
                return

            async def send_wrapper(message: Message) -> None:
                nonlocal status, deployment
                if message["type"] == "http.response.start":
                    status = message["status"]
                    headers = message.get("headers", [])
                    deployment = _latin1(_header(headers, b"x-turnstile-deployment"))
                    if _header(headers, b"x-turnstile-request-id") is None:
                        message["headers"] = [*headers, (b"x-turnstile-request-id", rid.encode())]
                await send(message)

            await self.app(scope, receive, send_wrapper)
        finally:
            if turns is not None:
                turns.leave()
            access_log(
                rid,
                scope["method"],
                scope["path"],
                status,
                deployment,
                (time.perf_counter() - t0) * 1000,
                client_rid.decode("latin-1")[:128] if client_rid is not None else None,
            )


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JsonResponse(orjson.dumps(body), status, headers)


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request body (bytes), read from the ASGI ``receive`` channel. Raises
    :class:`PayloadTooLarge` past ``limit`` bytes (declared or read) and ``ClientDisconnect``
    when the client leaves first."""
    state = scope.get("state") or {}
    declared = (
        state["content_length"] if "content_length" in state else _header(scope["headers"], b"content-length")
    )
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(
            f"request body of {declared.decode()} bytes exceeds the limit of {limit} bytes", param="body"
        )
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes", param="body")
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        elif message["type"] == "http.disconnect":
            raise ClientDisconnect()
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _gone(scope: Scope, rid: str) -> TurnstileError:
    """The error of a request whose client disconnected (logged): the connection guard's 408
    when it cut the body (:func:`gateway.serving.body_cut`), else the client left (499)."""
    cut = body_cut(scope)
    if cut is not None:
        log.info("request_body_cut", request_id=rid, reason=cut)
        return RequestBodyTimeout(cut)
    log.info("client_disconnected", request_id=rid)
    return ClientGone("the client closed the connection before its request was read")


def _error_response(edge: ModuleType, err: TurnstileError, rid: str) -> Response:
    """``err`` as a JSON answer in ``edge``'s dialect, with the request id, the deployment
    that was being read for an upstream's error (as a successful answer names the one that
    answered) and ``retry-after`` when ``err`` has one."""
    status, body = edge.render_error(err)
    headers = {"x-turnstile-request-id": rid}
    if isinstance(err, UpstreamError) and err.deployment is not None:
        headers["x-turnstile-deployment"] = header_value(err.deployment)
    extra = getattr(err, "headers", None)  # a limit's x-ratelimit-* / x-should-retry
    if extra:
        headers.update(extra)
    retry_after = getattr(err, "retry_after_s", None)
    if retry_after is not None:
        headers["retry-after"] = retry_after_value(retry_after)
    return _json(body, status, headers)


async def _handle_turn(scope: Scope, receive: Receive, edge: ModuleType, parse: Any = None) -> Response:
    """One turn in ``edge``'s dialect; ``parse(body, limits) -> Request`` replaces
    ``edge.parse_request`` (the Gemini edge takes the model and stream flag from the URL)."""
    state = scope["app"].state
    parse_request = edge.parse_request if parse is None else parse
    gw: Gateway = state.gateway
    pipeline: Pipeline = state.pipeline
    rid: str = scope["state"]["request_id"]
    in_pipeline = False  # from there on the pipeline records every outcome itself
    large = False  # a large body: give the memory it took back to the OS afterwards
    try:
        transcript = gw.transcript
        if transcript is not None and not transcript.accepting and not await transcript.admit():
            return _transcript_unavailable(edge, transcript, rid)
        headers = Headers(scope=scope)
        principal = None
        identity = gw.identity
        if identity is not None and identity.required:  # a caller without a key costs no body read
            principal = await identity.admit(headers, request_id=rid)
        limits = gw.config.server
        body = await _read_body(scope, receive, limits.max_body_bytes)
        if len(body) > LARGE_BODY_BYTES:  # parse off the event loop: keeps other requests moving
            large = True
            turn_request = await asyncio.to_thread(parse_request, body, limits)
        else:
            turn_request = parse_request(body, limits)
        session_id = session_turns.session_id_for(headers, turn_request)
        if edge is responses_edge:  # a stored response is a session (gateway/sessions/responses.py)
            principal = await _keyed(identity, principal, headers, rid)
            caller = caller_of(principal)
            turn_request, session_id = await _stored_response(gw, turn_request, session_id, caller)
        elif type(turn_request) is anthropic_edge.ThreadedRequest:  # a message thread
            principal = await _keyed(identity, principal, headers, rid)
            caller = caller_of(principal)
            turn_request, session_id = await _message_thread(gw, turn_request, session_id, caller)
        turn_in = Turn(
            request_id=rid,
            dialect=edge.DIALECT,
            request=turn_request,
            headers_in=headers,
            session_id=session_id,
            principal=principal,
        )
        in_pipeline = True
        if turn_request.stream:
            turn = await pipeline.open_stream(turn_in)
            renderer = edge.StreamRenderer(turn_request)

            async def frames() -> AsyncIterator[bytes]:
                render = renderer.render
                last: list[bytes] = []  # the frames that end the answer, sent after its row commits
                async for batch in turn.batches:  # one batch: the events ready at one instant
                    if not batch:  # held tool calls: the dialect's keep-alive
                        yield renderer.ping()
                        continue
                    out: list[bytes] = []
                    for event in batch:
                        if isinstance(event, ToolProgress):  # server-side tool loop progress
                            if event.done:
                                out.append(renderer.tool_progress(event.name, event.is_error))
                            else:  # its tools still run: a keep-alive
                                out.append(renderer.ping())
                        else:
                            out += render(event)
                    if renderer.closed:  # the batch that ended the answer (its end or an error)
                        last += out
                    elif out:
                        yield out[0] if len(out) == 1 else b"".join(out)
                # The turn's row is committed once the pipeline's stream has ended (it records
                # the turn last): only now do the answer's last bytes go out.
                yield b"".join(last + renderer.finish())

            return EventStream(
                coalesce(frames()),  # frames ready at one instant go out in one write
                media_type="text/event-stream",
                headers={**turn.headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
            )
        result = await pipeline.complete(turn_in)
        body = orjson.dumps(edge.render_response(result.response, turn_request))
        large = large or len(body) > LARGE_BODY_BYTES
        return JsonResponse(body, 200, result.headers)
    except TurnstileError as err:
        if err.status >= 500:
            log.warning("turn_failed", request_id=rid, status=err.status, error=err.message)
        if not in_pipeline:  # refused while reading the request: still one transcript row
            await pipeline.record_refused(rid, edge.DIALECT, err)
        return _error_response(edge, err, rid)
    except ClientDisconnect:
        gone = _gone(scope, rid)
        if not in_pipeline:  # gone while its body was read: still one transcript row
            await pipeline.record_refused(rid, edge.DIALECT, gone)
        return Response(status_code=gone.status)
    except Exception:
        log.exception("internal_error", request_id=rid)
        return _error_response(edge, TurnstileError("internal error in the gateway; see its log"), rid)
    except asyncio.CancelledError as exc:  # cut by the shutdown bound before its answer began
        cut = answer_cut(exc)  # a 503 in the client's dialect, not the server's plain-text 500
        if cut is None:
            raise
        log.warning("turn_cut_by_shutdown", request_id=rid)
        if not in_pipeline:
            await pipeline.record_refused(rid, edge.DIALECT, cut)
        return _error_response(edge, cut, rid)
    finally:
        if large:
            state.memory.note()


async def _keyed(identity: Identity | None, principal: Any, headers: Headers, rid: str) -> Any:
    """The caller's principal for a turn that reads or makes stored conversation state before
    the chain runs (its owner is checked there): ``principal`` when the key was judged already
    (keys required), else the presented ``tsk-`` key's (keys optional), else None. Raises
    :class:`gateway.errors.AuthenticationRequired` for a refused key."""
    if principal is not None or identity is None or not may_hold_key(headers):
        return principal
    return await identity.admit(headers, request_id=rid)


async def _stored_response(
    gw: Gateway, request: Any, session_id: str | None, caller: Caller
) -> tuple[Any, str | None]:
    """A Responses request and the session its turn binds to: with ``store`` (the default) a
    new response session owned by ``caller`` (forked from ``previous_response_id``'s, whose
    chain the request continues); with ``store: false`` the previous chain only; a session the
    client bound itself (``x-turnstile-session``, metadata, user) stays its session and no
    response is stored. Raises :class:`gateway.errors.ResponseNotFound` for an unknown
    previous response or one of another owner (:mod:`gateway.sessions.owners`),
    :class:`InvalidRequest` for a previous response on a client-bound session."""
    store, previous = responses_edge.store_intent(request)
    if session_id is not None:
        if previous is not None:
            raise InvalidRequest(
                "previous_response_id: this turn is bound to session "
                f"{session_id!r} by the client; send one or the other",
                param="previous_response_id",
            )
        return responses_edge.with_history(request, [], response_id=None, stored=False), session_id
    if not store:
        history = (await stored_responses.load(gw.sessions, previous, caller)).history if previous else []
        return responses_edge.with_history(request, history, response_id=None, stored=False), None
    rid = stored_responses.new_response_id()
    history = await stored_responses.open_response(gw.sessions, rid, request.model, previous, caller)
    return responses_edge.with_history(request, history, response_id=rid, stored=True), rid


async def _message_thread(
    gw: Gateway, request: Any, session_id: str | None, caller: Caller
) -> tuple[Any, str]:
    """An Anthropic request naming a ``thread`` and the session its turn binds to, the id its
    answer carries (:mod:`gateway.sessions.threads`): a new thread's session, or a fork of the
    continued one with its system prompt, tools and history put in. Raises
    :class:`ThreadUnsupported` when threads are off (``sessions.threads``), the client bound
    the turn to a session itself or a system message sits inside ``messages``;
    :class:`gateway.errors.ThreadNotFound` for an unknown previous message (or one of another
    owner than ``caller``, who owns the new answer's session) and
    :class:`gateway.errors.ThreadFingerprintMismatch` for a changed system prompt or tools."""
    if not gw.config.sessions.threads:
        raise ThreadUnsupported(
            "thread: message threads are off on this gateway (sessions.threads); "
            "send the whole conversation without thread",
            param="thread",
        )
    if session_id is not None:
        raise ThreadUnsupported(
            f"thread: this turn is bound to session {session_id!r} by the client, which holds "
            "the conversation; send the whole conversation without thread",
            param="thread",
        )
    anthropic_edge.check_threadable(request)
    thread = anthropic_edge.thread_of(request)
    mid = stored_threads.new_message_id()
    if thread is None or thread.previous_message_id is None:  # create
        system, tools, mcp_servers = anthropic_edge.settings(request)
        payload = ThreadPayload(system=system, tools=tools, mcp_servers=mcp_servers)
        await stored_threads.create(gw.sessions, mid, request.model, payload, caller)
        return anthropic_edge.created(request, mid), mid
    previous = await stored_threads.load(gw.sessions, thread.previous_message_id, caller)
    held = previous.settings
    request = anthropic_edge.continued(
        request,
        mid,
        system=held.system,
        tools=held.tools,
        mcp_servers=held.mcp_servers,
        history=previous.history,
    )
    await stored_threads.continue_from(gw.sessions, mid, request.model, previous, caller)
    return request, mid


def _transcript_unavailable(edge: ModuleType, transcript: TranscriptWriter, rid: str) -> Response:
    """The 503 for a turn refused because the transcript store is not accepting writes (no
    transcript row: the store is what fails; one error log line)."""
    err = TranscriptUnavailable(
        "the gateway's transcript store is not accepting writes (queue full or a commit overdue "
        f"for {transcript.commit_timeout_s:g} s); the turn was not started and nothing went upstream",
        retry_after_s=transcript.commit_timeout_s,
    )
    log.error("turn_refused_transcript_unavailable", request_id=rid)
    return _error_response(edge, err, rid)


async def _openai_turn(scope: Scope, receive: Receive) -> Response:
    return await _handle_turn(scope, receive, openai_edge)


async def _anthropic_turn(scope: Scope, receive: Receive) -> Response:
    return await _handle_turn(scope, receive, anthropic_edge)


async def _responses_turn(scope: Scope, receive: Receive) -> Response:
    return await _handle_turn(scope, receive, responses_edge)


async def responses(request: Request) -> Response:
    """OpenAI Responses."""
    return await _responses_turn(request.scope, request.receive)


async def chat_completions(request: Request) -> Response:
    """OpenAI Chat Completions."""
    return await _openai_turn(request.scope, request.receive)


async def messages(request: Request) -> Response:
    """Anthropic Messages."""
    return await _anthropic_turn(request.scope, request.receive)


async def count_tokens(request: Request) -> Response:
    """Anthropic ``count_tokens``: input tokens of the request for its model (an estimate from
    litellm's tokenizer tables when the model is not OpenAI's)."""
    return await _count(
        request, anthropic_edge, anthropic_edge.parse_count_tokens, anthropic_edge.render_count_tokens
    )


async def input_tokens(request: Request) -> Response:
    """OpenAI Responses ``input_tokens``: input tokens of the request for its model, counted as
    ``count_tokens`` counts them."""
    return await _count(
        request,
        responses_edge,
        responses_edge.parse_input_tokens,
        responses_edge.render_input_tokens,
        prepare=_previous_chain,
    )


async def _previous_chain(gw: Gateway, request: Any, caller: Caller) -> Any:
    """A Responses request with its ``previous_response_id``'s stored chain put in (what a
    turn would send), for counting its input tokens; ``caller`` must see it."""
    _, previous = responses_edge.store_intent(request)
    if previous is None:
        return request
    history = (await stored_responses.load(gw.sessions, previous, caller)).history
    return responses_edge.with_history(request, history, response_id=None, stored=False)


async def _count(
    request: Request, edge: ModuleType, parse: Any, render: Any, prepare: Any = None
) -> Response:
    """A token count in ``edge``'s dialect: the body parsed by ``parse`` (then completed by
    ``async prepare(gw, request, caller) -> request`` when given), the count rendered by
    ``render``; refusals answered (and recorded) like a turn's. The caller is judged as on
    every endpoint (:func:`gateway.access.middleware.judge`; Gemini's ``countTokens`` comes
    past :class:`KeyCheck`, with the turns), and the model checked against its key's allow
    lists (403 naming it)."""
    gw: Gateway = request.app.state.gateway
    rid: str = request.scope["state"]["request_id"]
    try:
        if not judged(request.scope):
            await judge(request.scope)
        state = request.scope["state"]
        principal = state[STATE_PRINCIPAL]
        limits = gw.config.server
        body = await _read_body(request.scope, request.receive, limits.max_body_bytes)
        if len(body) > LARGE_BODY_BYTES:
            turn_request = await asyncio.to_thread(parse, body, limits)
        else:
            turn_request = parse(body, limits)
        if principal is not None and gw.identity is not None:
            await gw.identity.check_model(principal, turn_request.model, request_id=rid)
        if prepare is not None:
            turn_request = await prepare(gw, turn_request, request_caller(state))
        dep = gw.table.candidates(turn_request.model)[0]
        check_capabilities(
            turn_request, dep
        )  # refused as /v1/messages refuses it (a container toward OpenAI)
        from gateway.providers.catalog import count_tokens as count

        # In a worker thread: tokenizing grows with the request, and the first call imports litellm.
        tokens = await asyncio.to_thread(count, turn_request, dep.model)
        return _json(render(tokens))
    except TurnstileError as err:  # refused: one transcript row, as for a turn
        await request.app.state.pipeline.record_refused(rid, edge.DIALECT, err)
        return _error_response(edge, err, rid)
    except ClientDisconnect:  # gone while the body was read: as a turn, not an ASGI error
        gone = _gone(request.scope, rid)
        await request.app.state.pipeline.record_refused(rid, edge.DIALECT, gone)
        return Response(status_code=gone.status)
    except Exception:  # a JSON error in the dialect, never Starlette's plain-text 500
        log.exception("internal_error", request_id=rid)
        internal = TurnstileError("internal error in the gateway; see its log")
        return _error_response(edge, internal, rid)


async def stored_response(request: Request) -> Response:
    """``GET``/``DELETE /v1/responses/{id}`` and ``GET /v1/responses/{id}/input_items``: a
    stored response read back (or marked deleted) in the Responses shape; an unknown id, or
    one of another owner (:mod:`gateway.sessions.owners`), is a 404 (one transcript row, as
    for a refusal)."""
    gw: Gateway = request.app.state.gateway
    rid: str = request.scope["state"]["request_id"]
    response_id = request.path_params["response_id"]
    caller = request_caller(request.scope.get("state"))
    try:
        if request.method == "DELETE":
            await stored_responses.delete(gw.sessions, response_id, caller)
            return _json(responses_edge.render_deleted(response_id))
        if not request.url.path.endswith("/input_items"):
            responses_edge.check_retrieve_query(dict(request.query_params))
        stored = await stored_responses.load(gw.sessions, response_id, caller)
        if request.url.path.endswith("/input_items"):
            query = dict(request.query_params)
            return _json(responses_edge.render_input_items(response_id, stored.inputs, query))
        body = responses_edge.render_stored(response_id, stored.created_at, stored.model, stored.answer)
        return _json(body)
    except TurnstileError as err:
        if err.param == "previous_response_id":
            err.param = "response_id"
        await request.app.state.pipeline.record_refused(rid, responses_edge.DIALECT, err)
        return _error_response(responses_edge, err, rid)


_GEMINI_VERBS = ("generateContent", "streamGenerateContent", "countTokens")


def _is_gemini_client(request: Request) -> bool:
    """A request from a Google SDK (``x-goog-api-client`` or ``x-goog-api-key``) or with a
    ``?key=``: ``GET /v1/models`` answers it in Gemini's shape."""
    h = request.headers
    return "x-goog-api-client" in h or "x-goog-api-key" in h or "key" in request.query_params


def _key_from_query(request: Request) -> None:
    """Gemini's ``?key=`` as the ``x-goog-api-key`` header of the turn (where the access layer
    reads a caller's key), unless that header is already there. It identifies the caller only;
    nothing of the client's request goes upstream."""
    key = request.query_params.get("key")
    scope = request.scope
    if key and not any(k == b"x-goog-api-key" for k, _ in scope["headers"]):
        scope["headers"] = [*scope["headers"], (b"x-goog-api-key", key.encode("latin-1", "replace"))]


async def _gemini_turn(scope: Scope, receive: Receive) -> Response:
    """``POST .../models/{model}:{verb}`` of the Gemini dialect (dispatched by :class:`Front`
    on the path prefix): ``generateContent``, ``streamGenerateContent`` (``?alt=sse`` only:
    without it Gemini streams one JSON array, which this gateway does not serve; 400 naming
    ``alt``) and ``countTokens``."""
    request = Request(scope, receive)
    rest = scope["path"].split("/models/", 1)[1]
    model_name, sep, verb = rest.rpartition(":")
    if not sep or not model_name or verb not in _GEMINI_VERBS:
        missing = RouteNotFound(
            f"no route for POST {request.url.path}: expected models/{{model}}:generateContent, "
            ":streamGenerateContent or :countTokens"
        )
        _, body = gemini_edge.render_error(missing)
        return _json(body, 404)
    _key_from_query(request)
    if verb == "countTokens":
        return await _count(
            request,
            gemini_edge,
            lambda body, limits: gemini_edge.parse_count_tokens(body, limits, model=model_name),
            gemini_edge.render_count_tokens,
        )
    stream = verb == "streamGenerateContent"
    if stream and request.query_params.get("alt") != "sse":
        err = InvalidRequest(
            "alt: streamGenerateContent is served as server-sent events only; add ?alt=sse "
            "(the google-genai SDKs and Gemini CLI do)",
            param="alt",
        )
        rid: str = request.scope["state"]["request_id"]
        await request.app.state.pipeline.record_refused(rid, gemini_edge.DIALECT, err)
        return _error_response(gemini_edge, err, rid)

    def parse(body: bytes, limits: Any) -> Any:
        return gemini_edge.parse_request(body, limits, model=model_name, stream=stream)

    return await _handle_turn(request.scope, request.receive, gemini_edge, parse)


def _visible_models(request: Request, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model entries (``{"id": alias or deployment, ...}``) the caller may use: those its
    virtual key and its team allow (every entry for the admin key and anonymous callers)."""
    state = request.scope.get("state") or {}
    principal = state.get(STATE_PRINCIPAL)
    if principal is None:
        return entries
    return [e for e in entries if principal.allows_model(e["id"])]


def _gemini_entries(gw: Gateway, request: Request) -> list[dict[str, Any]]:
    """The model entries the caller may use, with each deployment's window and output limit
    (tokens)."""
    entries: list[dict[str, Any]] = []
    for e in _visible_models(request, gw.table.models()):
        dep = gw.table.deployments.get(e["id"])
        entry: dict[str, Any] = dict(e)
        if dep is not None:
            entry["context_window"] = dep.context_window
            entry["max_output_tokens"] = dep.max_output_tokens
        entries.append(entry)
    return entries


async def gemini_models(request: Request) -> Response:
    """``GET /v1beta/models``: the model list in Gemini's shape."""
    gw: Gateway = request.app.state.gateway
    return _json(gemini_edge.render_models(_gemini_entries(gw, request)))


async def gemini_model(request: Request) -> Response:
    """``GET /v1beta/models/{model}``: one model in Gemini's shape, or 404 in Gemini's shape."""
    gw: Gateway = request.app.state.gateway
    wanted = request.path_params.get("rest") or request.path_params.get("model_id") or ""
    wanted = wanted[len("models/") :] if wanted.startswith("models/") else wanted
    for entry in _gemini_entries(gw, request):
        if entry["id"] == wanted:
            return _json(gemini_edge.render_model(entry))
    _, body = gemini_edge.render_error(RouteNotFound(f"models/{wanted} is not found for this gateway"))
    return _json(body, 404)


async def models(request: Request) -> Response:
    """Model list in a shape both the OpenAI and Anthropic SDKs accept (Gemini's for a Gemini
    client): the models the caller's key (and its team) allow."""
    if _is_gemini_client(request):
        return await gemini_models(request)
    gw: Gateway = request.app.state.gateway
    return _json(openai_edge.render_models(_visible_models(request, gw.table.models())))


async def metrics(request: Request) -> Response:
    """``GET /metrics``: the Prometheus text exposition (:mod:`gateway.metrics`); 404 when
    ``metrics.enabled`` is off. Its callers are judged by :class:`KeyCheck` (the admin key, or a
    virtual key where keys are required)."""
    gw: Gateway = request.app.state.gateway
    if not gw.config.metrics.enabled:
        return await not_found(request, LookupError(request.url.path))
    body, content_type = gw.metrics.render()
    return Response(body, media_type=content_type)


def _watch_metrics(gw: Gateway, mcp: Any) -> None:
    """Register the scrape-time gauges (circuit state and cooldown of every deployment this
    process has called; MCP server health) and let the MCP endpoint count its tool calls."""
    from gateway import metrics as m

    def circuits() -> list[tuple[str, str, float]]:
        board = gw.routing.health if gw.routing is not None else None
        if board is None:
            return []
        now = board.clock()
        return [
            (name, board.state(name), h.cooldown_until - now) for name, h in sorted(board.entries.items())
        ]

    def servers() -> list[tuple[str, bool]]:
        if mcp is None:
            return []
        return [(s["id"], s.get("state") in ("ready", "degraded")) for s in mcp.registry.status()["servers"]]

    gw.metrics.on_scrape(m.circuit_gauges(circuits))
    gw.metrics.on_scrape(m.server_gauges(servers))
    if mcp is not None:
        mcp.endpoint.observer = gw.metrics


def _start_guardrails(gw: Gateway, read_env: Any) -> None:
    """Make the gateway's guardrails (:mod:`gateway.guardrails`): counted in the metrics,
    each action audited in the MCP audit (tier ``guardrail``, outcome ``guardrail_<action>``),
    and hooked into ``/mcp`` for the tool results it relays."""
    from gateway.guardrails.engine import Guardrails
    from gateway.guardrails.mcp import McpGuard

    mcp = gw.mcp

    async def audit(entry: dict[str, Any]) -> None:
        if mcp is None:
            return
        await mcp.registry.store.audit(
            {
                "server": entry.get("server") or "-",
                "tool": entry.get("tool") or "-",
                "exposed": entry.get("tool") or "-",
                "tier": "guardrail",
                "outcome": f"guardrail_{entry['action']}",
                "reason": f"{entry['check']}: {', '.join(entry['kinds'])}",
                "action": f"{entry['stage']} (request {entry.get('request_id') or '-'})",
                "client": entry.get("client"),
            }
        )

    gw.guardrails = Guardrails(
        gw.config.guardrails, read_env=read_env, audit=audit, count=gw.metrics.guardrail
    )
    if mcp is not None:
        mcp.endpoint.guardrails = McpGuard(gw.guardrails)


async def health(request: Request) -> Response:
    """Liveness and the deployment table (enabled and disabled with reasons)."""
    gw: Gateway = request.app.state.gateway
    return _json(
        {
            "status": "ok",
            "deployments": sorted(gw.table.deployments),
            "disabled": gw.table.disabled,
            "disabled_aliases": gw.table.disabled_aliases,
            "aliases": gw.table.aliases,
            "transcript_rows_written": gw.transcript.written if gw.transcript else 0,
            "transcript_rows_dropped": gw.transcript.dropped if gw.transcript else 0,
            "transcript_accepting": gw.transcript.accepting if gw.transcript else False,
            "mcp": mcp.registry.status() if (mcp := getattr(request.app.state, "mcp", None)) else None,
            "routing": gw.routing.health.snapshot() if gw.routing is not None else {},
            "connections": conns.snapshot()
            if (conns := getattr(request.app.state, "connections", None))
            else None,
        }
    )


def _edge_for_path(path: str) -> ModuleType:
    """The dialect a path belongs to: Anthropic under ``/v1/messages``, Responses under
    ``/v1/responses``, Gemini under ``/v1beta``, else OpenAI Chat's (the more common client)."""
    if path.startswith("/v1/messages"):
        return anthropic_edge
    if path.startswith(("/v1/responses", "/responses")):
        return responses_edge
    if path.startswith("/v1beta"):
        return gemini_edge
    return openai_edge


async def not_found(request: Request, exc: Exception) -> Response:
    """Unknown paths answer 404 in the path's dialect."""
    err = RouteNotFound(f"no route for {request.method} {request.url.path}")
    _, body = _edge_for_path(request.url.path).render_error(err)
    return _json(body, 404)


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    """A known path with the wrong method answers 405 in the path's dialect."""
    err = InvalidRequest(f"method {request.method} is not allowed on {request.url.path}", param="method")
    _, body = _edge_for_path(request.url.path).render_error(err)
    return _json(body, 405, {"allow": "POST" if request.method == "GET" else "GET, POST"})


async def model(request: Request) -> Response:
    """One model, as ``GET /v1/models/{id}`` (``models.retrieve`` in both SDKs; Gemini's
    ``models.get`` for a Gemini client); one the caller's key may not use is not found."""
    if _is_gemini_client(request):
        return await gemini_model(request)
    gw: Gateway = request.app.state.gateway
    wanted = request.path_params["model_id"]
    for entry in openai_edge.render_models(_visible_models(request, gw.table.models()))["data"]:
        if entry["id"] == wanted:
            return _json(entry)
    return await not_found(request, KeyError(wanted))


def _refuse_anonymous(path: str, address: str) -> tuple[int, bytes]:
    """The 403 (status, body) in the path's dialect for a request that arrived on the
    non-loopback local ``address`` of a gateway serving anonymous clients on loopback only."""
    err = AnonymousRefused(
        f"this gateway serves clients without authentication only on loopback addresses, and this "
        f"request arrived on {address}; its operator can serve on 127.0.0.1 or start it with "
        f"{exposure.ALLOW_FLAG}"
    )
    status, body = _edge_for_path(path).render_error(err)
    return status, orjson.dumps(body)


def _refuse_key(path: str, err: TurnstileError) -> tuple[int, bytes]:
    """A refusal before a handler (a refused key, a web page's request: :mod:`gateway.browser_guard`),
    as (status, body) in the path's dialect."""
    status, body = _edge_for_path(path).render_error(err)
    return status, orjson.dumps(body)


def _tool_owner(registry: Any) -> Any:
    """Exposed MCP tool name -> (server, tool name) through ``registry`` (for key visibility)."""

    def owner(exposed: str) -> tuple[str, str] | None:
        t = registry.lookup(exposed)
        return (t.server, t.name) if t is not None else None

    return owner


def create_app(
    config: GatewayConfig | None = None,
    *,
    config_path: Path | None = None,
    settings: Settings | None = None,
    providers: dict[str, Any] | None = None,
    span_processor: Any = None,
) -> Starlette:
    """Build the ASGI app.

    ``config`` (already validated) wins over ``config_path``; with neither, the embedded
    ``config/default.yaml``. ``providers`` replaces the wire providers (tests);
    ``span_processor`` (an OpenTelemetry ``SpanProcessor``, tests) turns tracing on with it
    instead of the OTLP export. Raises :class:`gateway.errors.ConfigError` for an invalid
    file, or export headers (``tracing.headers_env``) that cannot be read.
    """
    settings = settings or Settings()
    from gateway.logs import configure

    configure(settings.log_level, json=settings.log_json)
    if config is None:
        config = load_config(config_path or settings.config or default_config_path())
    if settings.db_path is not None:
        config = config.model_copy(
            update={"server": config.server.model_copy(update={"db_path": str(settings.db_path)})}
        )
    if settings.host is not None:  # the address `turnstile serve` listens on (its --host)
        config = config.model_copy(
            update={"server": config.server.model_copy(update={"host": settings.host})}
        )
    for note in deprecations(config):
        log.warning("deprecated_setting", note=note)
    if exposure.check_listen_address(config.server.host, config, settings):  # raises AnonymousExposure
        exposure.warn_anonymous(config.server.host)
    table = DeploymentTable.build(config, settings)
    open_turns = OpenTurns()  # shared by the front middleware and the lifespan's shutdown
    trace_headers = settings.read_headers(config.tracing.headers_env) if config.tracing.enabled else {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        from gateway.providers.transport import make_session

        session = make_session()
        app.state.memory = MemoryReturn()
        from gateway.ledger import ledger_spend, transcript_location
        from gateway.limits.open import open_limits

        transcript = TranscriptWriter(
            transcript_location(config),
            maxsize=config.server.transcript_queue,
            commit_timeout_s=config.server.transcript_commit_timeout_s,
            max_json_bytes=config.server.transcript_max_json_bytes,
        )
        await transcript.start()
        gw = Gateway(
            config=config,
            table=table,
            providers=providers
            if providers is not None
            else make_providers(
                session, config.timeouts, config.server.max_response_bytes, on_large=app.state.memory.note
            ),
            transcript=transcript,
            thinking=ThinkingMemory(config.thinking_memory.entries, config.thinking_memory.ttl_s),
        )
        from gateway.sessions.open import open_store

        gw.sessions = await open_store(sessions_url(config))
        spend = ledger_spend(transcript_location(config))
        gw.limits = open_limits(config, spend=spend, shared=workers_state_path(config, settings))
        from gateway.access.identity import Identity
        from gateway.access.open import open_access_store

        app.state.access = await open_access_store(config)
        auth = effective_auth(config, exposure.is_loopback(config.server.host))
        if auth != "off":
            gw.identity = Identity(
                app.state.access, required=auth == "required", ttl_s=config.access.cache_ttl_s
            )
        app.state.gateway = gw
        app.state.pipeline = Pipeline(gw)
        app.state.open_turns = open_turns
        mcp_stack = AsyncExitStack()
        app.state.mcp = await mcp_stack.enter_async_context(
            mcp_api.open_mcp(
                config.mcp.model_copy(update={"admin_key_env": config.access.admin_key_env}),  # one admin key
                db_path=config.server.db_path,
                read_env=settings.read_key,
                security=mcp_security(config),  # the Host/Origin lists the model API checks too
                keys=gw.identity.mcp_visibility if gw.identity is not None else None,
            )
        )
        gw.mcp = app.state.mcp  # the server-side tool loop calls tools through it
        _watch_metrics(gw, app.state.mcp)
        if config.guardrails.enabled:
            _start_guardrails(gw, settings.read_key)
        if config.tracing.enabled or span_processor is not None:
            from gateway.tracing import Tracing

            gw.tracing = Tracing(config.tracing, trace_headers, processor=span_processor)
            app.state.mcp.endpoint.tracer = gw.tracing.mcp
        folding = asyncio.create_task(fold_periodically(gw.metrics)) if gw.metrics.multiprocess else None
        if gw.identity is not None:
            gw.identity.owner = _tool_owner(gw.mcp.registry)
        from gateway.fleet.open import open_fleet

        gw.fleet = await open_fleet(gw, gw.mcp.registry)  # redis.url: health, memories, changes shared
        log.info(
            "started",
            deployments=sorted(table.deployments),
            disabled=sorted(table.disabled),
            db=str(config.server.db_path),
        )
        if not table.deployments:
            log.warning(
                "no_deployment_enabled",
                hint="every chat request will get 404; add a deployment or set its api_key_env variable",
                disabled=table.disabled,
            )
        # Everything made at start-up (imported modules, the price table, config) lives as
        # long as the process: keep it out of the cyclic collector, whose full passes over
        # those objects otherwise stall the event loop for tens of milliseconds now and then.
        gc.collect()
        gc.freeze()
        # A turn allocates thousands of short-lived objects (parsed JSON, schema models); with
        # the default young-generation threshold (700) they are scanned, often twice, while
        # still alive. A larger one lets nearly all of them die by reference count first.
        gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)
        app.state.connections = make_guard(config.server)
        try:
            yield {
                CONNECTIONS_KEY: app.state.connections
            }  # the lifespan state: uvicorn hands it to each connection
        finally:
            # Turns cut by the shutdown bound record their rows as they unwind: wait for them
            # (bounded) so that those rows are written before the transcript closes.
            if not await open_turns.drained(config.server.transcript_commit_timeout_s):
                log.error("shutdown_turns_still_open", turns=open_turns.count)
            app.state.memory.close()
            if folding is not None:
                folding.cancel()
            gw.metrics.fold()
            if gw.fleet is not None:
                await gw.fleet.close()
            await mcp_stack.aclose()
            await gw.limits.aclose()
            if app.state.workers_state is not None:
                await app.state.workers_state.aclose()
            await transcript.close()
            await gw.sessions.close()
            await app.state.access.close()
            await session.close()
            if getattr(app.state, "console", None) is not None:
                await app.state.console.close()
            if gw.guardrails is not None:
                await gw.guardrails.close()
            if gw.tracing is not None:  # the spans still batched: exported (bounded), off the loop
                await asyncio.to_thread(gw.tracing.shutdown)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/responses", responses, methods=["POST"]),
            Route("/v1/responses/input_tokens", input_tokens, methods=["POST"]),
            Route("/v1/responses/{response_id}", stored_response, methods=["GET", "DELETE"]),
            Route("/v1/responses/{response_id}/input_items", stored_response, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", model, methods=["GET"]),
            Route("/v1beta/models", gemini_models, methods=["GET"]),
            Route("/v1beta/models/{rest:path}", gemini_model, methods=["GET"]),
            Route("/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            *mcp_api.routes(),
            *registry_api.routes(),
            *session_api.ROUTES,
            *admin_api.ROUTES,
            *(console_app.routes() if config.console.enabled else []),
        ],
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: method_not_allowed},
    )
    app.state.admin_key = (
        settings.read_key(config.access.admin_key_env) if config.access.admin_key_env else None
    )
    shared_path = workers_state_path(config, settings)  # one of several workers: what they share
    app.state.workers_state = None if shared_path is None else WorkersState(shared_path)
    # wrong admin keys per client address, every admin surface (and every worker)
    app.state.key_guesses = KeyGuesses(shared=app.state.workers_state)
    if config.console.enabled:
        from gateway.ledger import transcript_location

        app.state.console = console_app.make_state(
            config,
            transcript_location(config),
            app.state.admin_key,
            [  # what no console page may show (gateway.console.redact)
                *table.keys.values(),
                *(settings.read_key(c.key_env) for c in config.mcp.clients),
                *trace_headers.values(),
            ],
            app.state.key_guesses,
            # no admin key, on loopback: the one-time login link `turnstile serve` printed
            settings.console_token if exposure.is_loopback(config.server.host) else None,
            shared=app.state.workers_state,
        )
    app.add_middleware(KeyCheck, refuse=_refuse_key)  # inside Front: turns are judged by the access layer
    app.add_middleware(
        Front,
        routes={
            "/v1/chat/completions": _openai_turn,
            "/chat/completions": _openai_turn,
            "/v1/messages": _anthropic_turn,
            "/v1/responses": _responses_turn,
            "/responses": _responses_turn,
        },
        open_turns=open_turns,
        prefixes=(("/v1beta/models/", _gemini_turn), ("/v1/models/", _gemini_turn)),
    )
    if not (exposure.client_auth_configured(config) or exposure.anonymous_allowed(config, settings)):
        app.add_middleware(exposure.LoopbackOnly, refuse=_refuse_anonymous)  # for hosts not seen here
    if not exposure.client_auth_configured(config):  # no key needed: web pages are kept out
        app.add_middleware(BrowserGuard, config=config, refuse=_refuse_key)
    if config.server.trusted_proxies:  # outermost: everything below sees the client's address
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=config.server.trusted_proxies)
    return app
