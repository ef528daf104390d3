"""Server-side conversation state is isolated between virtual keys, through the real gateway
with the official SDKs (``gateway.sessions.owners``).

A stored OpenAI response, a session bound with ``x-turnstile-session`` and an Anthropic message
thread belong to the key that created them: another key reading, continuing, forking,
labelling, compacting or deleting one gets exactly the 404 an unknown id gets, in its own
dialect; the list of sessions shows a key its own; the admin key sees every session and stored
response. With keys optional, anonymous callers see only anonymous callers' sessions, never a
key's. Each case runs with keys required (the server judges the key before the body) and
optional (the key is judged where the stored state is read).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from standins.keyed import AUTH, demo_config, keyed_gateway, make_key, make_team


@pytest.fixture(scope="module", params=["required", "optional"])
def iso_gw(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """A gateway with keys ``required`` or ``optional``, the demo deployment, sessions
    compacted by the demo deployment, and three keys: ``a`` and ``b`` of one team, ``c``."""
    db_path = tmp_path_factory.mktemp(f"iso-{request.param}") / "gateway.db"
    config = demo_config(
        db_path,
        access={"auth": request.param, "admin_key_env": "TURNSTILE_TEST_KEYED_ADMIN_KEY"},
        sessions={"compaction_deployment": "demo"},
    )
    with keyed_gateway(config) as gw:
        team = make_team(gw["url"], f"iso-team-{request.param}")
        gw["keys"] = {name: make_key(gw["url"], team_id=team if name != "c" else None) for name in "abc"}
        gw["auth"] = request.param
        yield gw


def _oai(gw: dict[str, Any], who: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gw['url']}/v1", api_key=gw["keys"][who][1], max_retries=0, timeout=20)


def _bearer(gw: dict[str, Any], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {gw['keys'][who][1]}"}


def _same_but_id(a: Any, b: Any, real: str, fake: str) -> bool:
    """Whether two error bodies are the same once the id each names is blanked."""
    return str(a).replace(real, "ID") == str(b).replace(fake, "ID")


def test_a_stored_response_is_not_found_for_another_key_exactly_as_an_unknown_id(
    iso_gw: dict[str, Any],
) -> None:
    alice, bob = _oai(iso_gw, "a"), _oai(iso_gw, "b")  # same team: still another key
    stored = alice.responses.create(model="default", input="remember the word teapot")
    unknown = "resp_" + "0" * 32
    for attempt in (
        lambda rid: bob.responses.retrieve(rid),
        lambda rid: bob.responses.input_items.list(rid),
        lambda rid: bob.responses.create(model="default", input="and then?", previous_response_id=rid),
        lambda rid: bob.responses.input_tokens.count(model="default", input="x", previous_response_id=rid),
        lambda rid: bob.responses.delete(rid),
    ):
        with pytest.raises(openai.NotFoundError) as theirs:
            attempt(stored.id)
        with pytest.raises(openai.NotFoundError) as absent:
            attempt(unknown)
        assert _same_but_id(theirs.value.body, absent.value.body, stored.id, unknown)
    again = alice.responses.create(model="default", input="and then?", previous_response_id=stored.id)
    assert alice.responses.retrieve(stored.id).id == stored.id  # bob's delete changed nothing
    assert again.previous_response_id == stored.id
    admin = httpx.get(f"{iso_gw['url']}/v1/responses/{stored.id}", headers=AUTH, timeout=10)
    assert admin.status_code == 200 and admin.json()["id"] == stored.id


def test_a_session_of_one_key_is_invisible_to_every_other_key(iso_gw: dict[str, Any]) -> None:
    url, sid = iso_gw["url"], f"iso-session-{iso_gw['auth']}"
    alice, carol = _oai(iso_gw, "a"), _oai(iso_gw, "c")
    alice.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": "first"}],
        extra_headers={"x-turnstile-session": sid},
    )
    with pytest.raises(openai.NotFoundError) as err:  # carol binding a turn to alice's session
        carol.chat.completions.create(
            model="default",
            messages=[{"role": "user", "content": "mine now"}],
            extra_headers={"x-turnstile-session": sid},
        )
    assert isinstance(err.value.body, dict)
    assert (err.value.body["message"], err.value.body["param"]) == (f"no session {sid!r}", "session")
    with pytest.raises(anthropic.NotFoundError):  # in the Anthropic dialect too
        anthropic.Anthropic(base_url=url, api_key=iso_gw["keys"]["b"][1], max_retries=0).messages.create(
            model="default",
            max_tokens=16,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-turnstile-session": sid},
        )
    own = httpx.get(f"{url}/v1/sessions/{sid}", headers=_bearer(iso_gw, "a"), timeout=10).json()
    leaf = own["leaf_id"]
    assert own["owner_key"] == iso_gw["keys"]["a"][0] and own["entry_count"] == 2
    for method, path, body in (
        ("GET", f"/v1/sessions/{sid}", None),
        ("POST", f"/v1/sessions/{sid}/fork", {}),
        ("POST", f"/v1/sessions/{sid}/entries/{leaf}/label", {"label": "x"}),
        ("POST", f"/v1/sessions/{sid}/compact", {}),
    ):
        theirs = httpx.request(method, url + path, json=body, headers=_bearer(iso_gw, "b"), timeout=10)
        absent = httpx.request(
            method,
            url + path.replace(sid, "no-such-session"),
            json=body,
            headers=_bearer(iso_gw, "b"),
            timeout=10,
        )
        assert theirs.status_code == absent.status_code == 404, (path, theirs.text)
        assert _same_but_id(theirs.json(), absent.json(), sid, "no-such-session")
    listed = httpx.get(f"{url}/v1/sessions", headers=_bearer(iso_gw, "b"), timeout=10).json()["data"]
    assert sid not in [s["id"] for s in listed]
    mine = httpx.get(f"{url}/v1/sessions", headers=_bearer(iso_gw, "a"), timeout=10).json()["data"]
    assert sid in [s["id"] for s in mine] and {s["owner_key"] for s in mine} == {iso_gw["keys"]["a"][0]}
    everyone = httpx.get(f"{url}/v1/sessions", params={"limit": 1000}, headers=AUTH, timeout=10).json()[
        "data"
    ]
    owners = {s["owner_key"] for s in everyone}
    assert sid in [s["id"] for s in everyone] and {iso_gw["keys"]["a"][0]} <= owners
    only_a = httpx.get(
        f"{url}/v1/sessions", params={"key_id": iso_gw["keys"]["a"][0]}, headers=AUTH, timeout=10
    ).json()["data"]
    assert {s["owner_key"] for s in only_a} == {iso_gw["keys"]["a"][0]}
    refused = httpx.get(
        f"{url}/v1/sessions", params={"key_id": "x"}, headers=_bearer(iso_gw, "b"), timeout=10
    )
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "key_id"
    forked = httpx.post(f"{url}/v1/sessions/{sid}/fork", json={}, headers=AUTH, timeout=10)
    assert forked.status_code == 201 and forked.json()["owner_key"] == iso_gw["keys"]["a"][0]


def test_a_message_thread_of_one_key_cannot_be_continued_by_another(iso_gw: dict[str, Any]) -> None:
    url = iso_gw["url"]
    alice = anthropic.Anthropic(base_url=url, api_key=iso_gw["keys"]["a"][1], max_retries=0, timeout=20)
    thread = alice.beta.messages.thread(model="default", max_tokens=64, system="Be brief.")
    first = thread.send({"role": "user", "content": "One?"})
    body = {
        "model": "default",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Two?"}],
        "thread": {"type": "continue", "previous_message_id": first.id},
    }
    headers = {"x-api-key": iso_gw["keys"]["c"][1], "anthropic-beta": "message-threads-2026-08-12"}
    theirs = httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=10)
    unknown = "msg_" + "0" * 32
    body["thread"] = {"type": "continue", "previous_message_id": unknown}
    absent = httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=10)
    assert theirs.status_code == absent.status_code == 404
    assert theirs.json()["error"]["details"] == {"error_code": "thread_not_found"}
    assert _same_but_id(theirs.json(), absent.json(), first.id, unknown)
    second = thread.send({"role": "user", "content": "Two?"})  # its owner continues it
    assert second.id != first.id


@pytest.mark.parametrize("iso_gw", ["optional"], indirect=True)  # anonymous callers: keys optional
def test_anonymous_callers_see_only_anonymous_sessions_and_never_a_keys(iso_gw: dict[str, Any]) -> None:
    url = iso_gw["url"]
    keyed = _oai(iso_gw, "a").responses.create(model="default", input="keyed")
    anon = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-not-a-virtual-key", max_retries=0, timeout=20)
    with pytest.raises(openai.NotFoundError):
        anon.responses.retrieve(keyed.id)
    own = anon.responses.create(model="default", input="anonymous")
    assert anon.responses.retrieve(own.id).id == own.id
    with pytest.raises(openai.NotFoundError):  # and a key does not see the anonymous one
        _oai(iso_gw, "a").responses.retrieve(own.id)
    anon.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-turnstile-session": "iso-anon-session"},
    )
    listed = httpx.get(f"{url}/v1/sessions", params={"limit": 1000}, timeout=10).json()["data"]
    assert {s["owner_key"] for s in listed} == {None}
    assert "iso-anon-session" in [s["id"] for s in listed]
