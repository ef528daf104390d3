"""Budgets and rate limits of virtual keys through the real gateway, with the official SDKs.

A hard budget is never exceeded (the ledger's spend stays within it, also when many turns race
for the last dollars) and its refusal is a 429 each SDK reads as out of quota, not to be
retried; a requests/min limit refuses with ``retry-after`` and the ``x-ratelimit-*`` headers; a
team's budget bounds its keys; every turn's cost is in ``GET /admin/spend`` and
``turnstile spend``. The deployment is the priced demo stand-in (deterministic token counts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from standins.servers import GatewayServer, LoopThread

from gateway.config import Settings, parse_config
from gateway.server import create_app

ADMIN_ENV = "TURNSTILE_TEST_LIMITS_ADMIN_KEY"
ADMIN = "admin-secret-for-the-limits-tests"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
PRICE = {"input": 1_000_000.0, "output": 1_000_000.0}  # USD per million tokens: 1 USD a token


@pytest.fixture(scope="module")
def limits_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A gateway with keys required, the demo deployment priced at 1 USD a token, an admin key."""
    db_path = tmp_path_factory.mktemp("limits") / "gateway.db"
    loop = LoopThread()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ADMIN_ENV, ADMIN)
        config = parse_config(
            {
                "server": {"db_path": str(db_path)},
                "access": {"auth": "required", "admin_key_env": ADMIN_ENV},
                "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo", "price": PRICE}],
                "models": [{"name": "default", "deployments": ["demo"]}],
                "mcp": {"servers": []},
            }
        )
        server = GatewayServer(
            create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        )
        loop.call(server.start())
        try:
            yield {"url": server.url, "db_path": db_path, "loop": loop, "config": config}
        finally:
            loop.call(server.stop())
            loop.close()


def _key(url: str, **fields: Any) -> tuple[str, str]:
    got = httpx.post(f"{url}/admin/keys", json={"name": "k", **fields}, headers=AUTH, timeout=10)
    assert got.status_code == 201, got.text
    return got.json()["key"]["id"], got.json()["secret"]


def _spent(url: str, group_by: str, group: str) -> float:
    got = httpx.get(f"{url}/admin/spend", params={"group_by": group_by}, headers=AUTH, timeout=10)
    assert got.status_code == 200, got.text
    return sum(r["cost_usd"] for r in got.json()["data"] if r["group"] == group)


def _ask(client: openai.OpenAI) -> Any:
    return client.chat.completions.create(
        model="default", max_tokens=20, messages=[{"role": "user", "content": "hi"}]
    )


def test_a_hard_budget_refuses_with_insufficient_quota_once_the_next_turn_could_exceed_it(
    limits_gw: dict[str, Any],
) -> None:
    url = limits_gw["url"]
    key_id, secret = _key(url, budgets=[{"period": "day", "usd": 200, "hard": True}])
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=20)
    answered = 0
    with pytest.raises(openai.RateLimitError) as err:
        for _ in range(50):
            _ask(client)
            answered += 1
    assert answered >= 1
    body = err.value.body
    assert (
        isinstance(body, dict)
        and body["type"] == "insufficient_quota"
        and body["code"] == "insufficient_quota"
    )
    headers = err.value.response.headers
    assert headers["x-should-retry"] == "false" and int(headers["retry-after"]) >= 1
    spent = _spent(url, "key", key_id)
    assert 0 < spent <= 200, spent
    ant = anthropic.Anthropic(base_url=url, api_key=secret, max_retries=0, timeout=20)
    with pytest.raises(anthropic.RateLimitError) as aerr:
        ant.messages.create(model="default", max_tokens=20, messages=[{"role": "user", "content": "hi"}])
    assert aerr.value.response.status_code == 429 and "budget" in str(aerr.value.message)


