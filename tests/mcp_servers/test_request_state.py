"""Sealed 2026-07-28 ``request_state``: signed, bound to one call, expiring and single-use
(issue 11, item 4). The end-to-end replay of an approval is in ``test_endpoint.py``."""

from __future__ import annotations

from mcp_servers.request_state import SealedStates, binding


class Clock:
    """A settable clock (seconds)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_state_is_accepted_once() -> None:
    states = SealedStates()
    bound = binding("git__git_reset", {"mode": "hard"}, None)
    token = states.seal(bound, {"q": True})
    assert states.unseal(bound, token) == {"q": True}
    assert states.unseal(bound, token) is None
    again = states.seal(bound, {"q": True})  # a fresh state for the same call is a new one
    assert again != token and states.unseal(bound, again) == {"q": True}


def test_a_state_is_bound_to_the_call_and_the_client() -> None:
    states = SealedStates()
    token = states.seal(binding("t", {"a": 1}, "alice"), {"c": True})
    assert states.unseal(binding("t", {"a": 2}, "alice"), token) is None
    assert states.unseal(binding("t", {"a": 1}, "bob"), token) is None
    assert states.unseal(binding("t", {"a": 1}, "alice"), token) == {"c": True}


def test_forged_and_foreign_states_are_refused() -> None:
    states, other = SealedStates(), SealedStates()
    bound = binding("t", {}, None)
    token = other.seal(bound, {"c": True})
    assert states.unseal(bound, token) is None  # another instance's secret
    text, _, mac = states.seal(bound, {"q": True}).rpartition(".")
    assert states.unseal(bound, f"{text}x.{mac}") is None
    assert states.unseal(bound, None) is None and states.unseal(bound, "junk") is None


def test_a_state_expires_with_its_ttl() -> None:
    clock = Clock()
    states = SealedStates(ttl_s=600, clock=clock)
    bound = binding("t", {}, None)
    token = states.seal(bound, {"q": True})
    clock.now += 601
    assert states.unseal(bound, token) is None


def test_the_record_of_used_states_is_bounded_and_never_lets_one_through_twice() -> None:
    clock = Clock()
    states = SealedStates(ttl_s=600, max_consumed=3, clock=clock)
    bound = binding("t", {}, None)
    tokens = []
    for _ in range(6):
        tokens.append(states.seal(bound, {"q": True}))
        clock.now += 1
    for token in tokens[:5]:
        assert states.unseal(bound, token) == {"q": True}
    assert len(states._consumed) <= 3
    for token in tokens[:5]:  # evicted for room or still recorded: refused either way
        assert states.unseal(bound, token) is None
    # the one never used was issued after every evicted one: still accepted, once
    assert states.unseal(bound, tokens[5]) == {"q": True}
    assert states.unseal(bound, tokens[5]) is None
    clock.now += 1_000  # entries older than the TTL are dropped as new ones come
    states.unseal(bound, states.seal(bound, {"q": True}))
    assert len(states._consumed) == 1


def test_a_tampered_state_is_told_apart_from_a_replayed_one() -> None:
    states = SealedStates()
    token = states.seal("b", {"x": 1})
    assert states.unseal("b", token) == {"x": 1}
    assert states.unseal("b", token) is None and not states.forged(token)  # replayed: ours, used
    assert states.forged(token + "-TAMPERED") and states.forged("") and states.forged("no-mac")
    assert states.forged(SealedStates().seal("b", {}))  # another instance's secret


def test_instances_sharing_a_secret_accept_each_others_states_once_each() -> None:
    a, b = SealedStates(secret=b"shared"), SealedStates(secret=b"shared")
    token = a.seal("bound", {"k": 1})
    assert not b.forged(token) and b.unseal("bound", token) == {"k": 1}
