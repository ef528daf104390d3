"""The console's plumbing: its shared state, the headers every answer carries, the log-in check
in front of every page, the static files, and rendering a page.

Every answer under ``/ui`` carries a strict Content-Security-Policy (:data:`CSP`: scripts,
styles, images and requests from the gateway itself only; no inline script or style, no
framing, forms post only back to it), ``X-Content-Type-Options: nosniff``,
``Referrer-Policy: same-origin`` (no console URL, which may hold a search, reaches another
site) and, for pages, ``Cache-Control: no-store`` (they show prompts and answers). Every page
body is passed through the :class:`~gateway.console.redact.Redactor`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import structlog
from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.access.guessing import KeyGuesses
from gateway.config import GatewayConfig
from gateway.console.auth import COOKIE, ConsoleAuth
from gateway.console.redact import Redactor
from gateway.console.render import make_environment, query
from gateway.console.transcript_reader import TranscriptReader
from gateway.errors import InvalidRequest, TurnstileError

log = structlog.get_logger("turnstile.console")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy of every console answer."""

STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

NAV = (
    ("overview", "/ui", "Overview"),
    ("deployments", "/ui/deployments", "Deployments"),
    ("turns", "/ui/turns", "Requests"),
    ("sessions", "/ui/sessions", "Sessions"),
    ("mcp", "/ui/mcp", "MCP servers"),
    ("audit", "/ui/audit", "Audit"),
    ("access", "/ui/access", "Keys"),
)
"""The navigation: (section, path, label)."""


class NotFound(TurnstileError):
    """A console page for something that does not exist (HTTP 404)."""

    status = 404
    kind = "not_found"


@dataclass
class ConsoleState:
    """What the console's pages share (on ``app.state.console``): the configuration, the
    log-in check, the transcript reader, the templates, the redactor, the wrong admin keys per
    address (shared with every other place that takes the admin key: ``app.state.key_guesses``)
    and the static files (name -> (bytes, content type, version hash))."""

    config: GatewayConfig
    auth: ConsoleAuth
    reader: TranscriptReader
    redact: Redactor
    templates: Environment = field(default_factory=make_environment)
    throttle: KeyGuesses = field(default_factory=KeyGuesses)
    static: dict[str, tuple[bytes, str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.static:
            self.static = load_static()

    async def close(self) -> None:
        """Close the transcript reader."""
        await self.reader.close()


def load_static() -> dict[str, tuple[bytes, str, str]]:
    """The files of ``gateway/console/static`` served at ``/ui/static/<name>``: name -> (bytes,
    content type, the first 12 hex characters of their SHA-256, for cache-busting URLs)."""
    out = {}
    for item in resources.files("gateway.console").joinpath("static").iterdir():
        suffix = "." + item.name.rpartition(".")[2]
        if suffix in STATIC_TYPES and item.is_file():
            data = item.read_bytes()
            out[item.name] = (data, STATIC_TYPES[suffix], hashlib.sha256(data).hexdigest()[:12])
    return out


def state(request: Request) -> ConsoleState:
    """The console state of the app serving ``request``."""
    return request.app.state.console  # type: ignore[no-any-return]


def secure_headers(response: Response, *, cache: bool = False) -> Response:
    """``response`` with the headers of the module docstring."""
    h = response.headers
    h["content-security-policy"] = CSP
    h["x-content-type-options"] = "nosniff"
    h["referrer-policy"] = "same-origin"
    h["x-frame-options"] = "DENY"
    h["cross-origin-opener-policy"] = "same-origin"
    if not cache:
        h["cache-control"] = "no-store"
    return response


def session_token(request: Request) -> str | None:
    """The session cookie's value, when the request has one."""
    return request.cookies.get(COOKIE)


def render(
    request: Request,
    template: str,
    *,
    title: str,
    section: str | None = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
    **context: Any,
) -> Response:
    """The page ``template`` with ``context`` and what every page shows (title, navigation,
    the log-out form's CSRF token, static file URLs), redacted, with the security headers."""
    st = state(request)
    token = session_token(request)
    signed_in = st.auth.valid(token)
    body = st.templates.get_template(template).render(
        title=title,
        section=section,
        nav=NAV if signed_in else (),
        csrf=st.auth.csrf(token) if signed_in and token else "",
        static={name: f"/ui/static/{name}?v={v[2]}" for name, v in st.static.items()},
        path=request.url.path,
        **context,
    )
    response = Response(st.redact(body), status, headers=headers, media_type="text/html")
    return secure_headers(response)


def error_page(request: Request, err: TurnstileError) -> Response:
    """``err`` as a page with its status (its message names the field or id)."""
    return render(
        request,
        "error.html",
        title=f"{err.status}: {err.kind.replace('_', ' ')}",
        message=err.message,
        status=err.status,
    )


Page = Callable[[Request], Awaitable[Response]]


def signed_in(page: Page) -> Page:
    """``page`` behind the log-in: without an admin key configured, 503 and how to configure
    one; without a valid session, a redirect to the log-in form (for an htmx request, an
    ``HX-Redirect`` there); a :class:`TurnstileError` from the page becomes its error page,
    any other exception a logged 500 page (naming only its type: a store's message may quote
    a connection string)."""

    async def endpoint(request: Request) -> Response:
        st = state(request)
        if not st.auth.configured:
            return closed(request)
        if not st.auth.valid(session_token(request)):
            target = query(
                "/ui/login", next=request.url.path + (f"?{request.url.query}" if request.url.query else "")
            )
            if request.headers.get("hx-request") == "true":
                return secure_headers(Response(status_code=401, headers={"hx-redirect": target}))
            return secure_headers(RedirectResponse(target, status_code=303))
        try:
            return await page(request)
        except TurnstileError as err:
            if not isinstance(err, InvalidRequest | NotFound):
                log.warning("console_page_failed", path=request.url.path, error=err.message)
            return error_page(request, err)
        except Exception as exc:  # a bug or a store failure: logged with its traceback, shown as a 500
            log.exception("console_page_error", path=request.url.path)
            return error_page(request, TurnstileError(f"this page failed: {type(exc).__name__}"))

    return endpoint


def closed(request: Request) -> Response:
    """The 503 page of a console without an admin key."""
    env = state(request).config.access.admin_key_env
    return render(request, "closed.html", title="The console is closed", status=503, admin_key_env=env)


async def static_file(request: Request) -> Response:
    """``GET /ui/static/{name}``: a file of the console's static folder (cached for a year when
    asked for by its versioned URL: its content hash is in ``?v=``)."""
    item = state(request).static.get(request.path_params["name"])
    if item is None:
        return secure_headers(Response("not found", 404, media_type="text/plain"))
    data, content_type, version = item
    response = Response(data, media_type=content_type)
    if request.query_params.get("v") == version:
        response.headers["cache-control"] = "public, max-age=31536000, immutable"
    else:
        response.headers["cache-control"] = "no-cache"
    return secure_headers(response, cache=True)
