"""Logging in and out of the console (:mod:`gateway.console.auth` says how it is protected).

* ``GET /ui/login?next=<path>``: the form (and its CSRF cookie); without an admin key, a page
  saying to open the one-time login link ``turnstile serve`` printed.
* ``GET /ui/login?token=<token>``: the one-time login link (no admin key configured,
  :mod:`gateway.console.auth`): the right token, not used before, sets the session cookie and
  redirects (303) to ``next``; any other is a 401 page (counted as a wrong admin key).
* ``POST /ui/login``: form fields ``admin_key``, ``csrf``, ``next``; the right key sets the
  session cookie and redirects (303) to ``next`` (a console path; anything else goes to
  ``/ui``), a wrong one shows the form again (401), too many wrong ones answer 429 with
  ``retry-after``.
* ``POST /ui/logout``: form field ``csrf``; removes the session cookie, redirects to the form.

A ``POST`` from another site (its ``Origin`` or ``Sec-Fetch-Site`` says so) or without the
right CSRF token is refused (403) before anything else is read.
"""

from __future__ import annotations

import hmac
import os
import re
from urllib.parse import parse_qs, urlsplit

import structlog
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.access.guessing import TooManyKeyGuesses, client_address
from gateway.console.auth import COOKIE, LOGIN_COOKIE, LOGIN_COOKIE_S
from gateway.console.web import closed, render, secure_headers, session_token, state

log = structlog.get_logger("turnstile.console")

MAX_FORM_BYTES = 16 * 1024
"""The largest log-in or log-out form body read (bytes)."""

_SAFE_NEXT = re.compile(r"^/ui(/[^\s\\]*)?(\?[^\s\\]*)?$")


def safe_next(value: str | None) -> str:
    """``value`` when it is a path of the console (``/ui``, ``/ui/...``, with a query), else
    ``/ui``: a log-in link can never send the browser elsewhere."""
    if value and _SAFE_NEXT.match(value) and not value.startswith("//"):
        return value
    return "/ui"


def cross_site(request: Request) -> bool:
    """Whether the browser says this request came from another site: ``Sec-Fetch-Site``
    ``cross-site`` or ``same-site`` (another port or subdomain is another application), or an
    ``Origin`` whose host is not the request's ``Host``. An ``Origin`` of ``null`` (a browser
    hiding it under a strict referrer policy) says nothing: the CSRF token decides."""
    if request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        return True
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return False
    return urlsplit(origin).netloc != request.headers.get("host", "")


async def form(request: Request) -> dict[str, str]:
    """The ``application/x-www-form-urlencoded`` body (first value of each field; at most
    :data:`MAX_FORM_BYTES`, else empty)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return {}
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in fields.items() if v}


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/ui",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


def _form_page(request: Request, next_path: str, *, error: str | None = None, status: int = 200) -> Response:
    nonce = os.urandom(16).hex()
    response = render(
        request, "login.html", title="Log in", login_csrf=nonce, next=next_path, error=error, status=status
    )
    _cookie(response, request, LOGIN_COOKIE, nonce, LOGIN_COOKIE_S)
    return response


def _forbidden(request: Request, message: str) -> Response:
    return render(request, "error.html", title="403: forbidden", message=message, status=403)


async def login_form(request: Request) -> Response:
    """``GET /ui/login``."""
    st = state(request)
    if not st.auth.configured:
        return closed(request)
    next_path = safe_next(request.query_params.get("next"))
    token = request.query_params.get("token")
    if token is not None and st.auth.by_token:  # with an admin key a link means nothing: the form
        return await _redeem(request, token, next_path)
    if st.auth.valid(session_token(request)):
        return secure_headers(RedirectResponse(next_path, status_code=303))
    if st.auth.by_token:
        return render(request, "token.html", title="Log in", status=401, used=False)
    return _form_page(request, next_path)


async def _redeem(request: Request, token: str, next_path: str) -> Response:
    """The one-time login link: a session for the right, unused token; else a 401 page (the
    wrong token counted against the client address like a wrong admin key)."""
    st = state(request)
    address = client_address(request)
    store = getattr(request.app.state, "access", None)
    try:
        await st.throttle.check(address, request.url.path, store)
    except TooManyKeyGuesses as err:
        page = render(request, "token.html", title="Log in", status=429, used=True)
        page.headers["retry-after"] = str(int(err.retry_after_s))
        return page
    if not st.auth.redeem(token) or not await st.auth.first_use():
        await st.throttle.failed(address, request.url.path, store)
        return render(request, "token.html", title="Log in", status=401, used=True)
    st.throttle.succeeded(address)
    log.info("console_login", client=address, by="one-time login link")
    response = secure_headers(RedirectResponse(next_path, status_code=303))
    _cookie(response, request, COOKIE, st.auth.issue(), int(st.auth.session_s))
    return response


async def login(request: Request) -> Response:
    """``POST /ui/login``."""
    st = state(request)
    if not st.auth.configured:
        return closed(request)
    if cross_site(request):
        return _forbidden(request, "this form may only be sent from the console's own pages")
    fields = await form(request)
    expected = request.cookies.get(LOGIN_COOKIE, "")
    given = fields.get("csrf", "")
    next_path = safe_next(fields.get("next"))
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        return _form_page(request, next_path, error="The form expired; please log in again.", status=403)
    address = client_address(request)
    try:
        await st.throttle.check(address, request.url.path, getattr(request.app.state, "access", None))
    except TooManyKeyGuesses as err:
        response = _form_page(
            request, next_path, error="Too many wrong admin keys; try again in a few minutes.", status=429
        )
        response.headers["retry-after"] = str(int(err.retry_after_s))
        return response
    if not st.auth.is_admin_key(fields.get("admin_key", "").strip()):
        await st.throttle.failed(address, request.url.path, getattr(request.app.state, "access", None))
        return _form_page(request, next_path, error="That is not the admin key.", status=401)
    st.throttle.succeeded(address)
    log.info("console_login", client=address)
    response = secure_headers(RedirectResponse(next_path, status_code=303))
    _cookie(response, request, COOKIE, st.auth.issue(), int(st.auth.session_s))
    response.delete_cookie(LOGIN_COOKIE, path="/ui")
    return response


async def logout(request: Request) -> Response:
    """``POST /ui/logout``."""
    st = state(request)
    if cross_site(request):
        return _forbidden(request, "this form may only be sent from the console's own pages")
    fields = await form(request)
    if not st.auth.csrf_ok(session_token(request), fields.get("csrf")):
        return _forbidden(request, "the log-out form expired or did not come from this console")
    response = secure_headers(RedirectResponse("/ui/login", status_code=303))
    response.delete_cookie(
        COOKIE, path="/ui", secure=request.url.scheme == "https", httponly=True, samesite="strict"
    )
    return response
