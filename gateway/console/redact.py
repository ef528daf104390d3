"""No console page shows a secret: the last step of every page, whatever put the secret in it.

What a page shows comes from stores that should hold no secret (virtual keys are stored as a
hash and a visible prefix; provider keys only in the environment), but a prompt, a tool result
or an error message may quote one. So every page body is passed through :class:`Redactor`:

* the gateway's own secrets, exactly (the admin keys, each enabled deployment's provider key,
  the MCP clients' keys, the trace export headers' values), raw and as HTML-escaped, are
  replaced by ``[redacted]``;
* anything shaped like a credential (:func:`gateway.redaction.redact_secrets`, the same
  function every upstream error text passes through: provider keys, bearer tokens, a virtual
  key cut to ``tsk-`` and the 8 characters of its visible prefix, then ``…``).
"""

from __future__ import annotations

from collections.abc import Iterable

from markupsafe import escape

from gateway.redaction import REDACTED, redact_secrets

__all__ = ["REDACTED", "Redactor"]

MIN_SECRET_CHARS = 8
"""Secrets shorter than this are not searched for (they would match ordinary words)."""


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
        """``text`` with every secret replaced and every credential-shaped run cut."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact_secrets(text)
