"""Credentials cut out of upstream error texts (:mod:`gateway.redaction`)."""

from __future__ import annotations

import pytest

from gateway.errors import UpstreamError, UpstreamProtocolError
from gateway.redaction import redact_secrets
from gateway.schema import StreamError

OPENAI_KEY = "sk-proj-" + "A1b2C3d4" * 6
ANTHROPIC_KEY = "sk-ant-api03-" + "x9Y8z7W6" * 10
GOOGLE_KEY = "AIzaSy" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J"  # AIza and 35 characters
VIRTUAL_KEY = "tsk-ABCDEFGH" + "ijklmnop" * 4


@pytest.mark.parametrize("secret", [OPENAI_KEY, ANTHROPIC_KEY, GOOGLE_KEY, "sk-" + "0" * 48])
def test_a_provider_key_quoted_in_a_text_is_replaced(secret: str) -> None:
    text = f"Incorrect API key provided: {secret}. You can find your key at ..."
    out = redact_secrets(text)
    assert secret not in out and "[redacted]" in out and out.startswith("Incorrect API key provided: ")


def test_a_bearer_token_keeps_its_scheme_and_loses_its_value() -> None:
    out = redact_secrets('header "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc" refused')
    assert out == 'header "Authorization: Bearer [redacted]" refused'


def test_a_virtual_key_is_cut_to_its_visible_prefix() -> None:
    assert redact_secrets(f"key {VIRTUAL_KEY} unknown") == "key tsk-ABCDEFGH… unknown"


def test_text_without_credentials_is_returned_unchanged() -> None:
    text = "model 'gpt-4o' does not exist; ask-me-anything is not a model; risk-free"
    assert redact_secrets(text) is text


def test_upstream_errors_and_stream_errors_are_redacted_when_they_are_made() -> None:
    err = UpstreamError(
        f"deployment 'oa' answered 401: bad key {OPENAI_KEY}", status=401, body=f'{{"k": "{OPENAI_KEY}"}}'
    )
    assert OPENAI_KEY not in err.message and OPENAI_KEY not in (err.body or "")
    proto = UpstreamProtocolError(f"cut: {ANTHROPIC_KEY}", body=ANTHROPIC_KEY)
    assert ANTHROPIC_KEY not in proto.message and ANTHROPIC_KEY not in (proto.body or "")
    assert GOOGLE_KEY not in StreamError(kind="upstream", message=f"key={GOOGLE_KEY}").message


def test_an_unexpected_exception_quoting_a_key_becomes_a_redacted_row_error() -> None:
    from gateway.layers.record import internal_error

    err = internal_error(RuntimeError(f"client built with api_key={OPENAI_KEY}"))
    assert OPENAI_KEY not in err.message and "RuntimeError" in err.message
