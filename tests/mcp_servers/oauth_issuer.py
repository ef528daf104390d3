"""An OAuth 2.1 authorization server for the tests, issuing RS256 JWT access tokens (RFC 9068)
signed with PyJWT over a key made with ``cryptography``.

Endpoints (Starlette; served by ``standins.servers.GatewayServer`` in a ``LoopThread``):

* ``GET /.well-known/oauth-authorization-server`` (RFC 8414) and ``/jwks`` (its key set);
* ``POST /token``: ``client_credentials`` (``client_secret_basic`` or ``client_secret_post``),
  ``authorization_code`` (PKCE S256 checked, ``redirect_uri`` and client checked),
  ``refresh_token`` (rotated) and RFC 8693 ``token-exchange`` (a token of this issuer exchanged
  for one for another ``resource``, ``act`` naming the client that exchanged it); ``resource``
  (RFC 8707) becomes ``aud``, ``scope`` is granted when the client may have it;
* ``GET /authorize``: approves at once and redirects to the client's ``redirect_uri`` with
  ``code`` and ``state`` (the tests' stand-in for a user clicking "allow"); a client id that
  is an ``https``/``http`` URL is a client ID metadata document (CIMD), fetched and checked.

:meth:`Issuer.mint` makes tokens directly (expired, wrong audience ...) for negative tests;
``grants`` records each token issued (grant type, client, audience, scope).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


@dataclass
class RegisteredClient:
    """A pre-registered client: its secret (None: a public client), grants, scopes, redirects."""

    secret: str | None
    grants: tuple[str, ...] = ("client_credentials",)
    scopes: tuple[str, ...] = ("mcp",)
    redirect_uris: tuple[str, ...] = ()


@dataclass
class Issuer:
    """The authorization server's state: ``url`` (its issuer, set when served), its clients and
    what it issued."""

    clients: dict[str, RegisteredClient] = field(default_factory=dict)
    url: str = ""
    token_ttl_s: int = 300
    grants: list[dict[str, Any]] = field(default_factory=list)
    kid: str = "test-key-1"

    def __post_init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._codes: dict[str, dict[str, Any]] = {}
        self._refresh: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------ tokens

    def jwks(self) -> dict[str, Any]:
        """The public key set."""
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def mint(
        self,
        *,
        aud: str,
        scope: str = "mcp",
        client_id: str = "test-client",
        ttl_s: int | None = None,
        issuer: str | None = None,
        kid: str | None = None,
        key: Any = None,
        **claims: Any,
    ) -> str:
        """A signed access token (RS256) for ``aud`` with ``scope``; ``ttl_s`` negative makes an
        expired one; ``issuer``/``kid``/``key`` override the issuer's own (for forgeries)."""
        now = int(time.time())
        body = {
            "iss": issuer or self.url,
            "sub": claims.pop("sub", client_id),
            "aud": aud,
            "client_id": client_id,
            "scope": scope,
            "iat": now,
            "exp": now + (self.token_ttl_s if ttl_s is None else ttl_s),
            "jti": secrets.token_hex(8),
            **claims,
        }
        return jwt.encode(
            body, key or self._key, algorithm="RS256", headers={"kid": kid or self.kid, "typ": "at+jwt"}
        )

    def _issue(self, grant: str, client_id: str, aud: str, scope: str, **claims: Any) -> dict[str, Any]:
        token = self.mint(aud=aud, scope=scope, client_id=client_id, **claims)
        self.grants.append({"grant": grant, "client": client_id, "aud": aud, "scope": scope, **claims})
        out: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.token_ttl_s,
            "scope": scope,
        }
        if grant in ("authorization_code", "refresh_token"):
            refresh = secrets.token_urlsafe(24)
            self._refresh[refresh] = {"client": client_id, "aud": aud, "scope": scope}
            out["refresh_token"] = refresh
        if grant == TOKEN_EXCHANGE:
            out["issued_token_type"] = ACCESS_TOKEN_TYPE
        return out

    # ------------------------------------------------------------------ endpoints

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 metadata."""
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": [
                "authorization_code",
                "client_credentials",
                "refresh_token",
                TOKEN_EXCHANGE,
            ],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "scopes_supported": sorted({s for c in self.clients.values() for s in c.scopes}),
        }

    async def _client(self, request: Request, form: dict[str, str]) -> tuple[str, RegisteredClient] | None:
        auth = request.headers.get("authorization", "")
        client_id, secret = form.get("client_id", ""), form.get("client_secret")
        if auth.lower().startswith("basic "):
            raw = base64.b64decode(auth[6:]).decode()
            client_id, _, secret = raw.partition(":")
            from urllib.parse import unquote

            client_id, secret = unquote(client_id), unquote(secret)
        client = self.clients.get(client_id) or await self._cimd(client_id)
        if client is None:
            return None
        if client.secret is not None and secret != client.secret:
            return None
        return client_id, client

    async def _cimd(self, client_id: str) -> RegisteredClient | None:
        if not client_id.startswith(("http://", "https://")):
            return None
        async with httpx2.AsyncClient(timeout=5) as http:
            doc = (await http.get(client_id)).json()
        if doc.get("client_id") != client_id:
            return None
        return RegisteredClient(
            secret=None,
            grants=("authorization_code", "refresh_token"),
            scopes=tuple((doc.get("scope") or "mcp").split()),
            redirect_uris=tuple(doc.get("redirect_uris") or ()),
        )

    def _scope(self, client: RegisteredClient, asked: str | None) -> str | None:
        """The scopes granted: those asked that the client may have (RFC 6749 §3.3 lets the
        server grant fewer); None when that leaves none."""
        wanted = (asked or " ".join(client.scopes)).split()
        granted = [s for s in wanted if s in client.scopes]
        return " ".join(granted) if granted else None

    async def token(self, request: Request) -> Response:
        """``POST /token``."""
        form = {k: str(v) for k, v in (await request.form()).items()}
        found = await self._client(request, form)
        if found is None:
            return JSONResponse({"error": "invalid_client"}, 401)
        client_id, client = found
        grant = form.get("grant_type", "")
        if grant not in client.grants:
            return JSONResponse({"error": "unauthorized_client"}, 400)
        aud = form.get("resource") or form.get("audience") or ""
        if grant == "client_credentials":
            scope = self._scope(client, form.get("scope"))
            if scope is None:
                return JSONResponse({"error": "invalid_scope"}, 400)
            return JSONResponse(self._issue(grant, client_id, aud, scope))
        if grant == "authorization_code":
            code = self._codes.pop(form.get("code", ""), None)
            if (
                code is None
                or code["client"] != client_id
                or code["redirect_uri"] != form.get("redirect_uri")
            ):
                return JSONResponse({"error": "invalid_grant"}, 400)
            verifier = form.get("code_verifier", "").encode()
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
            if challenge != code["challenge"]:
                return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, 400)
            return JSONResponse(self._issue(grant, client_id, aud or code["resource"], code["scope"]))
        if grant == "refresh_token":
            held = self._refresh.pop(form.get("refresh_token", ""), None)
            if held is None or held["client"] != client_id:
                return JSONResponse({"error": "invalid_grant"}, 400)
            return JSONResponse(self._issue(grant, client_id, aud or held["aud"], held["scope"]))
        if grant == TOKEN_EXCHANGE:
            try:
                subject = jwt.decode(
                    form.get("subject_token", ""),
                    self._key.public_key(),
                    algorithms=["RS256"],
                    issuer=self.url,
                    options={"verify_aud": False},
                )
            except jwt.PyJWTError as err:
                return JSONResponse({"error": "invalid_grant", "error_description": str(err)}, 400)
            scope = self._scope(client, form.get("scope"))
            if scope is None:
                return JSONResponse({"error": "invalid_scope"}, 400)
            return JSONResponse(
                self._issue(grant, client_id, aud, scope, sub=subject["sub"], act={"sub": client_id})
            )
        return JSONResponse({"error": "unsupported_grant_type"}, 400)

    async def authorize(self, request: Request) -> Response:
        """``GET /authorize``: approved at once (PKCE S256 required)."""
        q = request.query_params
        client_id = q.get("client_id", "")
        client = self.clients.get(client_id) or await self._cimd(client_id)
        redirect = q.get("redirect_uri", "")
        if client is None or redirect not in client.redirect_uris:
            return JSONResponse(
                {"error": "invalid_request", "error_description": "client or redirect_uri"}, 400
            )
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return JSONResponse({"error": "invalid_request", "error_description": "PKCE S256 required"}, 400)
        scope = self._scope(client, q.get("scope"))
        if scope is None:
            return JSONResponse({"error": "invalid_scope"}, 400)
        code = secrets.token_urlsafe(16)
        self._codes[code] = {
            "client": client_id,
            "redirect_uri": redirect,
            "challenge": q["code_challenge"],
            "resource": q.get("resource", ""),
            "scope": scope,
        }
        return RedirectResponse(f"{redirect}?{urlencode({'code': code, 'state': q.get('state', '')})}", 302)

    def app(self) -> Starlette:
        """The Starlette app."""
        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", lambda r: JSONResponse(self.metadata())),
                Route("/jwks", lambda r: JSONResponse(self.jwks())),
                Route("/token", self.token, methods=["POST"]),
                Route("/authorize", self.authorize, methods=["GET"]),
            ]
        )
