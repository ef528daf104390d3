"""A concurrent burst through the real gateway against a failing primary: every turn reaches
the healthy fallback (the retry budget does not starve a failover), the primary's circuit opens
so later turns go straight to the fallback, and against an alias whose every deployment fails
the upstream attempts stay bounded (what the retry budget protects).

The primary's answers are held until the whole burst has reached it, so every turn of the
burst was routed while the primary still looked healthy: the case of a fresh process hit by a
burst, made deterministic."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import openai
from standins import recordings
from standins.topology import FALLBACK
from standins.upstream import Answer, Gate, Received, UpstreamStandin, held, http_error, replay

from routers.health import RetryBudget

BURST = 64
OPENAI_503 = {"error": {"message": "The server is overloaded", "type": "server_error", "param": None}}


def _hold_primary_until_the_burst_arrived(upstream: UpstreamStandin) -> list[Answer]:
    """``BURST`` 429 answers of the primary, each held until ``BURST`` requests reached it (or
    the gates' bound passes)."""
    gates = [Gate(timeout_s=10.0) for _ in range(BURST)]
    seen = 0
    lock = threading.Lock()

    def on_request(rec: Received) -> None:
        nonlocal seen
        if rec.model != "claude-primary":
            return
        with lock:
            seen += 1
            if seen == BURST:
                for g in gates:
                    g.release()

    upstream.on_request = on_request
    return [
        held(http_error(429, recordings.anthropic_rate_limited(), model="claude-primary"), gate)
        for gate in gates
    ]


async def _burst(gateway_url: str, n: int) -> list[Any]:
    """``n`` concurrent non-streaming turns on the fallback alias; each result is the raw
    response or the SDK's exception."""
    client = openai.AsyncOpenAI(
        base_url=f"{gateway_url}/v1", api_key="sk-client-key", max_retries=0, timeout=30
    )
    try:

        async def one(i: int) -> Any:
            try:
                return await client.chat.completions.with_raw_response.create(
                    model=FALLBACK, messages=[{"role": "user", "content": f"burst {i}"}]
                )
            except openai.APIStatusError as err:
                return err

        return await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await client.close()


def _served_by(results: list[Any]) -> list[str]:
    return [
        r.headers.get("x-turnstile-deployment", "?")
        if not isinstance(r, Exception)
        else f"error {r.status_code}"
        for r in results
    ]


def test_a_burst_against_a_rate_limited_primary_is_served_by_the_fallback(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    backup = recordings.common("openai_chat", "simple", False)[0]
    upstream.script(*_hold_primary_until_the_burst_arrived(upstream))
    upstream.script(*(replay(backup, model="gpt-backup") for _ in range(BURST + 1)))

    served = _served_by(asyncio.run(_burst(gateway_url, BURST)))

    assert served == ["oa-backup"] * BURST, {s: served.count(s) for s in set(served)}
    assert len(upstream.requests(model="claude-primary")) == BURST
    assert len(upstream.requests(model="gpt-backup")) == BURST
    # The primary kept failing: its circuit is open, the next turn goes straight to the fallback.
    after = _served_by(asyncio.run(_burst(gateway_url, 1)))
    assert after == ["oa-backup"]
    assert len(upstream.requests(model="claude-primary")) == BURST, "the open circuit keeps it out"


def test_a_burst_against_an_alias_whose_every_deployment_fails_stays_bounded(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    budget = RetryBudget()
    upstream.script(*_hold_primary_until_the_burst_arrived(upstream))
    upstream.script(*(http_error(503, OPENAI_503, model="gpt-backup") for _ in range(3 * BURST)))

    first = _served_by(asyncio.run(_burst(gateway_url, BURST)))

    assert all(s.startswith("error") for s in first), first
    primary = len(upstream.requests(model="claude-primary"))
    backup = len(upstream.requests(model="gpt-backup"))
    assert primary == BURST
    # Each deployment is asked at most once per turn: the burst reached the fallback while it
    # had not failed yet, and every fallback after its first failure needed a budget token.
    assert 1 <= backup <= BURST

    # Both deployments are now known to fail: a second burst asks the primary once per turn
    # (its circuit is open, but nothing else is healthy) and the failing fallback only as far
    # as the retry budget allows.
    upstream.on_request = None
    upstream.script(
        *(http_error(429, recordings.anthropic_rate_limited(), model="claude-primary") for _ in range(BURST))
    )
    second = _served_by(asyncio.run(_burst(gateway_url, BURST)))

    assert all(s.startswith("error") for s in second), second
    assert len(upstream.requests(model="claude-primary")) - primary == BURST
    # The budget's own bound: it starts full (cap) and each turn of the burst deposits ratio.
    assert len(upstream.requests(model="gpt-backup")) - backup <= budget.cap + budget.ratio * BURST, (
        "fallbacks onto a failing deployment are bounded by the retry budget"
    )
