"""The endpoints around the turns follow a key's access, through the real gateway with the
official SDKs (keys required):

* the model lists (OpenAI and Anthropic ``models.list``, google-genai's) show only the models
  the key and its team allow, and ``models.retrieve`` of another is not found;
* token counts (Anthropic ``count_tokens``, Responses ``input_tokens``, Gemini
  ``countTokens``) refuse a model outside the allow lists with a 403 naming it, and Gemini's
  needs a key like every endpoint;
* ``POST /v1/sessions/{id}/compact`` is held to the key's budget (429 ``insufficient_quota``)
  and its model calls are charged to the key, the same on the ledger and the counter;
* budget and rate refusals are in ``/admin/audit``;
* ``/metrics`` is read with the admin key, and that key also governs ``/admin/mcp/*``;
* an admission that finds the shared counters (Redis) unreachable is counted in the metrics,
  admitted unchecked (``redis.fail: open``) or refused (``closed``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from standins.keyed import AUTH, counter_usd, demo_config, keyed_gateway, ledger_usd, make_key, make_team


@pytest.fixture(scope="module")
def ends_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Keys required; the demo deployment (1 USD a token) as ``default``, ``other`` and
    ``third``; sessions compacted by it."""
    db_path = tmp_path_factory.mktemp("ends") / "gateway.db"
    config = demo_config(
        db_path,
        models=[{"name": n, "deployments": ["demo"]} for n in ("default", "other", "third")],
        sessions={"compaction_deployment": "demo"},
    )
    with keyed_gateway(config) as gw:
        yield gw


def _gem(gw: dict[str, Any], key: str) -> genai.Client:
    options = genai.types.HttpOptions(base_url=gw["url"], api_version="v1beta", timeout=15_000)
    return genai.Client(api_key=key, http_options=options)


def test_the_model_lists_show_only_what_the_key_and_its_team_allow(ends_gw: dict[str, Any]) -> None:
    url = ends_gw["url"]
    team = make_team(url, "models-team", models=["default", "other"])
    _, secret = make_key(url, team_id=team, models=["default", "third"])  # both allow: default
    oai = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=15)
    assert [m.id for m in oai.models.list()] == ["default"]
    with pytest.raises(openai.NotFoundError):
        oai.models.retrieve("other")
    assert oai.models.retrieve("default").id == "default"
    ant = anthropic.Anthropic(base_url=url, api_key=secret, max_retries=0, timeout=60)
    assert [m.id for m in ant.models.list()] == ["default"]
    gem = _gem(ends_gw, secret)
    assert [m.name for m in gem.models.list()] == ["models/default"]
    with pytest.raises(genai_errors.ClientError):
        gem.models.get(model="third")
    _, free = make_key(url)
    everything = {
        m.id for m in openai.OpenAI(base_url=f"{url}/v1", api_key=free, max_retries=0).models.list()
    }
    assert {"default", "other", "third", "demo"} <= everything
    admin = httpx.get(f"{url}/v1/models", headers=AUTH, timeout=10).json()["data"]
    assert {m["id"] for m in admin} == everything


def test_token_counts_refuse_a_model_outside_the_allow_list_with_a_403_naming_it(
    ends_gw: dict[str, Any],
) -> None:
    url = ends_gw["url"]
    _, secret = make_key(url, models=["default"])
    ant = anthropic.Anthropic(base_url=url, api_key=secret, max_retries=0, timeout=60)
    hi = [{"role": "user", "content": "hi"}]
    assert ant.messages.count_tokens(model="default", messages=hi).input_tokens > 0  # type: ignore[arg-type]
    with pytest.raises(anthropic.PermissionDeniedError, match="'other'"):
        ant.messages.count_tokens(model="other", messages=hi)  # type: ignore[arg-type]
    oai = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=15)
    with pytest.raises(openai.PermissionDeniedError, match="'other'"):
        oai.responses.input_tokens.count(model="other", input="hi")
    gem = _gem(ends_gw, secret)
    assert (gem.models.count_tokens(model="default", contents="hi").total_tokens or 0) > 0
    with pytest.raises(genai_errors.ClientError) as err:
        gem.models.count_tokens(model="other", contents="hi")
    assert err.value.code == 403 and "'other'" in str(err.value.message)
    anonymous = httpx.post(f"{url}/v1beta/models/default:countTokens", json={"contents": []}, timeout=10)
    assert anonymous.status_code == 401  # Gemini's countTokens needs a key like every endpoint


