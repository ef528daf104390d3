"""The console's pages on a real gateway (in process, uvicorn on a free port) after real turns
made with the openai SDK: the log-in and what it refuses (wrong key, no CSRF token, another
site), every page's content and headers, browsing changes nothing, no page and no metric shows a
secret or a whole virtual key, and ``/metrics`` under ``access.auth: required`` takes the admin
key or a virtual key."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from console_support import (
    ADMIN_ENV,
    ADMIN_KEY,
    FORK,
    PROVIDER_ENV,
    PROVIDER_KEY,
    SESSION,
    drive,
    gateway_config,
    store_state,
)
from standins.servers import GatewayServer, LoopThread
from standins.wirekit import transcript_row

from gateway.config import Settings, parse_config
from gateway.console.web import CSP
from gateway.server import create_app

PAGES = ("/ui", "/ui?window=1h", "/ui?window=7d", "/ui/deployments", "/ui/turns", "/ui/sessions", "/ui/mcp")
PAGES += ("/ui/audit", "/ui/access", f"/ui/sessions/{SESSION}", f"/ui/sessions/{FORK}")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The gateway of :func:`console_support.gateway_config`, served, after :func:`drive`."""
    db_path = tmp_path_factory.mktemp("console") / "gateway.db"
    loop = LoopThread()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ADMIN_ENV, ADMIN_KEY)
        mp.setenv(PROVIDER_ENV, PROVIDER_KEY)
        config = parse_config(gateway_config(str(db_path)))
        app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        server = GatewayServer(app)
        loop.call(server.start())
        try:
            ready = loop.call(app.state.mcp.registry.wait_ready(30), timeout=40)
            assert all(ready.values()), ready
            made = drive(server.url)
            for rid in (made["tool_call"], made["loop"], made["quoting"], made["refused"]):
                transcript_row(db_path, rid)
            yield {"url": server.url, "db_path": db_path, **made}
        finally:
            loop.call(server.stop())
            loop.close()


def _login_form(http: httpx.Client, next_path: str = "/ui") -> str:
    form = http.get(f"/ui/login?next={quote(next_path)}")
    assert form.status_code == 200
    return re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)  # type: ignore[union-attr]


