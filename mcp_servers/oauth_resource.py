"""``/mcp`` as an OAuth 2.1 protected resource (MCP authorization spec, RFC 9728, RFC 9068).

With ``mcp.authorization`` configured (:class:`mcp_servers.config.McpAuthorization`):

* ``GET /.well-known/oauth-protected-resource`` and ``.../oauth-protected-resource/mcp`` serve
  the protected-resource metadata: ``resource`` (this gateway's ``/mcp`` URL),
  ``authorization_servers`` (the issuer), ``scopes_supported``, ``bearer_methods_supported``.
* A request to ``/mcp`` without a credential gets 401 with ``WWW-Authenticate: Bearer
  resource_metadata="<that URL>"``; an invalid token the same with ``error="invalid_token"``;
  a valid token none of whose scopes is configured 403 ``error="insufficient_scope"``.
* A bearer JWT is checked with PyJWT against the issuer's key set (fetched with ``httpx2``,
  cached ``jwks_ttl_s``, fetched again for an unknown ``kid`` at most every
  ``jwks_min_refresh_s``): signature (configured algorithms only), ``iss``, ``aud`` (this
  gateway's resource URL), ``exp`` (required), ``nbf``/``iat`` with ``leeway_s``. Its scopes
  (``scope``, space-separated, or ``scp``, a list) map to the exposed tool globs it may see.

The token authenticates the caller to the gateway only: nothing of the client's request is sent
upstream (:mod:`mcp_servers.endpoint`), so a token issued for the gateway is never passed on.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import jwt
import orjson
import structlog
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.responses import Response

from gateway.errors import AuthenticationRequired
from mcp_servers.clients import KeyAuth, Visibility, authenticate, bearer, presented_keys
from mcp_servers.config import McpAuthorization, McpConfig
from mcp_servers.upstream import EnvReader

log = structlog.get_logger("turnstile.mcp.oauth")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"
FETCH_TIMEOUT_S = 10.0

JsonFetch = Callable[[str], Awaitable[Any]]
"""``await fetch(url)``: the JSON document at ``url``; raises on a transport error or a non-200."""


class BearerRefused(Exception):
    """A bearer token refused on ``/mcp``: ``status`` 401 (``error`` ``invalid_token``) or 403
    (``insufficient_scope``, ``scope`` the scopes that would do), ``description`` saying why."""

    def __init__(self, status: int, error: str, description: str, scope: str | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.scope = scope


def looks_like_jwt(token: str) -> bool:
    """Whether ``token`` has the three base64url parts of a JWS compact serialization."""
    return token.count(".") == 2 and not token.startswith("tsk-")


async def fetch_json(url: str) -> Any:
    """The JSON document at ``url`` (GET, ``FETCH_TIMEOUT_S``). Raises ``httpx2.HTTPError``."""
    async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=False) as http:
        response = await http.get(url, headers={"accept": "application/json"})
        response.raise_for_status()
        return response.json()


def resource_url(config: McpAuthorization, base_url: str) -> str:
    """This gateway's resource URL: ``config.resource``, else ``base_url`` (the request's
    ``scheme://host[:port]``) followed by ``/mcp``."""
    return config.resource or base_url.rstrip("/") + MCP_PATH


def metadata_url(resource: str) -> str:
    """The RFC 9728 §3.1 metadata URL of ``resource``: the well-known path inserted between the
    host and the resource's path (``https://gw/mcp`` -> ``https://gw/.well-known/oauth-protected-resource/mcp``)."""
    parts = urlsplit(resource)
    path = parts.path if parts.path != "/" else ""
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"


def _header_text(text: str, limit: int = 200) -> str:
    """``text`` as an ``error_description`` may carry (RFC 6750 section 3: printable ASCII
    without ``"`` and ``\\``): other characters as ``?``, at most ``limit`` characters — the
    description can quote a token's own header values (its ``kid``)."""
    kept = "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text[:limit])
    return kept + ("..." if len(text) > limit else "")


def challenge(resource: str, refused: BearerRefused | None = None) -> str:
    """The ``WWW-Authenticate`` value of a 401/403 on ``/mcp``: ``Bearer`` with
    ``resource_metadata`` and, for a refused token, ``error``, ``error_description`` and
    ``scope``."""
    parts = [f'resource_metadata="{metadata_url(resource)}"']
    if refused is not None and refused.error:
        parts.insert(0, f'error="{refused.error}"')
        parts.insert(1, f'error_description="{_header_text(refused.description)}"')
        if refused.scope:
            parts.append(f'scope="{refused.scope}"')
    return "Bearer " + ", ".join(parts)


