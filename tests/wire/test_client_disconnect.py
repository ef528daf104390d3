"""A client that goes away mid-stream: the gateway stops relaying at once (it does not wait
for the upstream to finish) and records the turn as 499."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from standins import recordings
from standins.topology import MATRIX
from standins.upstream import Gate, UpstreamStandin, reset_mid_stream, stop_frame_index
from standins.wirekit import transcript_row

BODIES = {
    "openai": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    "anthropic": ("/v1/messages", {"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}),
}


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_client_gone_mid_stream_is_recorded_as_499_while_the_upstream_still_streams(
    dialect: str, upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    ex = recordings.common("openai_chat", "simple", True)[0]
    gate = Gate(timeout_s=15.0)  # the upstream keeps its stream open until released
    upstream.script(
        reset_mid_stream(ex, frames=max(1, stop_frame_index(ex) - 1), api="openai_chat", gate=gate)
    )
    path, body = BODIES[dialect]
    try:
        with httpx.stream(
            "POST",
            gateway_url + path,
            json={**body, "model": MATRIX["openai_chat"][0], "stream": True},
            timeout=10,
        ) as resp:
            assert resp.status_code == 200
            rid = resp.headers["x-turnstile-request-id"]
            assert next(resp.iter_raw())  # the first frames arrived; now the client hangs up
        row = transcript_row(db_path, rid, timeout_s=5.0)  # well before the upstream ends
    finally:
        gate.release()
    assert row["status"] == 499