def test_turns_racing_for_the_last_dollars_never_take_the_spend_past_a_hard_budget(
    limits_gw: dict[str, Any],
) -> None:
    url = limits_gw["url"]
    key_id, secret = _key(url, budgets=[{"period": "month", "usd": 500, "hard": True}])

    async def race() -> list[int]:
        async with httpx.AsyncClient(
            base_url=url, timeout=30, headers={"authorization": f"Bearer {secret}"}
        ) as http:
            body = {"model": "default", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
            answers = await asyncio.gather(*(http.post("/v1/chat/completions", json=body) for _ in range(40)))
            return [a.status_code for a in answers]

    statuses = asyncio.run(race())
    assert set(statuses) == {200, 429}, statuses
    assert 0 < _spent(url, "key", key_id) <= 500


def test_requests_per_minute_refuse_with_retry_after_and_the_rate_limit_headers(
    limits_gw: dict[str, Any],
) -> None:
    url = limits_gw["url"]
    _, secret = _key(url, rate_limits={"rpm": 2})
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=20)
    first = client.chat.completions.with_raw_response.create(
        model="default", max_tokens=20, messages=[{"role": "user", "content": "hi"}]
    )
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    _ask(client)
    with pytest.raises(openai.RateLimitError) as err:
        _ask(client)
    headers = err.value.response.headers
    assert 1 <= int(headers["retry-after"]) <= 61
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert isinstance(err.value.body, dict) and err.value.body["code"] == "rate_limit_exceeded"


def test_a_team_budget_bounds_every_key_of_the_team(limits_gw: dict[str, Any]) -> None:
    url = limits_gw["url"]
    team = httpx.post(
        f"{url}/admin/teams",
        json={"name": "t-budget", "budgets": [{"period": "day", "usd": 150, "hard": True}]},
        headers=AUTH,
        timeout=10,
    )
    assert team.status_code == 201, team.text
    team_id = team.json()["id"] if "id" in team.json() else team.json()["team"]["id"]
    secrets = [_key(url, team_id=team_id)[1] for _ in range(2)]
    refused = 0
    for i in range(30):
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=secrets[i % 2], max_retries=0, timeout=20)
        try:
            _ask(client)
        except openai.RateLimitError:
            refused += 1
    assert refused > 0
    assert 0 < _spent(url, "team", team_id) <= 150


def test_a_session_bound_turn_reserves_its_input_estimate_not_the_whole_window(
    limits_gw: dict[str, Any],
) -> None:
    """A session turn's worst case is what it sends (its rebuilt history, its new messages)
    plus its output budget, not the deployment's whole window (200,000 tokens here, at 1 USD
    each): a 3,000 USD budget admits it."""
    url = limits_gw["url"]
    key_id, secret = _key(url, budgets=[{"period": "total", "usd": 3000, "hard": True}])
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=20)
    for text in ("hi", "and again"):
        client.chat.completions.create(
            model="default",
            max_tokens=5,
            messages=[{"role": "user", "content": text}],
            extra_headers={"x-turnstile-session": "limits-session-1"},
        )
    assert 0 < _spent(url, "key", key_id) <= 3000


def test_a_session_turns_history_is_held_before_it_goes_upstream(limits_gw: dict[str, Any]) -> None:
    """The history is rebuilt below the limits layer: the window layer holds its worst case
    before the call goes upstream, so a budget with room for the new message but not for the
    history refuses the turn (429) and the ledger stays within the budget."""
    url = limits_gw["url"]
    key_id, secret = _key(url, budgets=[{"period": "total", "usd": 100_000, "hard": True}])
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=20)
    session = {"x-turnstile-session": "limits-session-history"}
    long_question = "please summarise " + "the quick brown fox jumps over the lazy dog " * 8
    client.chat.completions.create(
        model="default",
        max_tokens=5,
        messages=[{"role": "user", "content": long_question}],
        extra_headers=session,
    )
    first = _spent(url, "key", key_id)
    limit = first + 75  # room for "hi" and 5 output tokens, not for the history again
    patched = httpx.patch(
        f"{url}/admin/keys/{key_id}",
        json={"budgets": [{"period": "total", "usd": limit, "hard": True}]},
        headers=AUTH,
        timeout=10,
    )
    assert patched.status_code == 200, patched.text
    client.chat.completions.create(
        model="default", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
    )
    with pytest.raises(openai.RateLimitError) as err:
        client.chat.completions.create(
            model="default", max_tokens=5, messages=[{"role": "user", "content": "hi"}], extra_headers=session
        )
    assert isinstance(err.value.body, dict) and err.value.body["type"] == "insufficient_quota"
    client.chat.completions.create(  # the same message without the history fits
        model="default", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
    )
    assert _spent(url, "key", key_id) <= limit
