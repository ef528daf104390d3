"""Virtual key secrets: made, hashed and recognised.

A key is ``tsk-`` followed by :data:`SECRET_BYTES` random bytes in URL-safe base64
(``secrets.token_urlsafe``: 43 characters for 32 bytes, 256 bits). It is shown once, when it
is made; the store keeps only its SHA-256 hex digest and its visible :func:`prefix`.

Why a plain (unsalted, fast) hash and a dictionary lookup rather than a constant-time compare:
the secret has 256 bits of entropy, so neither a dictionary attack on the digest nor guessing
a key is possible, and a salt would only make lookups by hash impossible. The lookup compares
digests, not secrets: how long it takes can at most tell an attacker something about the
digest of the string they sent (which they can compute themselves), never about a stored key's
secret, so timing reveals nothing usable.
"""

from __future__ import annotations

import hashlib
import secrets as _secrets

KEY_PREFIX = "tsk-"
SECRET_BYTES = 32
PREFIX_CHARS = 8
"""Characters after ``tsk-`` kept visible (the key's :func:`prefix`)."""


def new_secret() -> str:
    """A fresh key: ``tsk-`` + 43 URL-safe characters (32 random bytes)."""
    return KEY_PREFIX + _secrets.token_urlsafe(SECRET_BYTES)


def digest(secret: str) -> str:
    """The stored form of ``secret``: SHA-256 hex (64 characters) of its UTF-8 bytes."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def prefix(secret: str) -> str:
    """The visible part of ``secret``: ``tsk-`` and its first :data:`PREFIX_CHARS` characters."""
    return secret[: len(KEY_PREFIX) + PREFIX_CHARS]


def is_virtual_key(value: str) -> bool:
    """Whether ``value`` is shaped like a virtual key (``tsk-`` then at least one character)."""
    return value.startswith(KEY_PREFIX) and len(value) > len(KEY_PREFIX)


def new_id(kind: str) -> str:
    """A fresh id for ``kind`` (``key`` or ``team``): ``key-`` + 16 hex characters."""
    return f"{kind}-{_secrets.token_hex(8)}"
