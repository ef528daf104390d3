"""Decision time per turn for the routing policies (targets: p99 <= 1 ms for ``rules`` and,
since issue 18, for ``learned`` including the WordLlama prompt embedding).

Measures ``RoutingEngine.decide`` end to end — feature extraction, fit filtering, policy
(for ``learned``: lexical features, the prompt embedding, the network), stickiness — over
every prefix of the τ-bench airline conversation in tests/fixtures (real agent turns, 1–32
messages, ~1.5–5k tokens) and the RouteLLM prompts in the fixture slice.

    uv run python bench/micro/route_decision.py [--rounds 200]

Round one is **cold** for ``learned`` (each text's space-separated segments are tokenized for
the first time; a fresh embedder) and reported on its own line (``learned-cold``); later
rounds reuse the embedder's segment memory, as a running gateway does for the words it has
seen. Wall-clock percentiles include preemption by other processes on a loaded machine; the
CPU columns (``time.thread_time``) are the time the decision itself used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "routers")]

from route_turns import turn  # noqa: E402

from gateway.config import Settings, parse_config  # noqa: E402
from gateway.deployments import DeploymentTable  # noqa: E402
from gateway.schema import Request, TextPart, UserMessage  # noqa: E402
from routers.embed import shared_embedder  # noqa: E402
from routers.engine import RoutingEngine  # noqa: E402
from routers.scorer import load_model  # noqa: E402


def _user(text: str) -> UserMessage:
    return UserMessage(content=[TextPart(text=text)])


TIERS = {"cheap": ["mini"], "strong": ["big"]}
RULES = [
    {"kind": ["tool_digest", "final_answer"], "tier": "cheap"},
    {"kind": ["fresh_user"], "text_matches": r"\b(plan|design)\b", "tier": "strong"},
]


def config() -> dict[str, object]:
    deps = [
        {
            "name": "mini",
            "api": "openai_chat",
            "model": "mini",
            "context_window": 128000,
            "price": {"input": 0.15, "output": 0.6, "cache_read": 0.015},
        },
        {
            "name": "big",
            "api": "openai_chat",
            "model": "big",
            "context_window": 200000,
            "price": {"input": 3, "output": 15, "cache_read": 0.3},
        },
    ]
    models = [
        {"name": p, "deployments": ["big", "mini"], "routing": {"policy": p, "tiers": TIERS, "rules": RULES}}
        for p in ("rules", "learned", "cascade")
    ]
    models[1]["routing"]["rules"] = []  # type: ignore[index]
    return {"deployments": deps, "models": models}


def requests(policy: str) -> list[Request]:
    out = [turn(n, model=policy) for n in range(2, 33)]
    slice_ = ROOT / "tests" / "fixtures" / "routing" / "routellm-slice.jsonl"
    for line in slice_.read_text().splitlines():
        out.append(
            Request(model=policy, messages=[UserMessage(content=[TextPart(text=json.loads(line)["prompt"])])])
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    cfg = parse_config(config())
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    engine = RoutingEngine(cfg)
    deps = [table.deployments["big"], table.deployments["mini"]]
    print(
        f"{'policy':12} {'turns':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu p50':>8} {'cpu p99':>8}"
    )
    for policy in ("rules", "learned-cold", "learned", "cascade"):
        reqs = requests(policy.removesuffix("-cold"))
        if policy == "learned-cold":  # a fresh embedder: every segment tokenized for the first time
            shared_embedder.cache_clear()
            load_model.cache_clear()
            engine = RoutingEngine(cfg)
        warm = reqs[0] if policy != "learned-cold" else Request(model="learned", messages=[_user("x")])
        engine.decide(warm, deps, table.prices)  # model and embedder load, regex compile
        times: list[float] = []
        cpu: list[float] = []
        for _ in range(1 if policy == "learned-cold" else args.rounds):
            for r in reqs:
                t0, c0 = time.perf_counter(), time.thread_time()
                engine.decide(r, deps, table.prices)
                cpu.append((time.thread_time() - c0) * 1000)
                times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        cpu.sort()
        n = len(times)
        print(
            f"{policy:12} {n:>6} {times[n // 2]:8.3f} {times[int(n * 0.99)]:8.3f} {times[-1]:8.3f} "
            f"{cpu[n // 2]:8.3f} {cpu[int(n * 0.99)]:8.3f}"
        )


if __name__ == "__main__":
    main()