@contextmanager
def _signed_in(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as http:
        token = _login_form(http)
        done = http.post("/ui/login", data={"admin_key": ADMIN_KEY, "csrf": token, "next": "/ui"})
        assert done.status_code == 303 and done.headers["location"] == "/ui", done.text
        yield http


def _links(html: str) -> set[str]:
    return {
        h.replace("&amp;", "&")
        for h in re.findall(r'href="(/ui[^"#]*)', html)
        if not h.startswith("/ui/static")
    }


def test_without_a_session_every_page_sends_the_browser_to_the_log_in(gw: dict[str, Any]) -> None:
    with httpx.Client(base_url=gw["url"], timeout=10) as http:
        page = http.get("/ui/turns?tool=get_weather")
        assert page.status_code == 303
        assert page.headers["location"] == "/ui/login?next=%2Fui%2Fturns%3Ftool%3Dget_weather"
        assert page.headers["content-security-policy"] == CSP
        partial = http.get("/ui/turns", headers={"hx-request": "true"})
        assert partial.status_code == 401 and partial.headers["hx-redirect"].startswith("/ui/login")
    with httpx.Client(
        base_url=gw["url"], timeout=10, cookies={"turnstile_console": "9999999999.abc.def"}
    ) as http:
        assert http.get("/ui").status_code == 303  # a forged session


def test_the_log_in_takes_the_admin_key_only_with_its_form_token_from_this_site(gw: dict[str, Any]) -> None:
    with httpx.Client(base_url=gw["url"], timeout=10) as http:
        token = _login_form(http, "/ui/mcp")
        set_cookie = http.get("/ui/login").headers["set-cookie"].lower()
        assert "httponly" in set_cookie and "samesite=strict" in set_cookie and "path=/ui" in set_cookie
        token = _login_form(http, "/ui/mcp")
        wrong = http.post("/ui/login", data={"admin_key": "guess", "csrf": token, "next": "/ui/mcp"})
        assert wrong.status_code == 401 and "not the admin key" in wrong.text
        assert "turnstile_console=" not in wrong.headers.get("set-cookie", "")
        token = _login_form(http)
        elsewhere = http.post(
            "/ui/login",
            data={"admin_key": ADMIN_KEY, "csrf": token},
            headers={"origin": "https://evil.example"},
        )
        assert elsewhere.status_code == 403
        token = _login_form(http)
        stale = http.post("/ui/login", data={"admin_key": ADMIN_KEY, "csrf": token + "x"})
        assert stale.status_code == 403
        token = _login_form(http)
        right = http.post(
            "/ui/login", data={"admin_key": ADMIN_KEY, "csrf": token, "next": "https://evil.example/x"}
        )
        assert right.status_code == 303 and right.headers["location"] == "/ui"  # never off the console
        cookie = next(
            c for c in right.headers.get_list("set-cookie") if c.startswith("turnstile_console=")
        ).lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
        assert http.get("/ui").status_code == 200


def test_every_page_renders_with_the_strict_headers(gw: dict[str, Any]) -> None:
    with _signed_in(gw["url"]) as http:
        for path in (
            *PAGES,
            f"/ui/turns/{gw['tool_call']}",
            f"/ui/turns/{gw['loop']}",
            f"/ui/turns/{gw['refused']}",
        ):
            page = http.get(path)
            assert page.status_code == 200, (path, page.text[:2000])
            assert page.headers["content-security-policy"] == CSP
            assert page.headers["cache-control"] == "no-store" and page.headers["x-frame-options"] == "DENY"
            assert page.headers["content-type"].startswith("text/html")
            assert "<script" not in page.text.replace(
                '<script src="/ui/static/htmx.min.js', ""
            )  # no inline script
            assert " style=" not in page.text and "<style" not in page.text
            assert '<main id="main"' in page.text and 'aria-current="page"' in page.text


def test_the_request_log_finds_a_turn_by_tool_name_and_its_page_shows_what_happened(
    gw: dict[str, Any],
) -> None:
    with _signed_in(gw["url"]) as http:
        found = http.get("/ui/turns?tool=get_weather").text
        assert f"/ui/turns/{gw['tool_call']}" in found and f"/ui/turns/{gw['tool_result']}" in found
        assert f'/ui/turns/{gw["loop"]}"' not in found
        steps = http.get("/ui/turns?tool=time__get_current_time").text
        assert f"/ui/turns/{gw['loop']}.step1" in steps
        assert f"/ui/turns/{gw['refused']}" in http.get("/ui/turns?outcome=4xx").text
        by_key = http.get("/ui/turns?key=console-test").text  # a key by its name
        assert f"/ui/turns/{gw['tool_call']}" in by_key and gw["key"]["id"] in by_key
        assert "No turn matches" in http.get("/ui/turns?key=nobody").text
        assert "session: a session id" not in http.get(f"/ui/turns?session={SESSION}").text
        turn = http.get(f"/ui/turns/{gw['tool_call']}").text
        assert 'tool call <strong class="mono">get_weather</strong>' in turn
        assert "rules" in turn and "cheap" in turn and "Routing decision" in turn
        assert f'href="/ui/sessions/{SESSION}"' in turn and gw["key"]["id"] in turn
        loop = http.get(f"/ui/turns/{gw['loop']}").text
        assert f"/ui/turns/{gw['loop']}.step1" in loop and "Tool-loop steps" in loop
        step = http.get(f"/ui/turns/{gw['loop']}.step1").text
        assert f'href="/ui/turns/{gw["loop"]}"' in step and "time__get_current_time" in step
        bad = http.get("/ui/turns?outcome=maybe")
        assert bad.status_code == 400 and "outcome" in bad.text
        assert http.get("/ui/turns/nope").status_code == 404
        assert http.get("/ui/nowhere").status_code == 404


def test_the_other_pages_show_the_stores(gw: dict[str, Any]) -> None:
    with _signed_in(gw["url"]) as http:
        session = http.get(f"/ui/sessions/{SESSION}").text
        assert "Branch 1 (the current path)" in session and "Branch 2" in session
        assert "compaction (request)" in session and "label: first question" in session
        assert f'href="/ui/sessions/{FORK}"' in session and gw["tool_call"][:8] in session
        fork = http.get(f"/ui/sessions/{FORK}").text
        assert f'href="/ui/sessions/{SESSION}"' in fork and "entries inherited" in fork
        assert http.get("/ui/sessions?id=" + SESSION).headers["location"] == f"/ui/sessions/{SESSION}"
        assert http.get("/ui/sessions/no-such").status_code == 404
        mcp = http.get("/ui/mcp").text
        assert "time__get_current_time" in mcp and ">allow<" in mcp and "mcp-server-time" in mcp
        audit = http.get("/ui/audit?tool=get_current_time").text
        assert ">allowed<" in audit and "time__convert_time" not in audit and "key.created" in audit
        deployments = http.get("/ui/deployments").text
        assert ">closed<" in deployments and "environment variable" not in deployments  # all keys set
        keys = http.get("/ui/access").text
        assert gw["key"]["prefix"] + "…" in keys and gw["key"]["id"] in keys
        overview = http.get("/ui?window=1h").text
        assert overview.count("<svg") == 4 and "Routing saved (estimated)" in overview
        saved = re.search(r"Routing saved \(estimated\)</dt><dd>\$([0-9.]+)", overview)
        assert saved is not None and float(saved.group(1)) > 0  # cheap tier, priced against strong


def test_browsing_every_page_and_link_changes_nothing(gw: dict[str, Any]) -> None:
    before = store_state(gw["db_path"])
    seen: set[str] = set()
    with _signed_in(gw["url"]) as http:
        todo = list(PAGES)
        while todo and len(seen) < 200:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            page = http.get(path)
            assert page.status_code in (200, 303), path
            todo += sorted(_links(page.text) - seen)
    assert len(seen) > 20
    assert store_state(gw["db_path"]) == before


def test_log_out_needs_its_form_token_and_ends_the_session(gw: dict[str, Any]) -> None:
    with _signed_in(gw["url"]) as http:
        page = http.get("/ui").text
        token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        assert http.post("/ui/logout", data={}).status_code == 403
        assert (
            http.post(
                "/ui/logout", data={"csrf": token}, headers={"sec-fetch-site": "cross-site"}
            ).status_code
            == 403
        )
        done = http.post("/ui/logout", data={"csrf": token})
        assert done.status_code == 303 and done.headers["location"] == "/ui/login"
        assert http.get("/ui").status_code == 303


def test_no_page_and_no_metric_shows_a_secret_or_a_whole_virtual_key(gw: dict[str, Any]) -> None:
    secrets = (gw["secret"], ADMIN_KEY, PROVIDER_KEY, hashlib.sha256(gw["secret"].encode()).hexdigest())
    with _signed_in(gw["url"]) as http:
        quoting = http.get(f"/ui/turns/{gw['quoting']}").text
        assert "[redacted]" in quoting and gw["secret"][:12] + "…" in quoting  # it was there, and cut
        bodies = {path: http.get(path).text for path in (*PAGES, f"/ui/turns/{gw['quoting']}", "/ui/turns")}
    with httpx.Client(
        base_url=gw["url"], timeout=10, headers={"authorization": f"Bearer {ADMIN_KEY}"}
    ) as http:
        bodies["/metrics"] = http.get("/metrics").text
    for path, body in bodies.items():
        for secret in secrets:
            assert secret not in body, path
        assert not re.search(r"tsk-[A-Za-z0-9_\-]{9,}", body), path


def test_metrics_where_keys_are_required_take_the_admin_key_or_a_virtual_key(gw: dict[str, Any]) -> None:
    with httpx.Client(base_url=gw["url"], timeout=10) as http:
        assert http.get("/metrics").status_code == 401
        assert http.get("/metrics", headers={"authorization": "Bearer wrong"}).status_code == 401
        admin = http.get("/metrics", headers={"authorization": f"Bearer {ADMIN_KEY}"})
        assert admin.status_code == 200 and "turnstile_turns_total" in admin.text
        assert http.get("/metrics", headers={"x-api-key": ADMIN_KEY}).status_code == 200
        assert http.get("/metrics", headers={"authorization": f"Bearer {gw['secret']}"}).status_code == 200


def test_static_files_are_versioned_and_htmx_is_the_pinned_npm_file(gw: dict[str, Any]) -> None:
    with httpx.Client(base_url=gw["url"], timeout=10) as http:
        login = http.get("/ui/login").text
        src = re.search(r'src="(/ui/static/htmx\.min\.js\?v=[0-9a-f]+)"', login).group(1)  # type: ignore[union-attr]
        js = http.get(src)
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert "immutable" in js.headers["cache-control"] and js.headers["content-security-policy"] == CSP
        assert http.get("/ui/static/htmx.min.js").headers["cache-control"] == "no-cache"
        assert http.get("/ui/static/nothing.js").status_code == 404
    header, _, body = js.text.partition(" */\n")
    recorded = re.search(r"its sha256: ([0-9a-f]{64})", header).group(1)  # type: ignore[union-attr]
    assert hashlib.sha256(body.encode()).hexdigest() == recorded
    assert "htmx.org@2.0.11" in header and "Zero-Clause BSD" in header


def test_without_an_admin_key_the_console_is_closed_on_loopback_too(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    config = parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db")},
            "deployments": [{"name": "demo", "api": "demo", "model": "d"}],
        }
    )
    app = create_app(config=config, settings=Settings(db_path=tmp_path / "t.db", log_level="warning"))
    with TestClient(app, base_url="http://127.0.0.1") as http:
        for path in ("/ui", "/ui/login", "/ui/turns"):
            page = http.get(path, follow_redirects=False)
            assert page.status_code == 503 and "access:" in page.text and "admin_key_env" in page.text, path
        assert http.post("/ui/login", data={"admin_key": "", "csrf": "x"}).status_code == 503
        assert http.get("/metrics").status_code == 200  # optional on loopback: as before
    off = config.model_copy(update={"console": config.console.model_copy(update={"enabled": False})})
    app = create_app(config=off, settings=Settings(db_path=tmp_path / "t.db", log_level="warning"))
    with TestClient(app, base_url="http://127.0.0.1") as http:
        assert http.get("/ui").status_code == 404


