"""`turnstile replay` (gateway/replay/*): fixtures through the whole pipeline, the CLI, and
the whole corpus with exact totals (skipped when the corpus is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from typer.testing import CliRunner

from gateway.cli import app
from gateway.replay.cli import print_routing
from gateway.replay.clientview import CLIENT_DIALECTS
from gateway.replay.runner import run

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures"
CORPUS = Path(os.environ.get("TURNSTILE_CORPUS", ROOT.parent / "shared" / "corpus"))


def test_pi_unanswered_calls_of_errored_turn_are_findings_with_turn_and_id() -> None:
    rep = run([FIX / "pi-mono/large-session-head.jsonl"], jobs=1)
    orphans = [f for f in rep.findings if f["kind"] == "orphan_tool_call"]
    assert len(orphans) == 16
    assert all(f["where"].endswith("turn 12") and f["id"].startswith("toolu_") for f in orphans)
    assert not rep.failed
    assert rep.counts["pipeline_turns"] == rep.counts["turns"] == 15
    assert rep.counts["transcript_rows"] == 15
    assert rep.cost["turns_compared"] > 0
    assert rep.cost["recorded_usd"] == pytest.approx(rep.cost["estimated_usd"], rel=1e-6)


def test_truncated_tool_call_recording_is_withheld_not_lost() -> None:
    rep = run([FIX / "anthropic-sdk-python/tests/lib/streaming/fixtures"], jobs=1)
    assert [f["kind"] for f in rep.findings] == ["truncated_tool_call"]
    assert rep.counts["exchanges"] == 3 and not rep.failed


def test_provider_recordings_keep_their_meaning_in_every_client_dialect() -> None:
    rep = run([FIX / "fantasy", FIX / "envoy-ai-gateway"], jobs=1)
    renders = 2 * len(CLIENT_DIALECTS)  # streamed and whole
    assert rep.counts["exchanges"] > 10 and rep.counts["rendered"] == renders * (
        rep.counts["exchanges"] - rep.counts["error_responses"]
    )
    assert rep.losses == [] and rep.crashes == []


def test_conversation_readers_replay_without_loss() -> None:
    files = (
        "swe-agent/trajectories/demonstrations/function_calling_simple.traj",
        "openhands/tests/runtime/trajs/basic_interactions.json",
        "openhands/tests/runtime/trajs/wrong_initial_state.json",
        "tau-bench/gpt-4o-airline-first2.json",
        "toolbench/G1_answer/10_ChatGPT_DFS_woFilter_w2.json",
    )
    rep = run([FIX / f for f in files], jobs=1)
    assert (rep.counts["conversations"], rep.counts["turns"], rep.counts["calls"]) == (6, 35, 21)
    assert rep.losses == [] and rep.crashes == []


def test_routing_estimate_routes_every_pipeline_turn_and_prices_it_three_ways() -> None:
    rep = run(
        [FIX / "pi-mono/large-session-head.jsonl", FIX / "tau-bench/gpt-4o-airline-first2.json"], jobs=1
    )
    r = rep.as_dict()["routing"]
    t = r["totals"]
    assert t["conversations"] == 3 and t["turns"] == rep.counts["pipeline_turns"] == 26
    assert sum(t["by_tier"].values()) == t["turns"] and t["priced_turns"] == 26
    pi = next(c for c in r["conversations"] if c["alias"] == "anthropic_messages")
    # recorded on claude-sonnet-4-5, the strong tier: always-strong costs what was recorded
    assert pi["strong_usd"] == pytest.approx(pi["recorded_usd"], rel=1e-6)
    assert pi["recorded_usd"] == pytest.approx(rep.cost["recorded_usd"], rel=1e-6)
    assert len(pi["route"]) == 15 and set(pi["route"]) <= {"cheap", "strong"}
    assert pi["route"][12] == "strong"  # the turn after the errored tool calls: recovery -> strong
    assert 0 < t["routed_usd"] < t["strong_usd"] and t["saving_vs_recorded"] > 0
    tau = [c for c in r["conversations"] if c["alias"] == "openai_chat"]
    assert [c["route"].count("-") for c in tau] == [9, 0]  # turns the pipeline rejected: not routed
    console = Console(record=True, width=220)
    print_routing(r, console)
    text = console.export_text()
    assert "TOTAL" in text and "3 conversations" in text and "always strong" in text


def test_routing_config_file_chooses_aliases_and_tiers(tmp_path: Path) -> None:
    cfg = tmp_path / "routing.yaml"
    cfg.write_text(
        """
deployments:
  - {name: mini, api: openai_chat, model: gpt-4o-mini}
  - {name: big, api: openai_chat, model: gpt-4o}
models:
  - name: openai_chat
    deployments: [mini, big]
    routing: {policy: rules, tiers: {cheap: [mini], strong: [big]}, default_tier: strong}
