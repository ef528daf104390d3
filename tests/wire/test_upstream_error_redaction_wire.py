"""An upstream error body that quotes a credential (the key the gateway sent, a client's bearer
token, a virtual key) reaches neither the client, nor the transcript, nor the log: the text is
redacted where the upstream error enters (:mod:`gateway.redaction`)."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from standins.topology import MATRIX
from standins.upstream import OPENAI, UpstreamStandin, http_error
from standins.wirekit import transcript_row

LEAKED = (
    "sk-proj-" + "Zz9Yy8Xx" * 6,
    "tsk-ABCDEFGH" + "secretpart" * 4,
    "AIzaSy" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J",
)


def test_an_upstream_error_quoting_keys_reaches_client_transcript_and_log_redacted(
    upstream: UpstreamStandin, oai: openai.OpenAI, db_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    quoted = f"Incorrect API key provided: {LEAKED[0]} (for {LEAKED[1]}; Authorization: Bearer {LEAKED[2]})"
    upstream.script(
        http_error(401, {"error": {"message": quoted, "type": "invalid_request_error"}}, api=OPENAI)
    )
    with pytest.raises(openai.AuthenticationError) as refused:
        oai.chat.completions.create(model=MATRIX[OPENAI][0], messages=[{"role": "user", "content": "hi"}])
    body = refused.value.response.text
    row = transcript_row(db_path, refused.value.response.headers["x-turnstile-request-id"])
    logged = capfd.readouterr()
    assert "Incorrect API key provided: [redacted]" in body
    for secret in LEAKED:
        assert secret not in body
        assert secret not in (row["error"] or "")
        assert secret not in logged.out + logged.err
    assert "tsk-ABCDEFGH…" in body
