"""OAuth 2.1 from the gateway to a streamable HTTP upstream (``transport.oauth``,
:class:`mcp_servers.config.UpstreamOAuth`): the gateway is the OAuth client.

The flows are the ``mcp`` SDK's (``mcp.client.auth``): discovery from the upstream's 401
(RFC 9728 protected-resource metadata, RFC 8414 authorization-server metadata), ``resource``
(RFC 8707), PKCE, scope selection and step-up, client ID metadata documents, dynamic
registration, refresh. This module adds what a gateway needs around them:

* :class:`TokenVault`: tokens and client registrations encrypted at rest (``cryptography``
  Fernet; the key in the environment variable ``mcp.token_key_env``) in the MCP store, one row
  per (server, kind); a server with ``oauth`` does not start without the key.
* renewal before expiry: a token counts as expired ``refresh_margin_s`` early (at most half its
  lifetime); a refresh token is then used, and a client-credentials token is asked for again
  before the request rather than after a 401.
* :class:`AuthorizationPrompt`: the authorization-code grant needs a person once. The
  authorization URL is shown in the server's status (``oauth.authorization_url``) and logged;
  the authorization server redirects to ``redirect_uri`` — the gateway's
  ``GET /mcp/oauth/callback`` (:mod:`mcp_servers.http_api`) — whose ``code`` and ``state``
  complete the flow. While it waits the connection's start-up timeout is suspended.
* :func:`exchange_token`: RFC 8693 token exchange for per-user delegation.

Nothing a client of ``/mcp`` sent reaches an upstream: the tokens here are the gateway's own (or,
with token exchange, issued to the gateway for one user by the upstream's authorization server).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import orjson
import structlog
from cryptography.fernet import Fernet, InvalidToken
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError, TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcp_servers.config import UpstreamOAuth
from mcp_servers.store import McpStore

log = structlog.get_logger("turnstile.mcp.upstream_oauth")

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
EXCHANGE_TIMEOUT_S = 15.0


class OAuthKeyMissing(Exception):
    """A server needs OAuth tokens stored and the encryption key is not set."""

    def __init__(self, server: str, key_env: str) -> None:
        super().__init__(
            f"MCP server {server!r} signs in with OAuth and its tokens are stored encrypted: set "
            f"{key_env} to a Fernet key (python -c 'from cryptography.fernet import Fernet; "
            f"print(Fernet.generate_key().decode())')"
        )


class TokenVault:
    """Encrypted storage of upstream OAuth secrets in ``store`` with the Fernet ``key`` (None:
    not configured, :meth:`storage` raises :class:`OAuthKeyMissing` naming ``key_env``)."""

    def __init__(self, store: McpStore, key: str | None, key_env: str) -> None:
        self.store = store
        self.key_env = key_env
        self._fernet = Fernet(key.encode()) if key else None

    def storage(self, server: str, margin_s: float = 60.0) -> EncryptedTokenStorage:
        """The ``mcp`` SDK ``TokenStorage`` of ``server``. Raises :class:`OAuthKeyMissing`."""
        if self._fernet is None:
            raise OAuthKeyMissing(server, self.key_env)
        return EncryptedTokenStorage(self.store, server, self._fernet, margin_s)

    async def forget(self, server: str) -> None:
        """Drop ``server``'s stored tokens and registration."""
        await self.store.delete_secrets(server)


