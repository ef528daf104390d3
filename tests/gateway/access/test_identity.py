"""Judging callers by their virtual keys: where a key is read, what refuses it, the lookup
cache bound (a revocation elsewhere is in force within the TTL), allow lists intersected with
the team's, and a key's MCP visibility."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from starlette.datastructures import Headers

from gateway.access.identity import Identity, may_hold_key, presented_key
from gateway.access.keygen import digest, is_virtual_key, new_secret, prefix
from gateway.access.model import principal_of
from gateway.access.sqlite import SqliteAccessStore
from gateway.access.visibility import KeyVisibility, key_visibility
from gateway.errors import AuthenticationRequired, PermissionDenied


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteAccessStore]:
    s = SqliteAccessStore(tmp_path / "t.db")
    await s.open()
    yield s
    await s.close()


def test_a_secret_is_tsk_and_256_random_bits_and_its_digest_is_sha256_hex() -> None:
    a, b = new_secret(), new_secret()
    assert a != b and a.startswith("tsk-") and len(a) == 4 + 43 and is_virtual_key(a)
    assert len(digest(a)) == 64 and digest(a) == digest(a) and digest(a) != digest(b)
    assert prefix(a) == a[:12] and not is_virtual_key("tsk-") and not is_virtual_key("sk-abc")


@pytest.mark.parametrize(
    "headers",
    [
        {"authorization": "Bearer tsk-abc"},
        {"x-api-key": "tsk-abc"},
        {"x-goog-api-key": " tsk-abc "},
        {"authorization": "Bearer sk-openai", "x-api-key": "tsk-abc"},
    ],
)
def test_a_key_is_read_where_each_sdk_sends_it(headers: dict[str, str]) -> None:
    h = Headers(headers=headers)
    assert presented_key(h) == "tsk-abc" and may_hold_key(h)


def test_other_keys_are_not_virtual_keys() -> None:
    h = Headers(headers={"authorization": "Bearer sk-openai", "x-api-key": "sk-ant"})
    assert presented_key(h) is None and not may_hold_key(h) and not may_hold_key(None)


async def test_required_refuses_a_missing_or_unknown_key_and_optional_lets_anonymous_through(
    store: SqliteAccessStore,
) -> None:
    required, optional = Identity(store, required=True), Identity(store, required=False)
    with pytest.raises(AuthenticationRequired, match="requires a key"):
        await required.admit(Headers(headers={"authorization": "Bearer sk-x"}))
    assert await optional.admit(Headers(headers={"authorization": "Bearer sk-x"})) is None
    for ident in (required, optional):
        with pytest.raises(AuthenticationRequired, match="not a key of this gateway"):
            await ident.admit(Headers(headers={"x-api-key": "tsk-unknown"}))
    key, secret = await store.create_key("a", actor="t")
    principal = await optional.admit(Headers(headers={"x-api-key": secret}))
    assert principal is not None and principal.key_id == key.id and principal.team_id is None


async def test_revoked_disabled_and_expired_keys_are_refused_and_audited(
    store: SqliteAccessStore,
) -> None:
    now = Clock()
    ident = Identity(store, required=True, ttl_s=0, now=now)
    revoked, s1 = await store.create_key("r", actor="t")
    await store.revoke_key(revoked.id, actor="t")
    disabled, s2 = await store.create_key("d", actor="t", enabled=False)
    expiring, s3 = await store.create_key("e", actor="t", expires_at=now.t + 10)
    assert (await ident.principal(s3)).key_id == expiring.id
    now.t += 10
    for secret, why in ((s1, "revoked"), (s2, "disabled"), (s3, "expired")):
        with pytest.raises(AuthenticationRequired, match=why):
            await ident.principal(secret)
    denied = [e for e in await store.audit_events() if e.action == "access.denied"]
    assert {(e.actor, e.reason) for e in denied} == {
        (revoked.id, "revoked"),
        (disabled.id, "disabled"),
        (expiring.id, "expired"),
    }


async def test_a_revocation_made_elsewhere_is_in_force_once_the_cache_entry_is_older_than_the_ttl(
    tmp_path: Path,
) -> None:
    clock = Clock()
    here = SqliteAccessStore(tmp_path / "t.db")
    elsewhere = SqliteAccessStore(tmp_path / "t.db")  # another instance on the same store
    await here.open()
    await elsewhere.open()
    try:
        ident = Identity(here, required=True, ttl_s=1.0, clock=clock)
        key, secret = await elsewhere.create_key("k", actor="t")
        await ident.principal(secret)
        await elsewhere.revoke_key(key.id, actor="t")
        clock.t += 0.5
        await ident.principal(secret)  # still cached
        clock.t += 0.5
        with pytest.raises(AuthenticationRequired, match="revoked"):
            await ident.principal(secret)
    finally:
        await here.close()
        await elsewhere.close()


async def test_a_keys_principal_is_built_once_per_lookup_and_rebuilt_after_a_change(
    store: SqliteAccessStore,
) -> None:
    clock = Clock()
    ident = Identity(store, required=True, ttl_s=1.0, clock=clock)
    key, secret = await store.create_key("k", actor="t")
    first = await ident.principal(secret)
    assert await ident.principal(secret) is first  # the cached lookup's principal, reused
    await store.update_key(key.id, {"models": ["gpt-4o"]}, actor="t")
    clock.t += 1.0  # the lookup expires: the change is read, and its principal built anew
    changed = await ident.principal(secret)
    assert changed is not first and changed.key_models == ("gpt-4o",)
    ident.forget()
    assert await ident.principal(secret) is not changed


async def test_a_model_must_be_allowed_by_the_key_and_its_team(store: SqliteAccessStore) -> None:
    team = await store.create_team("t", actor="x", models=["a", "b"])
    _, secret = await store.create_key("k", actor="x", team_id=team.id, models=["b", "c"])
    ident = Identity(store, required=True)
    p = await ident.principal(secret)
    await ident.check_model(p, "b")
    for model in ("a", "c", "d"):
        with pytest.raises(PermissionDenied, match=f"model '{model}' is not allowed") as err:
            await ident.check_model(p, model)
        assert err.value.param == "model" and err.value.status == 403
    _, s2 = await store.create_key("free", actor="x")
    await ident.check_model(await ident.principal(s2), "anything")


async def test_a_keys_mcp_allow_list_and_its_teams_decide_its_visibility(store: SqliteAccessStore) -> None:
    team = await store.create_team("t", actor="x", mcp=["time", "fx"])
    key, _ = await store.create_key("k", actor="x", team_id=team.id, mcp=["time", "fx.echo"])
    p = principal_of(key, team)
    v = key_visibility(p, owner={"long_name_hashed": ("fx", "echo")}.get)
    assert isinstance(v, KeyVisibility) and v.client == key.id and v.authenticated
    assert v.allows("time__get_current_time") and v.allows("fx__echo") and v.allows("long_name_hashed")
    assert not v.allows("fx__add") and not v.allows("other__x") and not v.allows("plain")
    assert (
        v.sees_server("time", [])
        and v.sees_server("fx", ["fx__echo"])
        and not v.sees_server("fx", ["fx__add"])
    )
    unrestricted = key_visibility(principal_of((await store.create_key("u", actor="x"))[0], None), None)
    assert unrestricted.allows("anything__at_all") and unrestricted.client is not None


async def test_limit_refusals_are_audited_once_a_minute_per_key_scope_and_limit(
    store: SqliteAccessStore,
) -> None:
    from gateway.access.identity import AUDIT_REFUSALS_EVERY_S
    from gateway.errors import RateLimitExceeded

    clock = Clock()
    identity = Identity(store, required=True, clock=clock)
    key, _ = await store.create_key("k", actor="cli")
    principal = principal_of(key, None)

    def refusal() -> RateLimitExceeded:
        return RateLimitExceeded(
            "rate limit", scope=f"key:{key.id}", dimension="requests", limit=1, retry_after_s=5, headers={}
        )

    for i in range(4):  # a client hammering past its limit: one event, the rest counted
        await identity.limit_refused(principal, refusal(), limit="requests", request_id=f"r{i}")
    await identity.limit_refused(principal, refusal(), limit="tokens", request_id="t0")  # another limit
    clock.t += AUDIT_REFUSALS_EVERY_S
    await identity.limit_refused(principal, refusal(), limit="requests", request_id="r9")
    events = [e for e in await store.audit_events(100) if e.action == "limit.refused"]
    got = [
        (e.actor, e.target, e.reason, e.detail["request_id"], e.detail["refused_since_last_event"])
        for e in events
    ]
    assert got == [
        (key.id, f"key:{key.id}", "requests", "r9", 3),
        (key.id, f"key:{key.id}", "tokens", "t0", 0),
        (key.id, f"key:{key.id}", "requests", "r0", 0),
    ]
    assert events[0].detail["limit"]["dimension"] == "requests"
