"""Cooldown, circuit breaker, retry budget and context-overflow detection (fake clock)."""

from __future__ import annotations

from routers.health import HealthBoard, HealthSettings, RetryBudget, is_context_overflow


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_retry_after_longer_than_the_cooldown_wins_and_expires() -> None:
    clock = Clock()
    board = HealthBoard(settings=HealthSettings(cooldown_s=5), clock=clock)
    board.failure("a", retry_after_s=20)
    assert (board.unavailable("a") or "").startswith("cooldown 20.0s")
    clock.t += 19.9
    assert board.unavailable("a") is not None
    clock.t += 0.2
    assert board.unavailable("a") is None


def test_circuit_opens_after_consecutive_failures_then_half_opens_for_one_probe() -> None:
    clock = Clock()
    board = HealthBoard(settings=HealthSettings(cooldown_s=1, failure_threshold=3, open_s=30), clock=clock)
    for _ in range(3):
        board.failure("a")
    assert board.state("a") == "open" and board.unavailable("a") == "circuit open"
    clock.t += 30
    assert board.state("a") == "half_open" and board.unavailable("a") is None
    board.begin("a")
    assert board.unavailable("a") == "circuit half-open, probe in flight"
    board.failure("a")  # failed probe: open again at once
    assert board.state("a") == "open"
    clock.t += 30
    board.begin("a")
    board.success("a", latency_ms=120)
    assert board.state("a") == "closed" and board.unavailable("a") is None and board.latency("a") == 120


def test_a_success_resets_the_failure_count() -> None:
    board = HealthBoard(settings=HealthSettings(failure_threshold=2, cooldown_s=0), clock=Clock())
    board.failure("a")
    board.success("a")
    board.failure("a")
    assert board.state("a") == "closed"


def test_retry_budget_allows_a_burst_then_ratio_per_turn() -> None:
    budget = RetryBudget(ratio=0.5, cap=2, tokens=2)
    assert budget.try_spend() and budget.try_spend() and not budget.try_spend()
    budget.deposit()
    budget.deposit()
    assert budget.try_spend() and not budget.try_spend()


def test_context_overflow_messages_are_recognised_only_on_client_errors() -> None:
    assert is_context_overflow(400, "This model's maximum context length is 128000 tokens. However, ...")
    assert is_context_overflow(400, "prompt is too long: 210000 tokens > 200000 maximum")
    assert is_context_overflow(
        400, "The input token count (1200000) exceeds the maximum number of tokens allowed"
    )
    assert not is_context_overflow(400, "tools[0].name: invalid")
    assert not is_context_overflow(500, "maximum context length")


def test_a_deployment_is_failing_from_its_first_failure_until_its_next_success() -> None:
    board = HealthBoard(settings=HealthSettings(cooldown_s=0, failure_threshold=3), clock=Clock())
    assert not board.failing("never-called")
    board.failure("d")
    assert board.failing("d") and board.unavailable("d") is None  # no cooldown, still failing
    board.success("d")
    assert not board.failing("d")
