"""The MCP endpoint over the legacy HTTP+SSE transport (MCP protocol 2024-11-05), beside ``/mcp``.

Clients that predate streamable HTTP (MCP Inspector ``--transport sse``, langchain-mcp-adapters
``transport: "sse"``, the ``mcp`` SDK's ``sse_client``) open ``GET /sse``: an event stream whose
first event, ``endpoint``, names ``/messages/?session_id=<hex>``; they POST each JSON-RPC message
there (answered 202) and read the answers as ``message`` events on the stream. Spec:
https://modelcontextprotocol.io/specification/2024-11-05/basic/transports#http-with-sse

The wire is the ``mcp`` SDK's own :class:`~mcp.server.sse.SseServerTransport`; this module adds
what the gateway needs around it, so a session serves exactly what ``/mcp`` serves:

* the same low-level ``Server`` (:class:`mcp_servers.endpoint.McpEndpoint`): same tools,
  resources, prompts, trust tiers, confirmations (elicitation over the stream) and audit log;
* the same caller: the key is checked on ``GET /sse`` (401 as on ``/mcp``) and the session is
  bound to that client; each POST must present a key of the same client, or the session is
  answered as unknown (404). Handlers see the session's visibility where ``/mcp`` puts it (the
  request's scope state and :data:`mcp_servers.clients.CALLER`);
* the same DNS-rebinding protection (the ``Host``/``Origin`` settings ``/mcp`` uses);
* bounds (``mcp.sse`` in the config): at most ``max_sessions`` open streams (one more gets 503
  with ``Retry-After``), and a session with no message from its client for ``idle_timeout_s``
  and no request of its client in flight is closed (its stream ends). A stream whose client
  disconnects frees its session at once;
* errors as JSON (``{"error": {"message", "type"}}``): no ``session_id`` or a malformed one
  400, an unknown, closed or foreign session 404, a body that is not a JSON-RPC message 400
  (one log line; the SDK's own answer is plain text with a traceback in the log).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import orjson
import structlog
from mcp.server import Server
from mcp.server.sse import SseServerTransport
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp.types import (
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from mcp_servers.clients import CALLER, STATE_KEY, KeyAuth, Visibility, admit
from mcp_servers.config import McpConfig
from mcp_servers.oauth_resource import OAuthResource, admit_or_refuse
from mcp_servers.upstream import EnvReader

log = structlog.get_logger("turnstile.mcp.sse")

MESSAGES_PATH = "/messages/"
"""Where the ``endpoint`` event tells clients to POST (the SDK's and most servers' default)."""
_SESSION_IN_ENDPOINT = re.compile(rb"session_id=([0-9a-f]{32})")


def _replay(body: bytes) -> Receive:
    """An ASGI ``receive`` that hands over ``body`` (already read) once, then waits as a
    connection that sent everything does."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    return receive


def json_error(message: str, status: int, kind: str) -> Response:
    """``{"error": {"message", "type"}}`` with ``status``."""
    body = orjson.dumps({"error": {"message": message, "type": kind}})
    return Response(body, status_code=status, media_type="application/json")


@dataclass
class SseSession:
    """One open stream: its client's visibility, when its client last sent a message
    (monotonic seconds), the ids of its client's requests not yet answered, and the cancel
    scope that ends it."""

    visibility: Visibility
    last_message: float = field(default_factory=time.monotonic)
    in_flight: set[str | int] = field(default_factory=set)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def idle_for(self, now: float) -> float:
        """Seconds without a client message, 0 while a request of the client is in flight."""
        return 0.0 if self.in_flight else now - self.last_message

    def received(self, item: SessionMessage | Exception) -> None:
        """Note a message from the client (a request goes in flight; a cancellation of one
        takes it out: the server answers a cancelled request with nothing)."""
        self.last_message = time.monotonic()
        if not isinstance(item, SessionMessage):
            return
        msg = item.message
        if isinstance(msg, JSONRPCRequest):
            self.in_flight.add(msg.id)
        elif isinstance(msg, JSONRPCNotification) and msg.method == "notifications/cancelled":
            self.in_flight.discard((msg.params or {}).get("requestId"))  # type: ignore[arg-type]

    def sent(self, item: SessionMessage) -> None:
        """Note a message to the client (an answer takes its request out of flight)."""
        msg = item.message
        if isinstance(msg, (JSONRPCResponse, JSONRPCError)) and msg.id is not None:
            self.in_flight.discard(msg.id)