def test_on_loopback_without_an_admin_key_the_one_time_login_link_logs_in_once(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    token = "one-time-token-" + "q" * 32
    config = parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db")},
            "deployments": [{"name": "demo", "api": "demo", "model": "d"}],
        }
    )
    settings = Settings(db_path=tmp_path / "t.db", log_level="warning", console_token=token)
    app = create_app(config=config, settings=settings)
    with (
        TestClient(app, base_url="http://127.0.0.1") as http,
        TestClient(app, base_url="http://127.0.0.1") as other,
    ):
        assert http.get("/ui", follow_redirects=False).headers["location"].startswith("/ui/login")
        page = http.get("/ui/login")
        assert page.status_code == 401 and "one-time login link" in page.text and token not in page.text
        assert http.get("/ui/login", params={"token": token + "x"}).status_code == 401
        opened = http.get("/ui/login", params={"token": token, "next": "/ui/turns"}, follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"] == "/ui/turns"
        assert (
            "HttpOnly" in opened.headers["set-cookie"] and "SameSite=strict" in opened.headers["set-cookie"]
        )
        assert http.get("/ui/turns").status_code == 200
        used = other.get("/ui/login", params={"token": token})
        assert used.status_code == 401 and "used already" in used.text
        assert other.get("/ui", follow_redirects=False).status_code == 303  # still logged out
    with pytest.MonkeyPatch.context() as mp:  # with an admin key the link is not a way in: the form
        mp.setenv("TURNSTILE_ADMIN_KEY", "the-operators-admin-key")
        app = create_app(config=config, settings=settings)
        with TestClient(app, base_url="http://127.0.0.1") as http:
            form = http.get("/ui/login", params={"token": token})
            assert form.status_code == 200 and 'name="admin_key"' in form.text
    public = config.model_copy(update={"server": config.server.model_copy(update={"host": "0.0.0.0"})})
    keyed = public.model_copy(update={"access": public.access.model_copy(update={"auth": "required"})})
    app = create_app(config=keyed, settings=settings)
    with TestClient(app, base_url="http://127.0.0.1") as http:  # off loopback the link means nothing
        assert http.get("/ui/login", params={"token": token}).status_code == 503
