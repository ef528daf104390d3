"""The guardrail test set: real secret formats that must be caught and near-misses that must
not be. The secrets are generated here from a fixed seed in each provider's format (no real
key is committed); the near-misses are written out."""

from __future__ import annotations

import base64
import random

import orjson

_R = random.Random(17)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_URLSAFE = _ALNUM + "-_"


def _s(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def _b64(body: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(body)).decode().rstrip("=")


_PEM = "\n".join(_s(64, _ALNUM + "+/") for _ in range(6))

SECRETS: list[tuple[str, str]] = [
    ("openai legacy key", f"export OPENAI_API_KEY=sk-{_s(48)}"),
    ("openai project key", f'{{"api_key": "sk-proj-{_s(156, _URLSAFE)}"}}'),
    ("openai service account key", f"key: sk-svcacct-{_s(120, _URLSAFE)}"),
    ("anthropic key", f"ANTHROPIC_API_KEY=sk-ant-api03-{_s(93, _URLSAFE)}AA"),
    ("google api key", f"https://maps.googleapis.com/maps/api/js?key=AIza{_s(35, _URLSAFE)}"),
    ("aws access key id", f"aws_access_key_id = AKIA{_s(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}"),
    ("aws session key id", f"AccessKeyId: ASIA{_s(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}"),
    ("github classic token", f"token ghp_{_s(36)}"),
    ("github fine-grained token", f"GITHUB_TOKEN=github_pat_{_s(22)}_{_s(59)}"),
    ("github app token", f"ghs_{_s(36)}"),
    ("slack bot token", f"SLACK_BOT_TOKEN=xoxb-{_s(12, '0123456789')}-{_s(13, '0123456789')}-{_s(24)}"),
    ("slack webhook", f"https://hooks.slack.com/services/T{_s(10)}/B{_s(10)}/{_s(24)}"),
    ("rsa private key", f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM}\n-----END RSA PRIVATE KEY-----"),
    (
        "openssh private key",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_PEM}\n-----END OPENSSH PRIVATE KEY-----",
    ),
    (
        "jwt",
        "Authorization: Bearer "
        + _b64({"alg": "HS256", "typ": "JWT"})
        + "."
        + _b64({"sub": "1234", "name": "Ann", "iat": 1700000000})
        + "."
        + _s(43, _URLSAFE),
    ),
    ("turnstile virtual key", f"x-api-key: tsk-{_s(43, _URLSAFE)}"),
    ("stripe live key", f"STRIPE_KEY=sk_live_{_s(24)}"),
    ("sendgrid key", f"SG.{_s(22, _URLSAFE)}.{_s(43, _URLSAFE)}"),
    ("gitlab token", f"glpat-{_s(20, _URLSAFE)}"),
    ("basic auth url", f"postgres://admin:{_s(16)}@db.internal:5432/app"),
    ("npm token", f"//registry.npmjs.org/:_authToken=npm_{_s(36)}"),
]

NEAR_MISSES: list[tuple[str, str]] = [
    ("sk- in prose", "Secret keys use the sk- prefix; never paste one into a ticket."),
    ("sk-learn", "We trained it with sk-learn and scikit-learn 1.5."),
    ("uuid", "request id 123e4567-e89b-12d3-a456-426614174000 failed"),
    ("sha256", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
    ("git commit", "fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b"),
    ("aws documentation example", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"),
    ("placeholder openai key", "OPENAI_API_KEY=sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("your-key-here", "OPENAI_API_KEY=sk-your-key-here-replace-me-with-a-real-one-please"),
    ("ghp_ mentioned", "Classic GitHub tokens start with ghp_ and are 40 characters long."),
    ("truncated jwt", "A JWT looks like eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0... (shortened)"),
    (
        "public key block",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    ),
    ("AIza mentioned", "Google API keys begin with AIza and are 39 characters."),
    ("xoxb placeholder", "SLACK_BOT_TOKEN=xoxb-your-bot-token"),
    ("tsk- mentioned", "Virtual keys look like tsk-… and are shown once."),
    ("task id", "see task-sk-12345 and build-2024-06-01"),
    ("hashed asset url", "https://cdn.example.com/assets/app-3f9a8c7d2e1b4a6f.js"),
    ("stripe key in docs", "STRIPE_KEY=sk_live_XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("sequential", "sk-0123456789abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "base64 image prefix",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    ),
    ("url with user only", "https://user@github.com/acme/web.git"),
]

PII: list[tuple[str, str, str]] = [
    ("email", "email", "Contact ann.lee+billing@example.co.uk for invoices."),
    ("phone international", "phone", "Call +44 20 7946 0958 after 9."),
    ("phone north american", "phone", "Her number is (415) 555-0132."),
    ("credit card", "credit_card", "card 4111 1111 1111 1111 exp 12/29"),
    ("credit card dashed", "credit_card", "5500-0000-0000-0004"),
    ("iban", "iban", "IBAN: GB82 WEST 1234 5698 7654 32"),
    ("iban compact", "iban", "pay to DE89370400440532013000 today"),
    ("us ssn", "us_ssn", "SSN 123-45-6789 on file"),
]

PII_NEAR_MISSES: list[tuple[str, str]] = [
    ("order number failing luhn", "order 4111 1111 1111 1112 shipped"),
    ("date", "released on 2024-01-15 at 10:30"),
    ("ip address", "server 192.168.100.20 is down"),
    ("version", "upgrade to 3.12.4 then 2.0.1"),
    ("never issued ssn area", "test SSN 000-12-3456 and 666-12-3456 and 912-12-3456"),
    ("iban with a bad check", "GB00 WEST 1234 5698 7654 32"),
    ("email in words", "write to ann at example dot com"),
    ("isbn", "ISBN 978-3-16-148410-0"),
    ("unix time ms", "ts=1700000000000"),
    ("short number", "room 4111, floor 12"),
]