class _ReadWatch:
    """The transport's read stream, noting each client message on the session; it keeps the
    sender's context (``last_context``) that the SDK runs each handler in."""

    def __init__(self, inner: Any, session: SseSession) -> None:
        self._inner = inner
        self._session = session

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        item: SessionMessage | Exception = await self._inner.receive()
        self._session.received(item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _ReadWatch:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _ReadWatch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


class _WriteWatch:
    """The transport's write stream, noting each answer on the session."""

    def __init__(self, inner: Any, session: SseSession) -> None:
        self._inner = inner
        self._session = session

    async def send(self, item: SessionMessage, /) -> None:
        self._session.sent(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WriteWatch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


class LegacySse:
    """The two ASGI apps of the legacy transport (:meth:`open_stream` for ``GET /sse``,
    :meth:`post_message` for ``POST /messages/``) over one ``Server``, and the open sessions."""

    def __init__(
        self,
        server: Server[Any],
        config: McpConfig,
        read_env: EnvReader,
        security: TransportSecuritySettings | None,
        keys: KeyAuth | None = None,
        oauth: OAuthResource | None = None,
    ) -> None:
        self.server = server
        self.oauth = oauth
        self.config = config
        self.read_env = read_env
        self.keys = keys
        self.transport = SseServerTransport(MESSAGES_PATH, security_settings=security)
        self._security = TransportSecurityMiddleware(security)
        self.sessions: dict[uuid.UUID, SseSession] = {}
        self._closing = False
        self._open = 0

    async def open_stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET /sse``: checks (Host/Origin, key, session cap), then serves one session until
        its client disconnects, it idles out or the gateway shuts down."""
        refused = await self._security.validate_request(Request(scope, receive), is_post=False)
        admitted = refused or await self._admission(Headers(scope=scope), str(Request(scope).base_url))
        if isinstance(admitted, Response):
            await admitted(scope, receive, send)
            return
        session = SseSession(admitted)
        key: list[uuid.UUID] = []

        async def send_noting_session(message: Message) -> None:
            # The transport makes the session id and names it in its first event, `endpoint`:
            # the session is registered before that event leaves, so the client's first POST finds it.
            if not key and message["type"] == "http.response.body":
                found = _SESSION_IN_ENDPOINT.search(message.get("body", b""))
                if found:
                    key.append(uuid.UUID(hex=found.group(1).decode()))
                    self.sessions[key[0]] = session
                    log.info("mcp_sse_session_opened", session=key[0].hex, client=session.visibility.client)
            await send(message)

        self._open += 1  # counted from admission, so concurrent opens cannot pass the cap together
        token = CALLER.set(session.visibility)
        try:
            async with self.transport.connect_sse(scope, receive, send_noting_session) as (read, write):
                with session.scope:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._idle_watch, session, tg.cancel_scope)
                        await self.server.run(
                            _ReadWatch(read, session),
                            _WriteWatch(write, session),
                            self.server.create_initialization_options(),
                        )
                        tg.cancel_scope.cancel()
                await write.aclose()  # ends the event stream when the session was cut from here
        finally:
            self._open -= 1
            CALLER.reset(token)
            if key:
                self.sessions.pop(key[0], None)
                log.info("mcp_sse_session_closed", session=key[0].hex, client=session.visibility.client)

    async def _caller(self, headers: Headers, base_url: str) -> Visibility | Response | None:
        """As on ``/mcp``: with ``mcp.authorization`` a JWT, virtual key or client key (else the
        401/403 with its challenge), without it :func:`mcp_servers.clients.admit` (None: refused)."""
        if self.oauth is not None:
            return await admit_or_refuse(self.oauth, self.config, self.read_env, headers, self.keys, base_url)
        return await admit(self.config, self.read_env, headers, self.keys)

    async def _admission(self, headers: Headers, base_url: str) -> Visibility | Response:
        """The caller's visibility, or the refusal: 401 (no client's key, as on ``/mcp``), 503
        (shutting down, or ``max_sessions`` streams open)."""
        visibility = await self._caller(headers, base_url)
        if isinstance(visibility, Response):
            return visibility
        if visibility is None:
            response = json_error(
                "this gateway's MCP endpoint needs a client API key (Authorization: Bearer <key>)",
                401,
                "authentication",
            )
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        limit = self.config.sse.max_sessions
        if self._closing or self._open >= limit:
            why = "the gateway is shutting down" if self._closing else f"{limit} MCP SSE sessions are open"
            text = f"no MCP SSE session can be opened now: {why} (mcp.sse.max_sessions)"
            response = json_error(text, 503, "overloaded")
            response.headers["Retry-After"] = "5"
            return response
        return visibility

    async def _idle_watch(self, session: SseSession, scope: anyio.CancelScope) -> None:
        """Cancel ``scope`` once ``session`` has been idle ``idle_timeout_s`` seconds."""
        limit = self.config.sse.idle_timeout_s
        while True:
            idle = session.idle_for(time.monotonic())
            if idle >= limit:
                log.info("mcp_sse_session_idle", client=session.visibility.client, idle_s=round(idle, 1))
                scope.cancel()
                return
            await anyio.sleep(limit - idle if idle > 0 else min(limit, 1.0))

    async def post_message(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /messages/?session_id=<hex>``: one client message into its session (202), after
        the same Host/Origin check as ``/mcp``; 400 without a well-formed ``session_id``; 404 for
        a session that is unknown, closed or opened by another client."""
        request = Request(scope, receive)
        refused = await self._security.validate_request(request, is_post=True)
        if refused is not None:
            await refused(scope, receive, send)
            return
        given = request.query_params.get("session_id")
        session: SseSession | None = None
        if given is None:
            text = "session_id is required (the URL of the stream's endpoint event)"
            refused = json_error(text, 400, "invalid_request")
        else:
            try:
                session = self.sessions.get(uuid.UUID(hex=given))
            except ValueError:
                refused = json_error(f"session_id {given[:64]!r} is not a session id", 400, "invalid_request")
            else:
                found = await self._caller(request.headers, str(request.base_url))
                visibility = found if isinstance(found, Visibility) else None
                if session is None or visibility is None or visibility.client != session.visibility.client:
                    session = None  # another client's session is answered as one that does not exist
                    refused = json_error(
                        f"no MCP SSE session {given[:64]!r}: it was never opened, or it closed "
                        "(open a new one with GET /sse)",
                        404,
                        "not_found",
                    )
        if session is None:
            assert refused is not None
            await refused(scope, receive, send)
            return
        body = await request.body()
        try:
            jsonrpc_message_adapter.validate_json(body, by_name=False)
        except ValidationError as err:  # the SDK's answer would be plain text and a traceback in the log
            first = err.errors(include_url=False)[0]
            log.info("mcp_sse_message_refused", session=given, error=first["msg"])
            text = f"the body is not a JSON-RPC message: {first['msg']}"
            await json_error(text, 400, "invalid_request")(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = session.visibility
        token = CALLER.set(session.visibility)  # the handler runs in this context (the SDK carries it)
        try:
            await self.transport.handle_post_message(scope, _replay(body), send)
        finally:
            CALLER.reset(token)

    def close(self) -> None:
        """End every open session (gateway shutdown) and refuse new ones."""
        self._closing = True
        for session in list(self.sessions.values()):
            session.scope.cancel()
