"""``GET /metrics`` after a scripted mix of turns: each counter moved by exactly what was sent
(read with the Prometheus text parser, as deltas: the session's gateway is shared)."""

from __future__ import annotations

import anthropic
import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families
from standins.tool_answers import text_answer
from standins.topology import FALLBACK, MATRIX
from standins.upstream import UpstreamStandin, http_error, replay

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
ANTHROPIC_500 = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}


def _scrape(gateway_url: str) -> Samples:
    got = httpx.get(f"{gateway_url}/metrics", timeout=10)
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(got.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _delta(before: Samples, after: Samples) -> Samples:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


Key = tuple[str, tuple[tuple[str, str], ...]]


def _turns(dialect: str, deployment: str, status: int, guard: str = "ok") -> Key:
    labels = {"dialect": dialect, "deployment": deployment, "status": str(status), "guard_outcome": guard}
    return ("turnstile_turns_total", tuple(sorted(labels.items())))


def test_metrics_count_turns_tokens_attempts_fallbacks_and_refusals_exactly(
    upstream: UpstreamStandin, oai: openai.OpenAI, ant: anthropic.Anthropic, gateway_url: str
) -> None:
    oa, an = MATRIX["openai_chat"][0], MATRIX["anthropic_messages"][0]
    upstream.script(
        replay(text_answer("openai_chat", "one", stream=False), api="openai_chat"),
        replay(text_answer("openai_chat", "two", stream=False), api="openai_chat"),
        replay(text_answer("anthropic_messages", "three", stream=True), api="anthropic_messages"),
        http_error(500, ANTHROPIC_500, model="claude-primary"),
        replay(text_answer("openai_chat", "four", stream=False), model="gpt-backup"),
    )
    before = _scrape(gateway_url)
    for _ in range(2):
        oai.chat.completions.create(model=oa, messages=[{"role": "user", "content": "hi"}])
    with ant.messages.stream(model=an, max_tokens=50, messages=[{"role": "user", "content": "hi"}]) as s:
        assert s.get_final_text() == "three"
    oai.chat.completions.create(model=FALLBACK, messages=[{"role": "user", "content": "hi"}])
    bad = httpx.post(
        f"{gateway_url}/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
        timeout=10,
    )
    assert bad.status_code == 400
    d = _delta(before, _scrape(gateway_url))

    assert d[_turns("openai_chat", oa, 200)] == 2
    assert d[_turns("anthropic_messages", an, 200)] == 1
    assert d[_turns("openai_chat", "oa-backup", 200)] == 1
    assert d[_turns("openai_chat", "none", 400, "invalid_request")] == 1
    assert sum(v for (name, _), v in d.items() if name == "turnstile_turns_total") == 5
    assert d[("turnstile_tokens_total", (("deployment", oa), ("type", "input")))] == 2 * 20
    assert d[("turnstile_tokens_total", (("deployment", oa), ("type", "output")))] == 2 * 10
    fallback = (("from_deployment", "an-primary"), ("to_deployment", "oa-backup"))
    assert d[("turnstile_fallbacks_total", fallback)] == 1
    assert d[("turnstile_upstream_attempts_total", (("deployment", "an-primary"), ("status", "500")))] == 1
    ttfb = (("deployment", an), ("dialect", "anthropic_messages"))
    assert d[("turnstile_time_to_first_byte_seconds_count", ttfb)] == 1
    whole = (("deployment", oa), ("dialect", "openai_chat"))
    assert ("turnstile_time_to_first_byte_seconds_count", whole) not in d
    circuit = _scrape(gateway_url)
    assert circuit[("turnstile_deployment_circuit_state", (("deployment", oa), ("state", "closed")))] == 1
