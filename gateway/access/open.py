"""Opening the access store by URL (the URL forms of :func:`gateway.sessions.open.parse_store_url`)."""

from __future__ import annotations

from gateway.access.postgres import PostgresAccessStore
from gateway.access.sqlite import SqliteAccessStore
from gateway.access.store import SqlAccessStore
from gateway.config import GatewayConfig, storage_url
from gateway.sessions.open import parse_store_url


def access_store(url: str) -> SqlAccessStore:
    """A store object (not yet opened) for ``url``: ``postgresql://...``, ``sqlite:///path``
    or a file path. Raises :class:`gateway.errors.ConfigError` for an unsupported URL."""
    backend, where = parse_store_url(url)
    if backend == "postgres":
        return PostgresAccessStore(where)
    return SqliteAccessStore(where)


async def open_access_store(config: GatewayConfig) -> SqlAccessStore:
    """Open (and migrate) the access store of ``config`` (``storage.url``, else the SQLite
    file ``server.db_path``)."""
    store = access_store(storage_url(config))
    await store.open()
    return store