"""
    )
    files = [FIX / "pi-mono/large-session-head.jsonl", FIX / "tau-bench/gpt-4o-airline-first2.json"]
    result = CliRunner().invoke(
        app, ["replay", *map(str, files), "--json", "--jobs", "1", "--routing-config", str(cfg)]
    )
    assert result.exit_code == 0, result.output
    r = orjson.loads(result.stdout)["routing"]
    assert r["config"] == str(cfg)
    assert [c["alias"] for c in r["conversations"]] == ["openai_chat", "openai_chat"]  # no anthropic alias
    t = r["totals"]
    assert t["by_tier"] == {"strong": 11} and t["switches"] == 0
    assert t["routed_usd"] == t["strong_usd"] == t["recorded_usd"] and t["saving_vs_strong"] == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [{name: x, deployments: [nope]}]\n")
    result = CliRunner().invoke(app, ["replay", str(files[0]), "--routing-config", str(bad)])
    assert result.exit_code == 2


def test_unknown_input_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"hello": "world"}')
    (tmp_path / "b.json").write_text('{"broken": \n')
    (tmp_path / "c.json").write_bytes((FIX / "tau-bench/gpt-4o-airline-first2.json").read_bytes())
    rep = run([tmp_path], jobs=1)
    assert rep.counts["conversations"] == 2
    assert [u["file"] for u in rep.unsupported] == ["a.json"]
    assert [(i["file"], i["line"]) for i in rep.issues] == [("b.json", 2)]
    assert not rep.failed


def test_a_broken_link_is_reported_as_unreadable_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "broken.json").symlink_to(tmp_path / "nowhere.json")
    (tmp_path / "c.json").write_bytes((FIX / "tau-bench/gpt-4o-airline-first2.json").read_bytes())
    rep = run([tmp_path], jobs=1)
    assert rep.counts["conversations"] == 2
    assert len(rep.issues) == 1 and "cannot read" in rep.issues[0]["message"]
    assert not rep.failed


def test_cli_json_output_and_exit_status() -> None:
    path = FIX / "toolbench/G1_answer/10_ChatGPT_DFS_woFilter_w2.json"
    result = CliRunner().invoke(app, ["replay", str(path), "--json", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    data = orjson.loads(result.stdout)
    assert data["ok"] is True and data["totals"]["conversations"] == 1


# Totals of the whole corpus (except routing/). A change here means turns, calls or findings
# appeared or vanished: check the report before updating.
CORPUS_TOTALS = {
    "files": 681,
    "conversations": 186,
    "turns": 3657,
    "calls": 2396,
    "requests": 640,
    "exchanges": 798,
    "streams": 303,
    "pipeline_turns": 3422,
    "transcript_rows": 3657,
    "error_responses": 17,
}
CORPUS_FINDINGS = {
    "duplicate_tool_call": 68,
    "duplicate_tool_result": 68,
    # 24 before server tools and tool_reference were carried, 11 before Responses moderation was
    # passed through (issue 14)
    "edge_unsupported": 10,
    "invalid_request": 7,
    "orphan_tool_call": 27,
    "orphan_tool_result": 1,
    "pipeline_rejected": 235,
    "target_refused": 7,
    "truncated_tool_call": 1,
    "upstream_error_in_body": 2,
}


# What routing (gateway/replay/routing.yaml: the shipped model at the threshold calibrated for 95%
# of the strong tier's quality) would have chosen on the corpus; routed_usd is net of the prompt
# cache lost on switches (cache_loss_usd of it).
CORPUS_ROUTING = {
    "conversations": 186,
    "turns": 3422,
    "by_tier": {"cheap": 1785, "strong": 1637},
    "switches": 826,
    "priced_turns": 3311,
    "unpriced_turns": 111,
}
CORPUS_ROUTING_USD = {
    "recorded_usd": 119.619477,
    "routed_usd": 82.186275,
    "cache_loss_usd": 14.136972,
    "strong_usd": 86.650569,
}


@pytest.mark.skipif(not (CORPUS / "README.md").exists(), reason=f"corpus not found at {CORPUS}")
def test_whole_corpus_replays_without_crash_or_loss_with_exact_totals() -> None:
    rep = run([CORPUS], jobs=2)
    assert rep.crashes == []
    assert rep.losses == []
    totals = {k: rep.counts.get(k, 0) for k in CORPUS_TOTALS}
    assert totals == CORPUS_TOTALS
    assert rep.findings_by_kind() == CORPUS_FINDINGS
    routing = rep.as_dict()["routing"]["totals"]
    assert {k: routing[k] for k in CORPUS_ROUTING} == CORPUS_ROUTING
    assert {k: routing[k] for k in CORPUS_ROUTING_USD} == pytest.approx(CORPUS_ROUTING_USD, abs=1e-5)
    pi_orphans = {}
    for f in rep.findings:
        if f["kind"] == "orphan_tool_call":
            pi_orphans[f["file"]] = pi_orphans.get(f["file"], 0) + 1
    assert pi_orphans == {
        "pi-mono/large-session.jsonl": 18,
        "pi-mono/before-compaction.jsonl": 6,
        "pi-mono/compact.jsonl": 3,
    }
