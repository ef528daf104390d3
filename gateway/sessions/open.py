"""Opening a session store by URL: :func:`parse_store_url` reads the URL,
:func:`open_store` makes the backend it names (:mod:`gateway.sessions.sqlite` or
:mod:`gateway.sessions.postgres`) and opens it."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.errors import ConfigError
from gateway.sessions.postgres import PostgresSessionStore
from gateway.sessions.sqlite import SqliteSessionStore
from gateway.sessions.store import SqlSessionStore, StoreMissing

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def parse_store_url(url: str) -> tuple[str, str]:
    """``(backend, location)`` of a session store URL: ``("postgres", url)`` for
    ``postgresql://...`` / ``postgres://...``; ``("sqlite", path)`` for ``sqlite:///abs/path``
    (the path after the empty host is absolute, as in ``file:///``; ``sqlite:////abs/path`` is
    accepted too), ``sqlite://`` / ``sqlite://:memory:`` (``:memory:``) or a plain file path
    (relative to the working directory). Raises :class:`ConfigError` for any other scheme, a
    ``sqlite://host/...`` URL, or an empty URL."""
    url = url.strip()
    if not url:
        raise ConfigError("empty session store URL")
    m = _SCHEME.match(url)
    if m is None:
        return "sqlite", url
    scheme = m.group(1).lower()
    if scheme in ("postgresql", "postgres"):
        return "postgres", url
    if scheme == "sqlite":
        rest = url[m.end() :]
        if rest in ("", ":memory:"):
            return "sqlite", ":memory:"
        if not rest.startswith("/"):
            raise ConfigError(
                f"session store URL {url!r}: a sqlite URL has no host; write sqlite:///absolute/path "
                "or a plain (relative) file path"
            )
        return "sqlite", "/" + rest.lstrip("/")
    raise ConfigError(
        f"unsupported session store URL scheme {scheme!r} in {url!r}: use postgresql://host:port/db, "
        "sqlite:///absolute/path or a file path"
    )


def open_store_sync_url(url: str, *, readonly: bool = False) -> SqlSessionStore:
    """A store object (not yet opened) for ``url`` (see :func:`parse_store_url`; raises
    :class:`ConfigError` for an unsupported URL). ``readonly``: the store neither creates a
    database or file nor migrates one; a missing SQLite file raises :class:`StoreMissing`."""
    backend, where = parse_store_url(url)
    if backend == "postgres":
        return PostgresSessionStore(where, readonly=readonly)
    if readonly and (where == ":memory:" or not Path(where).is_file()):
        shown = where if where == ":memory:" else str(Path(where).resolve())
        raise StoreMissing(f"no sessions at {shown} yet")
    return SqliteSessionStore(where, readonly=readonly)


async def open_store(url: str, *, readonly: bool = False) -> SqlSessionStore:
    """Open (and, unless ``readonly``, migrate) the store at ``url`` (see
    :func:`open_store_sync_url`)."""
    store = open_store_sync_url(url, readonly=readonly)
    await store.open()
    return store
