"""Secret detection: the provider key formats the gateway knows, plus ``detect-secrets``'
pattern detectors (its maintained regular expressions, run over the text with positions).

Provider formats (each a ``kind``):

* ``openai_key``: ``sk-`` / ``sk-proj-`` / ``sk-svcacct-`` / ``sk-admin-`` + at least 32 key
  characters, letters and digits mixed (the legacy 48-character keys and project keys);
* ``anthropic_key``: ``sk-ant-<type><nn>-`` + at least 32 characters (``sk-ant-api03-...``);
* ``google_api_key``: ``AIza`` + 35 characters;
* ``aws_access_key_id``: ``AKIA`` / ``ASIA`` + 16 upper-case letters and digits;
* ``github_token``: ``ghp_`` / ``gho_`` / ``ghu_`` / ``ghs_`` / ``ghr_`` + 36, or
  ``github_pat_`` + at least 50;
* ``slack_token``: ``xoxa-`` / ``xoxb-`` / ``xoxp-`` / ``xoxo-`` / ``xoxs-`` / ``xoxr-`` ...;
* ``private_key``: a whole ``-----BEGIN ... PRIVATE KEY-----`` ... ``-----END ...-----`` block;
* ``jwt``: three base64url segments whose header decodes to a JSON object with ``alg``;
* ``turnstile_key``: this gateway's virtual keys, ``tsk-`` + 43 URL-safe characters.

``detect-secrets`` adds its detectors for AWS, Azure storage, basic-auth URLs, Discord, GitLab,
Mailchimp, npm, PyPI, SendGrid, Slack webhooks, Square, Stripe, Telegram and Twilio (its keyword
and high-entropy detectors are not used: they flag hashes, UUIDs and ordinary assignments).

Near-misses are not secrets: a match that is a placeholder (``EXAMPLE``, ``xxxx``, ``your``,
``<...>``, at most 4 distinct characters), a sequential string or a UUID (``detect-secrets``'
heuristic filters) is dropped — AWS's documented ``AKIAIOSFODNN7EXAMPLE`` and ``sk-...`` in
prose are not reported.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from re import Pattern
from typing import Any

import orjson
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string

from gateway.guardrails.findings import Finding

_B = r"(?<![A-Za-z0-9_-])"  # not inside a longer token
_E = r"(?![A-Za-z0-9_-])"
PROVIDER_PATTERNS: tuple[tuple[str, Pattern[str]], ...] = (
    ("anthropic_key", re.compile(_B + r"sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{32,}" + _E)),
    ("openai_key", re.compile(_B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}" + _E)),
    ("google_api_key", re.compile(_B + r"AIza[0-9A-Za-z_-]{35}" + _E)),
    ("aws_access_key_id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("github_token", re.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{50,})" + _E)),
    ("slack_token", re.compile(_B + r"xox[abposr]-(?:[0-9]+-)+[A-Za-z0-9-]{8,}" + _E)),
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        ),
    ),
    ("jwt", re.compile(_B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}" + _E)),
    ("turnstile_key", re.compile(_B + r"tsk-[A-Za-z0-9_-]{43}" + _E)),
)

_DETECT_SECRETS = (
    "AWSKeyDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "DiscordBotTokenDetector",
    "GitLabTokenDetector",
    "MailchimpDetector",
    "NpmDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)
_GROUP_ONE = frozenset({"BasicAuthDetector"})  # the secret is the password group, not the URL
_PLACEHOLDER = re.compile(r"example|xxxx|your[_-]|<[^>]*>|\.\.\.|\*\*\*\*|placeholder|redacted|dummy", re.I)


@functools.cache
def _library_patterns() -> tuple[tuple[str, Pattern[str], int], ...]:
    """``(kind, pattern, group)`` of the ``detect-secrets`` detectors used (kind: the
    detector's secret type in snake case, e.g. ``aws_access_key``)."""
    out: list[tuple[str, Pattern[str], int]] = []
    mapping: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
    by_name = {c.__name__: (t, c) for t, c in mapping.items()}
    for name in _DETECT_SECRETS:
        if name not in by_name:
            continue
        secret_type, cls = by_name[name]
        kind = re.sub(r"\W+", "_", secret_type.lower()).strip("_")
        group = 1 if name in _GROUP_ONE else 0
        for pattern in getattr(cls, "denylist", ()):
            out.append((kind, pattern, group))
    return tuple(out)


def _jwt_header_ok(token: str) -> bool:
    head = token.split(".", 1)[0]
    try:
        body = orjson.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error, orjson.JSONDecodeError):
        return False
    return isinstance(body, dict) and "alg" in body


def is_placeholder(value: str) -> bool:
    """Whether a matched ``value`` is an example rather than a secret: a placeholder word or
    marker, at most 4 distinct characters after its prefix, a sequential string or a UUID."""
    if _PLACEHOLDER.search(value):
        return True
    tail = max(re.split(r"[-_]", value), key=len)  # the key characters, without the prefix
    if len(set(tail)) <= 4:
        return True
    return bool(is_sequential_string(tail) or is_sequential_string(value) or is_potential_uuid(value))


def find_secrets(text: str) -> list[Finding]:
    """The secrets in ``text`` (see the module docstring), placeholders left out."""
    found: list[Finding] = []
    for kind, pattern in PROVIDER_PATTERNS:
        for m in pattern.finditer(text):
            value = m.group(0)
            if kind == "jwt" and not _jwt_header_ok(value):
                continue
            if kind != "private_key" and is_placeholder(value):
                continue
            found.append(Finding("secrets", kind, m.start(), m.end()))
    for kind, pattern, group in _library_patterns():
        for m in pattern.finditer(text):
            g = group if group <= (pattern.groups or 0) else 0
            start, end = m.span(g)
            if start < 0 or is_placeholder(m.group(g)):
                continue
            found.append(Finding("secrets", kind, start, end))
    return found
