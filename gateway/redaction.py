"""Secrets cut out of text that came from outside: the one function every upstream error text
passes through where it enters the gateway.

An upstream's error body may echo the credential it was sent (a wrong key quoted back:
``Incorrect API key provided: sk-...``), and a client, the transcript, the logs and the console
would then show it. :func:`redact_secrets` replaces anything shaped like a credential before the
text is kept anywhere; :class:`gateway.errors.UpstreamError` (its ``message`` and ``body``) and
:class:`gateway.schema.StreamError` (its ``message``) call it when they are made, so every
provider, the litellm adapter and every stream parser are covered by construction. The console
(:mod:`gateway.console.redact`) applies it to every page as well.

Shapes (each documented by its issuer):

* OpenAI keys ``sk-...``, ``sk-proj-...``, ``sk-svcacct-...``
  (https://platform.openai.com/docs/api-reference/authentication) and Anthropic keys
  ``sk-ant-api03-...`` (https://docs.anthropic.com/en/api/overview): ``sk-`` and at least 16
  key characters;
* Google API keys ``AIza`` and 35 characters (https://cloud.google.com/docs/authentication/api-keys);
* an HTTP bearer credential ``Bearer <token>`` (RFC 6750 section 2.1), whatever its issuer;
* Turnstile's virtual keys ``tsk-...`` (:mod:`gateway.access.keygen`): cut to ``tsk-`` and their
  visible prefix, then ``…`` (the prefix is what the admin API lists).
"""

from __future__ import annotations

import re

from gateway.access.keygen import KEY_PREFIX, PREFIX_CHARS

REDACTED = "[redacted]"

_PROVIDER_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|\bAIza[0-9A-Za-z_\-]{30,}")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*")
VIRTUAL_KEY = re.compile(
    re.escape(KEY_PREFIX) + r"([A-Za-z0-9_\-]{" + str(PREFIX_CHARS) + r"})[A-Za-z0-9_\-]+"
)
"""A virtual key longer than its visible prefix."""
_MARKERS = ("sk-", "AIza", "earer", "EARER", KEY_PREFIX)


def redact_secrets(text: str) -> str:
    """``text`` with every credential-shaped run (see the module docstring) replaced by
    ``[redacted]`` (a bearer token: ``Bearer [redacted]``; a virtual key: its prefix and ``…``).
    Text without any of the shapes' markers is returned as it is, without a regex pass."""
    if not any(m in text for m in _MARKERS):
        return text
    text = _PROVIDER_KEY.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    if KEY_PREFIX in text:
        text = VIRTUAL_KEY.sub(lambda m: f"{KEY_PREFIX}{m.group(1)}…", text)
    return text