def test_refusals_of_a_budget_and_of_a_rate_limit_are_in_the_audit(ends_gw: dict[str, Any]) -> None:
    url = ends_gw["url"]
    poor, poor_secret = make_key(url, budgets=[{"period": "day", "usd": 1, "hard": True}])
    slow, slow_secret = make_key(url, rate_limits={"rpm": 1})
    hi = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.RateLimitError):
        openai.OpenAI(base_url=f"{url}/v1", api_key=poor_secret, max_retries=0).chat.completions.create(
            model="default",
            messages=hi,  # type: ignore[arg-type]
        )
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=slow_secret, max_retries=0)
    client.chat.completions.create(model="default", messages=hi)  # type: ignore[arg-type]
    for _ in range(3):
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="default", messages=hi)  # type: ignore[arg-type]
    events = httpx.get(f"{url}/admin/audit", params={"limit": 1000}, headers=AUTH, timeout=10).json()["data"]
    refused = [(e["actor"], e["target"], e["reason"]) for e in events if e["action"] == "limit.refused"]
    assert (poor, f"key:{poor}", "budget") in refused
    assert refused.count((slow, f"key:{slow}", "requests")) == 1  # once a minute per key, scope, limit


def test_compacting_a_session_is_held_to_the_keys_budget_and_charged_to_the_key(
    ends_gw: dict[str, Any],
) -> None:
    url = ends_gw["url"]
    key_id, secret = make_key(url, budgets=[{"period": "total", "usd": 1_000_000, "hard": True}])
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=15)
    for text in ("one", "two", "three"):
        client.chat.completions.create(
            model="default",
            messages=[{"role": "user", "content": text}],
            extra_headers={"x-turnstile-session": "compact-me"},
        )
    spent = ledger_usd(ends_gw, f"key:{key_id}")
    bearer = {"Authorization": f"Bearer {secret}"}

    def budget(usd: float) -> None:
        got = httpx.patch(
            f"{url}/admin/keys/{key_id}",
            json={"budgets": [{"period": "total", "usd": usd, "hard": True}]},
            headers=AUTH,
            timeout=10,
        )
        assert got.status_code == 200, got.text

    budget(spent + 1)  # no room for a summary call's worst case
    refused = httpx.post(f"{url}/v1/sessions/compact-me/compact", json={}, headers=bearer, timeout=30)
    assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit"
    assert "budget exceeded" in refused.json()["error"]["message"]
    assert ledger_usd(ends_gw, f"key:{key_id}") == spent
    assert counter_usd(ends_gw, f"key:{key_id}") == (pytest.approx(spent), 0.0)
    budget(1_000_000)
    done = httpx.post(f"{url}/v1/sessions/compact-me/compact", json={}, headers=bearer, timeout=30)
    assert done.status_code == 200 and done.json()["compacted"] is True, done.text
    after = ledger_usd(ends_gw, f"key:{key_id}")
    assert after > spent  # the summary calls are charged to the key...
    assert counter_usd(ends_gw, f"key:{key_id}") == (pytest.approx(after), 0.0)  # ...the same on the counter


def test_the_admin_key_reads_the_metrics_and_governs_the_mcp_admin_api(ends_gw: dict[str, Any]) -> None:
    url = ends_gw["url"]
    assert httpx.get(f"{url}/metrics", timeout=10).status_code == 401  # keys required
    assert httpx.get(f"{url}/metrics", headers=AUTH, timeout=10).status_code == 200
    _, secret = make_key(url)
    assert (
        httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {secret}"}, timeout=10).status_code
        == 200
    )
    for headers in (
        AUTH,
        {"x-api-key": AUTH["Authorization"][7:]},
        {"x-admin-key": AUTH["Authorization"][7:]},
    ):
        assert httpx.get(f"{url}/admin/mcp/servers", headers=headers, timeout=10).status_code == 200
        assert httpx.get(f"{url}/admin/keys", headers=headers, timeout=10).status_code == 200
    assert (
        httpx.get(f"{url}/admin/mcp/servers", headers={"x-api-key": "wrong"}, timeout=10).status_code == 401
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("fail", ["open", "closed"])
def test_an_admission_without_redis_is_counted_in_the_metrics(
    tmp_path_factory: pytest.TempPathFactory, fail: str
) -> None:
    db_path = tmp_path_factory.mktemp(f"noredis-{fail}") / "gateway.db"
    config = demo_config(db_path, redis={"url": f"redis://127.0.0.1:{_closed_port()}/0", "fail": fail})
    with keyed_gateway(config) as gw:
        _, secret = make_key(gw["url"], budgets=[{"period": "day", "usd": 1_000_000, "hard": True}])
        answer = httpx.post(
            f"{gw['url']}/v1/chat/completions",
            json={"model": "default", "messages": [{"role": "user", "content": "hi"}]},
            headers={"Authorization": f"Bearer {secret}"},
            timeout=15,
        )
        assert answer.status_code == (200 if fail == "open" else 503)
        metrics = httpx.get(f"{gw['url']}/metrics", headers=AUTH, timeout=10).text
        outcome = "admitted" if fail == "open" else "refused"
        assert f'turnstile_limit_counters_unreachable_total{{outcome="{outcome}"}} 1.0' in metrics
