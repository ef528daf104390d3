"""Counting turns from their transcript records (:mod:`gateway.metrics`)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from gateway.metrics import FOLD_EVERY, Metrics, circuit_gauges
from gateway.transcript import TurnRecord


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body, content_type = metrics.render()
    assert content_type.startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _record(**kw: object) -> TurnRecord:
    base: dict[str, object] = {
        "request_id": "r1",
        "ts": 0.0,
        "client_dialect": "openai_chat",
        "requested_model": "m",
        "stream": False,
        "status": 200,
        "deployment": "oa",
        "usage": {"input_tokens": 20, "output_tokens": 10, "cache_read_tokens": 5},
        "cost_usd": 0.5,
        "latency_ms": 120.0,
        "attempts": [
            {"kind": "route", "route": "oa", "policy": "ordered", "tier": None, "estimated_cost_usd": 0.25},
            {"deployment": "oa", "status": 200, "ms": 100.0},
        ],
    }
    base.update(kw)
    return TurnRecord(**base)  # type: ignore[arg-type]


def test_a_turn_counts_once_with_its_tokens_cost_attempts_and_routing_decision() -> None:
    m = Metrics()
    m.turn(_record())
    s = _samples(m)
    labels = (("deployment", "oa"), ("dialect", "openai_chat"), ("guard_outcome", "ok"), ("status", "200"))
    assert s[("turnstile_turns_total", labels)] == 1
    assert s[("turnstile_tokens_total", (("deployment", "oa"), ("type", "input")))] == 20
    assert s[("turnstile_tokens_total", (("deployment", "oa"), ("type", "cache_read")))] == 5
    assert ("turnstile_tokens_total", (("deployment", "oa"), ("type", "reasoning"))) not in s
    assert s[("turnstile_cost_usd_total", (("deployment", "oa"),))] == 0.5
    assert s[("turnstile_upstream_attempts_total", (("deployment", "oa"), ("status", "200")))] == 1
    assert s[("turnstile_routing_decisions_total", (("policy", "ordered"), ("tier", "")))] == 1
    assert s[("turnstile_routing_estimated_cost_usd_total", (("deployment", "oa"),))] == 0.25
    duration = (("deployment", "oa"), ("dialect", "openai_chat"))
    assert s[("turnstile_turn_duration_seconds_count", duration)] == 1
    assert s[("turnstile_turn_duration_seconds_sum", duration)] == 0.12


def test_a_turn_answered_after_a_failed_attempt_counts_a_fallback() -> None:
    m = Metrics()
    attempts = [
        {"deployment": "an-primary", "status": 500, "error": "boom"},
        {"deployment": "oa-backup", "status": 200, "ms": 5.0},
    ]
    m.turn(_record(deployment="oa-backup", attempts=attempts))
    m.turn(_record(deployment=None, status=502, attempts=attempts[:1]))  # nobody answered
    s = _samples(m)
    key = ("turnstile_fallbacks_total", (("from_deployment", "an-primary"), ("to_deployment", "oa-backup")))
    assert s[key] == 1
    assert s[("turnstile_upstream_attempts_total", (("deployment", "an-primary"), ("status", "500")))] == 2
    refused = (("deployment", "none"), ("dialect", "openai_chat"), ("guard_outcome", "ok"), ("status", "502"))
    assert s[("turnstile_turns_total", refused)] == 1


def test_guard_repairs_count_by_rule_and_a_stream_observes_its_first_byte() -> None:
    m = Metrics()
    repairs = [{"code": "orphan_tool_call", "id": "c1"}, {"code": "orphan_tool_call", "id": "c2"}]
    m.turn(_record(stream=True, guard_outcome="repaired", repairs=repairs), ttfb_s=0.03)
    s = _samples(m)
    assert s[("turnstile_guard_repairs_total", (("code", "orphan_tool_call"),))] == 2
    ttfb = (("deployment", "oa"), ("dialect", "openai_chat"))
    assert s[("turnstile_time_to_first_byte_seconds_count", ttfb)] == 1


def test_turns_are_folded_in_batches_without_waiting_for_a_scrape() -> None:
    m = Metrics()
    for _ in range(FOLD_EVERY):
        m.turn(_record())
    assert m._sums == {} and m._pending == 0
    value = m.turns.labels("openai_chat", "oa", "200", "ok")._value.get()
    assert value == FOLD_EVERY


def test_mcp_calls_trust_decisions_and_limit_rejections_are_counted() -> None:
    m = Metrics()
    m.tool_call("git", "git_status", "ok", 0.2)
    m.trust_decision("git", "confirm", "approved")
    m.limit_rejected("budget", "key")
    s = _samples(m)
    call = (("outcome", "ok"), ("server", "git"), ("tool", "git_status"))
    assert s[("turnstile_mcp_tool_calls_total", call)] == 1
    trust = (("outcome", "approved"), ("server", "git"), ("tier", "confirm"))
    assert s[("turnstile_mcp_trust_decisions_total", trust)] == 1
    assert s[("turnstile_limit_rejections_total", (("limit", "budget"), ("scope", "key")))] == 1


def test_circuit_gauges_mark_the_current_state_of_each_deployment() -> None:
    m = Metrics()
    m.on_scrape(circuit_gauges(lambda: [("oa", "open", 3.5), ("an", "closed", -1.0)]))
    s = _samples(m)
    assert s[("turnstile_deployment_circuit_state", (("deployment", "oa"), ("state", "open")))] == 1
    assert s[("turnstile_deployment_circuit_state", (("deployment", "oa"), ("state", "closed")))] == 0
    assert s[("turnstile_deployment_cooldown_seconds", (("deployment", "oa"),))] == 3.5
    assert s[("turnstile_deployment_cooldown_seconds", (("deployment", "an"),))] == 0


def test_histogram_buckets_are_cumulative_in_the_exposition_as_prometheus_client_writes_them() -> None:
    m = Metrics()
    for ms in (3.0, 40.0, 40.0, 7000.0, 1_000_000.0):
        m.turn(_record(latency_ms=ms))
    s = _samples(m)
    labels = (("deployment", "oa"), ("dialect", "openai_chat"))
    bucket = {
        le: s[("turnstile_turn_duration_seconds_bucket", (*labels[:1], *labels[1:], ("le", le)))]
        for le in ("0.005", "0.05", "10.0", "+Inf")
    }
    assert bucket == {"0.005": 1, "0.05": 3, "10.0": 4, "+Inf": 5}
    assert s[("turnstile_turn_duration_seconds_count", labels)] == 5
    assert abs(s[("turnstile_turn_duration_seconds_sum", labels)] - 1007.083) < 1e-6


def test_a_tool_loop_step_is_counted_as_a_step_never_as_a_turn_nor_again_in_tokens() -> None:
    m = Metrics()
    for n in (1, 2):
        m.step(_record(request_id=f"r1.step{n}", attempts=[]))
    m.turn(_record())
    s = _samples(m)
    turns = (("deployment", "oa"), ("dialect", "openai_chat"), ("guard_outcome", "ok"), ("status", "200"))
    assert s[("turnstile_turns_total", turns)] == 1
    assert s[("turnstile_tool_loop_steps_total", (("deployment", "oa"),))] == 2
    assert s[("turnstile_tokens_total", (("deployment", "oa"), ("type", "input")))] == 20
    assert s[("turnstile_cost_usd_total", (("deployment", "oa"),))] == 0.5