class OAuthResource:
    """The JWT checks and the metadata of one gateway (one per process, on the MCP runtime)."""

    def __init__(
        self,
        config: McpAuthorization,
        *,
        fetch: JsonFetch = fetch_json,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.fetch = fetch
        self.clock = clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._tried_at: float | None = None  # the last fetch attempt, answered or not
        self._jwks_uri: str | None = None  # discovered once
        self._lock = anyio.Lock()

    def metadata(self, resource: str) -> dict[str, Any]:
        """The protected-resource metadata document (RFC 9728 §2) of ``resource``."""
        doc = ProtectedResourceMetadata.model_validate(
            {
                "resource": resource,
                "authorization_servers": [self.config.issuer],
                "scopes_supported": sorted(self.config.scopes),
                "bearer_methods_supported": ["header"],
                "resource_name": "Turnstile MCP gateway",
            }
        )
        out: dict[str, Any] = doc.model_dump(mode="json", exclude_none=True)
        out["resource"] = resource  # as configured, without pydantic's URL normalisation
        out["authorization_servers"] = [self.config.issuer]
        return out

    async def _jwks_url(self) -> str:
        if self.config.jwks_url:
            return self.config.jwks_url
        if self._jwks_uri is None:
            self._jwks_uri = await self._discover_jwks_url()
        return self._jwks_uri

    async def _discover_jwks_url(self) -> str:
        issuer = self.config.issuer.rstrip("/")
        parts = urlsplit(issuer)
        path = parts.path
        origin = f"{parts.scheme}://{parts.netloc}"
        last: Exception | None = None
        for url in (
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{issuer}/.well-known/openid-configuration",
        ):
            try:
                doc = await self.fetch(url)
            except Exception as err:
                last = err
                continue
            if isinstance(doc, dict) and isinstance(doc.get("jwks_uri"), str):
                return str(doc["jwks_uri"])
        raise LookupError(f"the issuer {issuer} publishes no jwks_uri ({last})")

    async def _refresh(self) -> None:
        url = await self._jwks_url()
        doc = await self.fetch(url)
        keys: dict[str, jwt.PyJWK] = {}
        for raw in doc.get("keys", []) if isinstance(doc, dict) else []:
            try:
                key = jwt.PyJWK.from_dict(raw)
            except jwt.PyJWTError:
                log.info("mcp_oauth_jwk_skipped", kid=raw.get("kid"), kty=raw.get("kty"))
                continue
            keys[str(raw.get("kid", ""))] = key
        self._keys = keys
        self._fetched_at = self.clock()
        log.info("mcp_oauth_jwks_fetched", url=url, keys=len(keys))

    async def signing_key(self, kid: str) -> jwt.PyJWK:
        """The issuer's key ``kid`` (empty: the only key of a one-key set). Raises
        :class:`BearerRefused` (401) when the key set cannot be read or has no such key."""
        async with self._lock:
            now = self.clock()
            stale = self._fetched_at is None or now - self._fetched_at >= self.config.jwks_ttl_s
            missing = kid not in self._keys and not (not kid and len(self._keys) == 1)
            # at most one attempt per jwks_min_refresh_s, answered or not: an issuer that is down
            # (or tokens naming unknown keys) cannot make every request wait on a fetch
            may_try = self._tried_at is None or now - self._tried_at >= self.config.jwks_min_refresh_s
            if (stale or missing) and may_try:
                self._tried_at = now
                try:
                    await self._refresh()
                except Exception as err:
                    log.warning("mcp_oauth_jwks_failed", issuer=self.config.issuer, error=str(err))
                    if not self._keys:
                        raise BearerRefused(
                            401, "invalid_token", "the issuer's signing keys could not be read"
                        ) from err
            elif not self._keys:
                raise BearerRefused(401, "invalid_token", "the issuer's signing keys could not be read")
            if kid in self._keys:
                return self._keys[kid]
            if not kid and len(self._keys) == 1:
                return next(iter(self._keys.values()))
        raise BearerRefused(401, "invalid_token", f"no signing key {kid!r} at the issuer")

    async def visibility(self, token: str, resource: str) -> Visibility:
        """The tools the holder of ``token`` (a JWT) may see, for the resource URL ``resource``.
        Raises :class:`BearerRefused`: 401 for a token not signed by the issuer's key with an
        accepted algorithm, of another issuer or audience, expired or not yet valid, without
        ``exp``; 403 for one without a configured scope."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as err:
            raise BearerRefused(401, "invalid_token", f"not a JWT: {err}") from err
        key = await self.signing_key(str(header.get("kid") or ""))
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(self.config.algorithms),
                audience=resource,
                issuer=self.config.issuer,
                leeway=self.config.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as err:
            raise BearerRefused(401, "invalid_token", f"token refused: {err}") from err
        granted = token_scopes(claims)
        globs: list[str] = []
        for scope in granted:
            globs += self.config.scopes.get(scope, [])
        if not globs:
            raise BearerRefused(
                403,
                "insufficient_scope",
                f"the token's scopes {sorted(granted)} grant no MCP tools of this gateway",
                " ".join(sorted(self.config.scopes)),
            )
        who = claims.get("client_id") or claims.get("azp") or claims.get("sub") or "unknown"
        return Visibility(f"oauth:{who}", tuple(dict.fromkeys(globs)))


def token_scopes(claims: dict[str, Any]) -> set[str]:
    """The scopes a token's claims grant: ``scope`` (RFC 9068, space-separated) or ``scp`` (a
    list, or a string as ``scope``; read when ``scope`` is absent or null)."""
    raw = claims.get("scope")
    if raw is None:
        raw = claims.get("scp")
    if isinstance(raw, str):
        return set(raw.split())
    if isinstance(raw, list):
        return {s for s in raw if isinstance(s, str)}
    return set()


async def judge(
    oauth: OAuthResource,
    config: McpConfig,
    read_env: EnvReader,
    headers: Any,
    keys: KeyAuth | None,
    resource: str,
) -> Visibility:
    """The visibility of a caller of ``/mcp`` when ``mcp.authorization`` is on: its bearer JWT's
    (:meth:`OAuthResource.visibility`), else its virtual key's (``keys``), else its
    ``mcp.clients`` key's. Raises :class:`BearerRefused`: 401 without ``error`` for a caller
    presenting no credential (even where ``mcp.clients`` is empty), 401 ``invalid_token`` for
    one presenting a token that is none of these, 403 for a JWT without a configured scope."""
    token = bearer(headers)
    if token and looks_like_jwt(token):
        return await oauth.visibility(token, resource)
    if not presented_keys(headers):
        raise BearerRefused(401, "", "this gateway's MCP endpoint needs a bearer token")
    if keys is not None:
        try:
            found = await keys(headers)
        except AuthenticationRequired as err:
            raise BearerRefused(401, "invalid_token", err.message) from err
        if found is not None:
            return found
    if config.clients:
        matched = authenticate(config, read_env, headers)
        if matched is not None:
            return matched
    raise BearerRefused(401, "invalid_token", "the bearer token is not a token or key of this gateway")


async def admit_or_refuse(
    oauth: OAuthResource,
    config: McpConfig,
    read_env: EnvReader,
    headers: Any,
    keys: KeyAuth | None,
    base_url: str,
) -> Visibility | Response:
    """:func:`judge` for a request that reached the gateway at ``base_url``, its refusal as the
    401/403 JSON response carrying the ``WWW-Authenticate`` challenge (one log line)."""
    resource = resource_url(oauth.config, base_url)
    try:
        return await judge(oauth, config, read_env, headers, keys, resource)
    except BearerRefused as refused:
        log.info("mcp_bearer_refused", status=refused.status, error=refused.error, reason=refused.description)
        body = {"error": refused.error or "invalid_request", "error_description": refused.description}
        response = Response(orjson.dumps(body), status_code=refused.status, media_type="application/json")
        response.headers["WWW-Authenticate"] = challenge(resource, refused)
        return response


def step_up(
    oauth: OAuthResource, token: str, visibility: Visibility, tool: str, exists: bool
) -> BearerRefused | None:
    """For a JWT caller's ``tools/call`` of ``tool`` (named in its ``Mcp-Name`` header) that its
    scopes do not cover: the 403 ``insufficient_scope`` whose ``scope`` is the token's scopes
    plus those that would cover it (the MCP spec's scope challenge, so a client can step up).
    None when the call is covered, the tool does not exist, or no configured scope covers it
    (then it stays hidden, answered as unknown)."""
    if not exists or visibility.allows(tool):
        return None
    needed = [s for s, globs in oauth.config.scopes.items() if any(fnmatchcase(tool, g) for g in globs)]
    if not needed:
        return None
    granted = token_scopes(jwt.decode(token, options={"verify_signature": False}))  # verified by judge
    scope = " ".join(sorted(granted | set(needed)))
    return BearerRefused(403, "insufficient_scope", f"tool {tool!r} needs one of the scopes {needed}", scope)