class EncryptedTokenStorage(TokenStorage):
    """One server's tokens (with the time they expire) and client registration, each a Fernet
    token in the store; a row that does not decrypt (key changed) is treated as absent."""

    def __init__(self, store: McpStore, server: str, fernet: Fernet, margin_s: float) -> None:
        self.store = store
        self.server = server
        self.fernet = fernet
        self.margin_s = margin_s
        self.expires_at: float | None = None
        """When the stored access token expires (epoch seconds; None: unknown or no token)."""

    async def _load(self, kind: str) -> dict[str, Any] | None:
        blob = await self.store.load_secret(self.server, kind)
        if blob is None:
            return None
        try:
            data = orjson.loads(self.fernet.decrypt(blob))
        except InvalidToken:
            log.warning("mcp_oauth_secret_unreadable", server=self.server, kind=kind)
            return None
        return data if isinstance(data, dict) else None

    async def _save(self, kind: str, data: dict[str, Any]) -> None:
        await self.store.save_secret(self.server, kind, self.fernet.encrypt(orjson.dumps(data)))

    async def get_tokens(self) -> OAuthToken | None:
        data = await self._load("tokens")
        if data is None:
            return None
        self.expires_at = data.get("expires_at")
        return OAuthToken.model_validate(data["token"])

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        await self._save("tokens", {"token": tokens.model_dump(mode="json"), "expires_at": self.expires_at})
        log.info("mcp_oauth_tokens_stored", server=self.server, expires_in=tokens.expires_in)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        data = await self._load("client")
        return OAuthClientInformationFull.model_validate(data) if data is not None else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._save("client", client_info.model_dump(mode="json", exclude_none=True))


def renew_at(expires_at: float | None, lifetime_s: float | None, margin_s: float) -> float | None:
    """When a token expiring at ``expires_at`` (lifetime ``lifetime_s``) is renewed:
    ``margin_s`` early, at most half its lifetime early."""
    if expires_at is None:
        return None
    early = margin_s if lifetime_s is None else min(margin_s, lifetime_s / 2)
    return expires_at - early


class _Renewing:
    """Mixin over the SDK's providers: tokens renewed before they expire, across restarts."""

    context: Any
    _margin_s: float

    def _renew_early(self) -> None:
        margin = self._margin_s

        def update(token: OAuthToken) -> None:
            lifetime = float(token.expires_in) if token.expires_in is not None else None
            expires = time.time() + lifetime if lifetime is not None else None
            self.context.token_expiry_time = renew_at(expires, lifetime, margin)

        self.context.update_token_expiry = update

    def _stored_expiry(self) -> None:
        storage = self.context.storage
        if isinstance(storage, EncryptedTokenStorage) and self.context.current_tokens is not None:
            self.context.token_expiry_time = renew_at(storage.expires_at, None, self._margin_s)


class _RenewingGrant(_Renewing):
    """Mixin for the client-credentials providers: a token about to expire is replaced before
    the request that would have been refused (there is no refresh token)."""

    _initialized: bool

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        ctx = self.context
        known = self._initialized and ctx.oauth_metadata is not None and ctx.current_tokens is not None
        if known and not ctx.is_token_valid():
            async with ctx.lock:
                response = yield await self._perform_authorization()  # type: ignore[attr-defined]
                await self._handle_token_response(response)  # type: ignore[attr-defined]
        flow = super()._auth_flow(request)  # type: ignore[misc]
        outgoing = await flow.__anext__()
        while True:
            incoming = yield outgoing
            try:
                outgoing = await flow.asend(incoming)
            except StopAsyncIteration:
                return


