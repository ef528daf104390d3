"""Who may open the console: the holder of the admin key, through a login form and a session cookie.

**The admin key** is the one the admin API takes (``access.admin_key_env`` names the environment
variable holding it; :mod:`gateway.access.admin_api`). A gateway on loopback serves anonymous
clients, but the console shows every client's prompts and answers, and any local process or
user (or a web page the operator visits, through a rebound DNS name) can reach a loopback port;
so an open console is never the default. Without an admin key:

* on a loopback address, ``turnstile serve`` makes a random **one-time login token** (as Jupyter
  does), hands it to the app (``TURNSTILE_CONSOLE_TOKEN``) and prints
  ``http://127.0.0.1:<port>/ui/login?token=<token>``: opening that link logs the browser in
  (:meth:`ConsoleAuth.redeem`), once; the session cookie is signed under a key derived from the
  token. To log in again, restart the gateway (a new token) or configure an admin key. With
  ``--workers N`` the link works once across all the workers: the first redemption is claimed in
  the workers' shared file (:meth:`ConsoleAuth.first_use`; :mod:`gateway.workers_state`), and a
  file that cannot be written refuses the link (fail closed).
* anywhere else (or with no token), the console is closed: every page answers 503 with how to
  configure an admin key.

**The session** is a cookie (:data:`COOKIE`: ``HttpOnly``, ``SameSite=Strict``, ``Path=/ui``,
``Secure`` over HTTPS) holding ``<expiry>.<nonce>.<mac>``: the expiry (epoch seconds) and a
random nonce signed with HMAC-SHA256 under a key derived from the admin key. Nothing is kept on
the server, so every worker process and every instance sharing the admin key accepts it, and
changing the admin key ends every session at once. Logging out removes the cookie from the
browser; a copy taken before stays valid until it expires (``console.session_hours``).

**CSRF**: every form that changes state (log in, log out) carries a token that a page of
another site cannot know: for log-out, an HMAC of the session cookie; for log-in, the value of
a short-lived ``SameSite=Strict`` cookie set with the form (a double submit). A ``POST`` whose
``Origin`` (or ``Sec-Fetch-Site``) says it came from another site is refused outright.

**Guessing**: wrong admin keys are counted per client address with every other place that
takes the admin key (:mod:`gateway.access.guessing`: logged, audited, then 429 for a while).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger("turnstile.console")

COOKIE = "turnstile_console"
"""The session cookie's name."""

LOGIN_COOKIE = "turnstile_console_login"
"""The log-in form's CSRF cookie's name."""

LOGIN_COOKIE_S = 1800
"""How long a log-in form may stay open (seconds): its CSRF cookie's lifetime."""


def _mac(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


class ConsoleAuth:
    """Session tokens and CSRF tokens bound to ``admin_key``, else to the one-time
    ``login_token`` (neither: the console is closed).

    ``session_s`` is a session's lifetime (seconds); ``clock`` the wall clock (epoch seconds),
    injectable for tests; ``claim``: the workers' one-time claims
    (:meth:`gateway.workers_state.WorkersState.claim`; None: one process, nothing to claim)."""

    def __init__(
        self,
        admin_key: str | None,
        session_s: float,
        clock: Callable[[], float] = time.time,
        login_token: str | None = None,
        claim: Callable[[str, float], Awaitable[bool]] | None = None,
    ) -> None:
        self._claim = claim
        self._admin_key = admin_key.encode() if admin_key else None
        self._login_token = login_token.encode() if login_token and not admin_key else None
        secret = self._admin_key or self._login_token
        self._key = (
            hmac.new(secret, b"turnstile console session v1", hashlib.sha256).digest() if secret else b""
        )
        self.session_s = session_s
        self.clock = clock

    @property
    def configured(self) -> bool:
        """Whether anyone may log in: an admin key is configured, or a one-time login token
        (used or not)."""
        return bool(self._key)

    @property
    def by_token(self) -> bool:
        """Whether the log-in is the one-time login link (no admin key is configured)."""
        return self._admin_key is None and bool(self._key)

    def redeem(self, given: str | None) -> bool:
        """Whether ``given`` is the one-time login token, not used before (compared in constant
        time); it is used from then on."""
        if self._login_token is None or not given:
            return False
        if not hmac.compare_digest(given.encode(), self._login_token):
            return False
        self._login_token = None
        return True

    async def first_use(self) -> bool:
        """After :meth:`redeem` said yes in this process: whether no other worker process
        redeemed the token before (claimed in the workers' file; False when the file fails)."""
        if self._claim is None:
            return True
        name = "console login " + _mac(self._key, "one-time login")[:32]  # never the token itself
        try:
            return await self._claim(name, self.clock())
        except sqlite3.Error as err:
            log.error("console_login_unclaimed", error=f"{type(err).__name__}: {err}")
            return False

    def is_admin_key(self, given: str | None) -> bool:
        """Whether ``given`` is the admin key (compared in constant time; False when none is
        configured)."""
        if self._admin_key is None or not given:
            return False
        return hmac.compare_digest(given.encode(), self._admin_key)

    def issue(self) -> str:
        """A new session token, valid for ``session_s`` seconds from now."""
        expires = int(self.clock() + self.session_s)
        nonce = os.urandom(16).hex()
        body = f"{expires}.{nonce}"
        return f"{body}.{_mac(self._key, body)}"

    def valid(self, token: str | None) -> bool:
        """Whether ``token`` is a session token signed under the current admin key and not
        expired."""
        if not token or not self._key or len(token) > 200:
            return False
        expires, _, rest = token.partition(".")
        nonce, _, mac = rest.partition(".")
        if not expires.isdigit() or not nonce or not mac:
            return False
        if not hmac.compare_digest(mac, _mac(self._key, f"{expires}.{nonce}")):
            return False
        return int(expires) > self.clock()

    def csrf(self, token: str) -> str:
        """The CSRF token of the session ``token`` (for the forms of its pages)."""
        return _mac(self._key, f"csrf:{token}")[:32]

    def csrf_ok(self, token: str | None, given: str | None) -> bool:
        """Whether ``given`` is the CSRF token of the valid session ``token``."""
        if not given or token is None or not self.valid(token):
            return False
        return hmac.compare_digest(given, self.csrf(token))
