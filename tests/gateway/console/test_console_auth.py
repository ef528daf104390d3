"""The console's log-in tokens (gateway/console/auth.py): signed with the admin key, expiring,
never valid without an admin key; CSRF tokens bound to one session (wrong keys are throttled
per address by gateway/access/guessing.py: tests/gateway/access/test_guessing.py)."""

from __future__ import annotations

from pathlib import Path

from gateway.console.auth import ConsoleAuth
from gateway.workers_state import WorkersState


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_a_session_token_is_valid_until_it_expires_and_only_under_its_admin_key() -> None:
    clock = Clock(1_000.0)
    auth = ConsoleAuth("admin-key-1", session_s=3600, clock=clock)
    token = auth.issue()
    assert auth.valid(token)
    assert not ConsoleAuth("admin-key-2", session_s=3600, clock=clock).valid(token)  # key changed
    expires, nonce, mac = token.split(".")
    assert not auth.valid(f"{int(expires) + 99}.{nonce}.{mac}")  # a longer life, forged
    assert not auth.valid(f"{expires}.{nonce}.{'0' * len(mac)}")
    for junk in (None, "", "x", "1.2", "a.b.c", "9" * 300):
        assert not auth.valid(junk)
    clock.t += 3600
    assert not auth.valid(token)


def test_without_an_admin_key_nothing_is_valid_and_no_key_is_the_admin_key() -> None:
    auth = ConsoleAuth(None, session_s=60)
    assert not auth.configured
    assert not auth.is_admin_key("") and not auth.is_admin_key(None) and not auth.is_admin_key("x")
    assert not auth.valid(ConsoleAuth("k", session_s=60).issue())
    keyed = ConsoleAuth("right", session_s=60)
    assert keyed.is_admin_key("right") and not keyed.is_admin_key("wrong") and not keyed.is_admin_key("")


def test_a_csrf_token_belongs_to_one_valid_session() -> None:
    auth = ConsoleAuth("k", session_s=60)
    one, two = auth.issue(), auth.issue()
    assert auth.csrf(one) != auth.csrf(two)
    assert auth.csrf_ok(one, auth.csrf(one))
    assert not auth.csrf_ok(one, auth.csrf(two)) and not auth.csrf_ok(one, "") and not auth.csrf_ok(None, "x")
    assert not auth.csrf_ok("forged.token.here", auth.csrf("forged.token.here"))


def test_the_one_time_login_token_redeems_once_and_signs_sessions_only_without_an_admin_key() -> None:
    auth = ConsoleAuth(None, session_s=60, login_token="t" * 43)
    assert auth.configured and auth.by_token and not auth.is_admin_key("t" * 43)
    assert not auth.redeem("t" * 42) and not auth.redeem(None)
    assert auth.redeem("t" * 43)
    assert not auth.redeem("t" * 43)  # used
    assert auth.valid(auth.issue())
    assert not ConsoleAuth(None, session_s=60, login_token="u" * 43).valid(auth.issue())  # another start
    keyed = ConsoleAuth("admin", session_s=60, login_token="t" * 43)
    assert not keyed.by_token and not keyed.redeem("t" * 43)  # an admin key: the token means nothing


async def test_the_one_time_login_link_works_once_across_the_workers_sharing_a_file(tmp_path: Path) -> None:
    one, two = WorkersState(tmp_path / "w.db"), WorkersState(tmp_path / "w.db")  # two processes
    try:
        workers = [ConsoleAuth(None, 60, login_token="t" * 43, claim=s.claim) for s in (one, two)]
        assert workers[1].redeem("t" * 43) and await workers[1].first_use()
        assert workers[0].redeem("t" * 43)  # unused in this worker's memory…
        assert not await workers[0].first_use()  # …but taken by the other
        fresh = ConsoleAuth(None, 60, login_token="u" * 43, claim=one.claim)  # the next start's token
        assert fresh.redeem("u" * 43) and await fresh.first_use()
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_shared_file_that_fails_refuses_the_one_time_login(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    broken = WorkersState(tmp_path / "file" / "w.db")
    auth = ConsoleAuth(None, 60, login_token="t" * 43, claim=broken.claim)
    assert auth.redeem("t" * 43) and not await auth.first_use()  # fail closed
    await broken.aclose()