class GatewayClientCredentials(_RenewingGrant, ClientCredentialsOAuthProvider):
    """``client_credentials`` with a secret."""

    def __init__(self, *args: Any, margin_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._margin_s = margin_s
        self._renew_early()

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[safe-super]
        self._stored_expiry()


class GatewayPrivateKeyJwt(_RenewingGrant, PrivateKeyJWTOAuthProvider):
    """``client_credentials`` authenticated with a signed JWT assertion (RFC 7523)."""

    def __init__(self, *args: Any, margin_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._margin_s = margin_s
        self._renew_early()

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[safe-super]
        self._stored_expiry()


class GatewayAuthorizationCode(_Renewing, OAuthClientProvider):
    """The authorization-code grant (pre-registered client, CIMD or dynamic registration)."""

    def __init__(
        self, *args: Any, margin_s: float, fixed_client: OAuthClientInformationFull | None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._margin_s = margin_s
        self._fixed_client = fixed_client
        self._renew_early()

    async def _initialize(self) -> None:
        await super()._initialize()
        if self._fixed_client is not None:
            self.context.client_info = self._fixed_client
        self._stored_expiry()


class AuthorizationPrompt:
    """The person in the authorization-code grant: :meth:`redirect` shows the URL,
    :meth:`callback` waits for :meth:`complete` (the gateway's callback route)."""

    def __init__(self, server: str, on_change: Callable[[bool], None] | None = None) -> None:
        self.server = server
        self.on_change = on_change
        self.url: str | None = None
        self.state: str | None = None
        self._answer: asyncio.Future[AuthorizationCodeResult] | None = None

    async def redirect(self, url: str) -> None:
        """The SDK's ``redirect_handler``: remember ``url`` (and its ``state``) for the admin."""
        self.url = url
        states = parse_qs(urlsplit(url).query).get("state") or []
        self.state = states[0] if states else None
        self._answer = asyncio.get_running_loop().create_future()
        log.warning("mcp_oauth_authorization_needed", server=self.server, authorization_url=url)
        if self.on_change is not None:
            self.on_change(True)

    async def callback(self) -> AuthorizationCodeResult:
        """The SDK's ``callback_handler``: the code the authorization server redirected with."""
        if self._answer is None:
            raise OAuthFlowError("no authorization was started")
        try:
            return await self._answer
        finally:
            self.url = None
            self._answer = None
            if self.on_change is not None:
                self.on_change(False)

    def complete(self, code: str, state: str, iss: str | None = None) -> bool:
        """Hand the redirect's ``code`` to the waiting flow; False when ``state`` is not the one
        this prompt is waiting for."""
        if self._answer is None or self._answer.done() or state != self.state:
            return False
        self._answer.set_result(AuthorizationCodeResult(code=code, state=state, iss=iss))
        return True

    def refuse(self, state: str | None, why: str) -> bool:
        """End the waiting flow with ``OAuthFlowError(why)`` (the authorization server redirected
        with an error, or the authorization could not be completed); ``state`` None ends it
        whatever state it waits for. False when no flow waits (with that state)."""
        if self._answer is None or self._answer.done() or (state is not None and state != self.state):
            return False
        self._answer.set_exception(OAuthFlowError(f"authorization refused: {why}"))
        return True


def build_auth(
    server: str,
    url: str,
    oauth: UpstreamOAuth,
    read_env: Callable[[str], str | None],
    vault: TokenVault,
    prompt: AuthorizationPrompt | None,
) -> httpx2.Auth:
    """The ``httpx2`` auth of the upstream ``server`` at ``url``. Raises
    :class:`OAuthKeyMissing`, and ``ValueError`` for a client secret variable that is unset."""
    storage = vault.storage(server, oauth.refresh_margin_s)
    secret = read_env(oauth.client_secret_env) if oauth.client_secret_env else None
    if oauth.client_secret_env and not secret:
        raise ValueError(
            f"MCP server {server!r}: the client secret variable {oauth.client_secret_env} is unset"
        )
    if oauth.grant == "client_credentials" and oauth.token_endpoint_auth_method == "private_key_jwt":
        assert oauth.client_id is not None and oauth.client_key_env is not None  # the config validator checks
        key = read_env(oauth.client_key_env)
        if not key:
            raise ValueError(f"MCP server {server!r}: client key variable {oauth.client_key_env} is unset")
        assertion = SignedJWTParameters(
            issuer=oauth.client_id,
            subject=oauth.client_id,
            signing_key=key,
            signing_algorithm=oauth.client_key_alg,
        )
        return GatewayPrivateKeyJwt(
            server_url=url,
            storage=storage,
            client_id=oauth.client_id,
            assertion_provider=assertion.create_assertion_provider(),
            scope=oauth.scope,
            issuer=oauth.issuer,
            margin_s=oauth.refresh_margin_s,
        )
    if oauth.grant == "client_credentials":
        assert oauth.client_id is not None and secret is not None  # the config validator checks
        method = (
            "client_secret_post"
            if oauth.token_endpoint_auth_method == "client_secret_post"
            else "client_secret_basic"
        )
        return GatewayClientCredentials(
            server_url=url,
            storage=storage,
            client_id=oauth.client_id,
            client_secret=secret,
            token_endpoint_auth_method=method,
            scope=oauth.scope,
            issuer=oauth.issuer,
            margin_s=oauth.refresh_margin_s,
        )
    assert prompt is not None and oauth.redirect_uri is not None
    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": "Turnstile MCP gateway",
            "redirect_uris": [oauth.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": oauth.token_endpoint_auth_method if secret else "none",
            "scope": oauth.scope,
        }
    )
    fixed = None
    if oauth.client_id is not None:
        fixed = OAuthClientInformationFull.model_validate(
            {
                **metadata.model_dump(mode="json", exclude_none=True),
                "client_id": oauth.client_id,
                "client_secret": secret,
                "token_endpoint_auth_method": oauth.token_endpoint_auth_method if secret else "none",
            }
        )
    return GatewayAuthorizationCode(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=prompt.redirect,
        callback_handler=prompt.callback,
        client_metadata_url=oauth.client_metadata_url,
        margin_s=oauth.refresh_margin_s,
        fixed_client=fixed,
    )


async def exchange_token(
    token_endpoint: str,
    *,
    client_id: str,
    client_secret: str,
    subject_token: str,
    resource: str,
    scope: str | None,
    auth_method: str = "client_secret_basic",
) -> OAuthToken:
    """RFC 8693: ``subject_token`` (a user's access token) exchanged at ``token_endpoint`` for an
    access token for ``resource``, the gateway authenticating as ``client_id``. Raises
    ``OAuthFlowError`` with the server's error when it refuses, ``httpx2.HTTPError`` on a
    transport failure."""
    data = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "subject_token": subject_token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "requested_token_type": ACCESS_TOKEN_TYPE,
        "resource": resource,
    }
    if scope:
        data["scope"] = scope
    auth: Any = None
    if auth_method == "client_secret_post":
        data |= {"client_id": client_id, "client_secret": client_secret}
    else:
        auth = httpx2.BasicAuth(client_id, client_secret)
    async with httpx2.AsyncClient(timeout=EXCHANGE_TIMEOUT_S, follow_redirects=False) as http:
        response = await http.post(token_endpoint, data=data, auth=auth)
    if response.status_code != 200:
        raise OAuthFlowError(f"token exchange refused ({response.status_code}): {response.text[:300]}")
    return OAuthToken.model_validate(response.json())


class Delegation:
    """Per-user delegation (RFC 8693) for one upstream: the caller's token exchanged for one of
    the upstream's authorization server, cached per caller token until ``margin_s`` before it
    expires (at most :data:`MAX_DELEGATED` at a time)."""

    def __init__(self, server: str, oauth: UpstreamOAuth, read_env: Callable[[str], str | None]) -> None:
        assert oauth.token_exchange is not None and oauth.client_id is not None
        self.server = server
        self.oauth = oauth
        self.read_env = read_env
        self._cache: dict[str, tuple[float, str]] = {}

    async def token_for(self, subject_token: str, provider: OAuthClientProvider | None) -> str:
        """An access token for the upstream acting for the holder of ``subject_token``. The
        token endpoint and resource are those the gateway's own sign-in discovered
        (``provider``). Raises ``OAuthFlowError`` (no discovery yet, exchange refused)."""
        import hashlib

        key = hashlib.sha256(subject_token.encode()).hexdigest()
        now = time.time()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        ctx = provider.context if provider is not None else None
        if ctx is None or ctx.oauth_metadata is None:
            raise OAuthFlowError(
                f"MCP server {self.server!r}: its authorization server is not discovered yet"
            )
        secret = self.read_env(self.oauth.client_secret_env or "") or ""
        assert self.oauth.token_exchange is not None and self.oauth.client_id is not None
        token = await exchange_token(
            str(ctx.oauth_metadata.token_endpoint),
            client_id=self.oauth.client_id,
            client_secret=secret,
            subject_token=subject_token,
            resource=ctx.get_resource_url(),
            scope=self.oauth.token_exchange.scope,
            auth_method=self.oauth.token_endpoint_auth_method,
        )
        lifetime = float(token.expires_in) if token.expires_in is not None else 300.0
        renew = renew_at(now + lifetime, lifetime, self.oauth.refresh_margin_s) or now
        if len(self._cache) >= MAX_DELEGATED:
            self._cache.clear()
        self._cache[key] = (renew, token.access_token)
        log.info("mcp_oauth_token_exchanged", server=self.server, expires_in=token.expires_in)
        return token.access_token


MAX_DELEGATED = 1024
