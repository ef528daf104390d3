"""Deployment health shared between instances (:mod:`gateway.fleet.health`): two boards, two
links on one Redis prefix, standing for two gateway instances."""

from __future__ import annotations

from collections.abc import Callable

from fleet_support import until

from gateway.fleet.bus import ChangeBus
from gateway.fleet.health import SharedHealth
from gateway.fleet.link import RedisLink
from routers.health import HealthBoard, HealthSettings


async def _instance(make: Callable[[], RedisLink]) -> tuple[HealthBoard, SharedHealth, ChangeBus]:
    link = make()
    bus = ChangeBus(link)
    board = HealthBoard(settings=HealthSettings(failure_threshold=3, open_s=30.0, cooldown_s=5.0))
    shared = SharedHealth(link, bus, board, ["a", "b"], budget_sync_s=3600)
    await bus.start()
    await shared.start()
    return board, shared, bus


async def test_a_circuit_opened_by_failures_on_one_instance_is_open_on_the_other(links) -> None:
    one, one_shared, one_bus = await _instance(links)
    other, other_shared, other_bus = await _instance(links)
    try:
        for _ in range(3):
            one.failure("a")
        assert one.unavailable("a") == "circuit open"
        took = await until(lambda: other.unavailable("a") == "circuit open")
        assert took < 1.0
        assert other.unavailable("b") is None
    finally:
        for s, b in ((one_shared, one_bus), (other_shared, other_bus)):
            await s.close()
            await b.close()


async def test_failures_on_two_instances_add_up_to_the_threshold(links) -> None:
    one, one_shared, one_bus = await _instance(links)
    other, other_shared, other_bus = await _instance(links)
    try:
        one.failure("a")
        await until(lambda: other.failing("a"))
        other.failure("a")
        await until(lambda: one.entries["a"].consecutive_failures == 2)
        one.failure("a")  # the third, counted over both instances
        await until(lambda: other.unavailable("a") == "circuit open")
        assert one.unavailable("a") == "circuit open"
    finally:
        for s, b in ((one_shared, one_bus), (other_shared, other_bus)):
            await s.close()
            await b.close()


async def test_a_success_closes_the_circuit_everywhere_and_a_new_instance_loads_the_state(links) -> None:
    one, one_shared, one_bus = await _instance(links)
    other, other_shared, other_bus = await _instance(links)
    try:
        for _ in range(3):
            one.failure("a")
        await until(lambda: other.unavailable("a") == "circuit open")
        late, late_shared, late_bus = await _instance(links)  # started after the failures
        assert late.unavailable("a") == "circuit open"
        other.success("a", 10.0)
        await until(lambda: one.unavailable("a") is None and late.unavailable("a") is None)
        assert one.entries["a"].consecutive_failures == 0
        await late_shared.close()
        await late_bus.close()
    finally:
        for s, b in ((one_shared, one_bus), (other_shared, other_bus)):
            await s.close()
            await b.close()


async def test_a_healthy_success_sends_nothing(links) -> None:
    board, shared, bus = await _instance(links)
    sent: list[tuple[str, bool]] = []
    board.listener = lambda name, ok, _after: sent.append((name, ok))
    try:
        board.success("a", 5.0)
        board.success("a", 5.0)
        assert sent == []
        board.failure("a")
        board.success("a", 5.0)
        assert sent == [("a", False), ("a", True)]
    finally:
        await shared.close()
        await bus.close()


async def test_the_retry_budget_is_one_bucket_over_every_instance(links) -> None:
    one, one_shared, one_bus = await _instance(links)
    other, other_shared, other_bus = await _instance(links)
    try:
        spent = 0
        while one.budget.try_spend():
            spent += 1
        assert spent == 10
        await one_shared.sync_budget()
        other.budget.deposit()  # 0.2 deposited: the shared level is 0.2, not 10.2
        await other_shared.sync_budget()
        assert other.budget.tokens < 1.0
        assert not other.budget.try_spend()
    finally:
        for s, b in ((one_shared, one_bus), (other_shared, other_bus)):
            await s.close()
            await b.close()
