"""The console's routes, mounted by :func:`gateway.server.create_app`, and its state.

==========================  =====================================================
``GET /ui``                 overview (:mod:`gateway.console.overview`)
``GET /ui/deployments``     deployments and their health (:mod:`.deployments`)
``GET /ui/turns``           the request log (:mod:`.turns`)
``GET /ui/turns/{id}``      one turn (:mod:`.turn`)
``GET /ui/sessions[/{id}]`` sessions and a session's tree (:mod:`.sessions`)
``GET /ui/mcp``             MCP servers and tools (:mod:`.mcp`)
``GET /ui/audit``           confirmations and the audit logs (:mod:`.audit`)
``GET /ui/access``          keys, teams and budgets (:mod:`.keys`)
``GET|POST /ui/login``      log in; ``POST /ui/logout``: log out (:mod:`.login`)
``GET /ui/static/{name}``   the stylesheet and htmx (:mod:`.web`)
==========================  =====================================================

Every page but the log-in form needs the session cookie (:func:`gateway.console.web.signed_in`).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.access.guessing import KeyGuesses
from gateway.config import GatewayConfig
from gateway.console.audit import audit_page
from gateway.console.auth import ConsoleAuth
from gateway.console.deployments import deployments_page
from gateway.console.keys import keys_page
from gateway.console.login import login, login_form, logout
from gateway.console.mcp import mcp_page
from gateway.console.overview import overview_page
from gateway.console.redact import Redactor
from gateway.console.sessions import session_page, sessions_page
from gateway.console.transcript_reader import TranscriptReader
from gateway.console.turn import turn_page
from gateway.console.turns import turns_page
from gateway.console.web import ConsoleState, NotFound, secure_headers, signed_in, static_file
from gateway.workers_state import WorkersState


def make_state(
    config: GatewayConfig,
    transcript: str,
    admin_key: str | None,
    secrets: Iterable[str | None],
    guesses: KeyGuesses | None = None,
    login_token: str | None = None,
    shared: WorkersState | None = None,
) -> ConsoleState:
    """The console's state for a gateway with ``config``, its transcript at ``transcript`` (a
    file path or a PostgreSQL URL), the admin key (None: the console is closed), the
    ``secrets`` no page may show (:mod:`gateway.console.redact`) and the wrong admin keys per
    address the gateway counts (``guesses``; default: the console's own) and, without an admin
    key, the one-time login token (``login_token``: :mod:`gateway.console.auth`), used once
    across the worker processes sharing ``shared`` (:mod:`gateway.workers_state`)."""
    return ConsoleState(
        config=config,
        auth=ConsoleAuth(
            admin_key,
            config.console.session_hours * 3600,
            login_token=login_token,
            claim=None if shared is None else shared.claim,
        ),
        reader=TranscriptReader(transcript),
        redact=Redactor([admin_key, login_token, *secrets]),
        throttle=guesses if guesses is not None else KeyGuesses(),
    )


async def _login(request: Request) -> Response:
    return await (login if request.method == "POST" else login_form)(request)


async def _slash(request: Request) -> Response:
    return secure_headers(RedirectResponse("/ui", status_code=308))


async def _missing(request: Request) -> Response:
    raise NotFound(f"no console page at {request.url.path}")


def routes() -> list[BaseRoute]:
    """The console's routes (see the module docstring)."""
    return [
        Route("/ui", signed_in(overview_page), methods=["GET"]),
        Route("/ui/", _slash, methods=["GET"]),
        Route("/ui/login", _login, methods=["GET", "POST"]),
        Route("/ui/logout", logout, methods=["POST"]),
        Route("/ui/static/{name}", static_file, methods=["GET"]),
        Route("/ui/deployments", signed_in(deployments_page), methods=["GET"]),
        Route("/ui/turns", signed_in(turns_page), methods=["GET"]),
        Route("/ui/turns/{request_id}", signed_in(turn_page), methods=["GET"]),
        Route("/ui/sessions", signed_in(sessions_page), methods=["GET"]),
        Route("/ui/sessions/{session_id}", signed_in(session_page), methods=["GET"]),
        Route("/ui/mcp", signed_in(mcp_page), methods=["GET"]),
        Route("/ui/audit", signed_in(audit_page), methods=["GET"]),
        Route("/ui/access", signed_in(keys_page), methods=["GET"]),
        Route("/ui/{rest:path}", signed_in(_missing), methods=["GET"]),
    ]
