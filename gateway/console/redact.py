"""No console page shows a secret: the last step of every page, whatever put the secret in it.

What a page shows comes from stores that should hold no secret (virtual keys are stored as a
hash and a visible prefix; provider keys only in the environment), but a prompt, a tool result
or an error message may quote one. So every page body is passed through :class:`Redactor`:

* the gateway's own secrets, exactly (the admin keys, each enabled deployment's provider key,
  the MCP clients' keys, the trace export headers' values), raw and as HTML-escaped, are
  replaced by ``[redacted]``;
* anything shaped like a virtual key (``tsk-`` and more than the 8 characters of its visible
  prefix, :mod:`gateway.access.keygen`) is cut to ``tsk-`` and those 8 characters, then ``…``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from markupsafe import escape

from gateway.access.keygen import KEY_PREFIX, PREFIX_CHARS

MIN_SECRET_CHARS = 8
"""Secrets shorter than this are not searched for (they would match ordinary words)."""

REDACTED = "[redacted]"

VIRTUAL_KEY = re.compile(
    re.escape(KEY_PREFIX) + r"([A-Za-z0-9_\-]{" + str(PREFIX_CHARS) + r"})[A-Za-z0-9_\-]+"
)
"""A virtual key longer than its visible prefix."""


class Redactor:
    """Replaces ``secrets`` (see the module docstring) in page text."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= MIN_SECRET_CHARS:
                forms.add(secret)
                forms.add(str(escape(secret)))
        self._secrets = sorted(forms, key=len, reverse=True)  # a secret inside another: longest first

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced and every virtual key cut to its prefix."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if KEY_PREFIX in text:
            text = VIRTUAL_KEY.sub(lambda m: f"{KEY_PREFIX}{m.group(1)}…", text)
        return text
