"""The console in a real browser: Playwright (PyPI ``playwright``) driving Debian's Chromium
(``/usr/bin/chromium``; Playwright's own browser download is not used) against a real
``turnstile serve`` child process after turns made with the openai SDK.

An operator logs in with the admin key, finds a turn by its tool name (the htmx search), opens
it, opens its session's tree, looks at every other page, and logs out; the browser sends no
request but the log-in and log-out forms, nothing in the stores changes, no Content-Security-Policy
violation or script error is reported, axe-core (npm, pinned: :data:`AXE`) finds no serious or
critical accessibility violation on any page, desktop or phone, and the keyboard reaches the
content through the skip link with a visible focus ring. Screenshots and the axe results are
written to ``artifacts/console/`` (gitignored; CI keeps them).

Without Chromium, or without the npm registry for axe-core, the tests skip with the reason,
unless ``TURNSTILE_REQUIRE_SERVICES=1`` (CI installs Chromium in ``.ci/run``), where they fail.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
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
from standins.serve_process import ServeProcess, clean_env, free_port

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
AXE = {"axe-core": "4.14.1"}
"""axe-core from npm (latest on 2026-12-06), injected into each page to check it."""

ARTIFACTS = REPO / "artifacts" / "console"
PHONE_WIDTH = 390
"""The phone's viewport width (CSS pixels; an iPhone 12-15's)."""
SERIOUS = ("serious", "critical")


def _unavailable(reason: str) -> None:
    if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
        pytest.fail(reason + "; TURNSTILE_REQUIRE_SERVICES=1 requires it")
    pytest.skip(reason)


def _axe_source() -> str:
    from e2e.npm_tools import CACHE, RegistryUnreachable, ensure_installed

    try:
        tools = ensure_installed(CACHE.parent / "axe-core", pinned=AXE)
    except RegistryUnreachable as err:
        _unavailable(f"axe-core cannot be installed from npm: {err}")
    return (tools.prefix / "node_modules" / "axe-core" / "axe.min.js").read_text()


def _mcp_ready(url: str, timeout_s: float = 60.0) -> None:
    """Wait (bounded) until every MCP server of the child is ready (the tool loop needs them)."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=url, timeout=5) as http:
        while time.monotonic() < deadline:
            servers = (http.get("/health").json().get("mcp") or {}).get("servers", [])
            if servers and all(s.get("state") == "ready" for s in servers):
                return
            time.sleep(0.1)  # polling pace while the child connects its MCP servers
    raise AssertionError(f"MCP servers not ready within {timeout_s} s: {servers}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``turnstile serve`` with :func:`console_support.gateway_config`, after
    :func:`console_support.drive`; the browser and axe-core ready."""
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is absent (apt-get install -y chromium)")
    axe = _axe_source()
    work = tmp_path_factory.mktemp("console-browser")
    config = work / "turnstile.yaml"
    config.write_text(yaml.safe_dump(gateway_config(str(work / "gateway.db"))))
    env = clean_env(**{ADMIN_ENV: ADMIN_KEY, PROVIDER_ENV: PROVIDER_KEY})
    proc = ServeProcess(config, free_port(), cwd=work, env=env)
    proc.start()
    try:
        _mcp_ready(proc.url)
        made = drive(proc.url)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        yield {"url": proc.url, "db_path": work / "gateway.db", "axe": axe, **made}
    finally:
        proc.terminate()
        proc.wait(30)


class Session:
    """One browser page on the console, recording what it asks for and every error it reports."""

    def __init__(self, page: Any, served: dict[str, Any], name: str) -> None:
        self.page = page
        self.served = served
        self.name = name
        self.requests: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.axe: dict[str, list[dict[str, Any]]] = {}
        page.on("request", lambda r: self.requests.append((r.method, r.url)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def shot(self, label: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{self.name}-{label}.png"), full_page=True)

    def check(self, label: str) -> None:
        """Screenshot the page and run axe-core on it (the result kept for the artifacts)."""
        self.shot(label)
        self.page.evaluate(self.served["axe"])
        found = self.page.evaluate(
            """async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(
                v => ({id: v.id, impact: v.impact, help: v.help,
                       nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}))"""
        )
        self.axe[f"{label} {self.page.url}"] = found

    def serious(self) -> dict[str, list[str]]:
        return {
            where: [f"{v['id']} ({v['impact']}): {v['nodes']}" for v in found if v["impact"] in SERIOUS]
            for where, found in self.axe.items()
            if any(v["impact"] in SERIOUS for v in found)
        }

    def log_in(self) -> None:
        page = self.page
        page.goto(self.served["url"] + "/ui")
        assert page.url.startswith(self.served["url"] + "/ui/login")
        self.check("01-login")
        page.get_by_label("Admin key").fill(ADMIN_KEY)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(self.served["url"] + "/ui")


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def test_an_operator_finds_a_turn_by_tool_name_opens_it_and_its_session_tree(
    served: dict[str, Any], browser: Any
) -> None:
    from playwright.sync_api import expect

    before = store_state(served["db_path"])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    s = Session(context.new_page(), served, "desktop")
    page, url = s.page, served["url"]
    s.log_in()
    expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible()
    s.check("02-overview")

    page.get_by_role("navigation", name="Console sections").get_by_role("link", name="Requests").click()
    expect(page.get_by_role("heading", name="Recent turns")).to_be_visible()
    page.get_by_label("Tool name").fill("get_weather")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("heading", name="Matching turns")).to_be_visible()  # swapped in by htmx
    assert page.url == f"{url}/ui/turns?tool=get_weather"  # the search is in the address bar
    results = page.locator("#results")
    expect(results.get_by_role("link", name=served["tool_call"][:8], exact=True)).to_be_visible()
    expect(results.get_by_role("link", name=served["tool_result"][:8], exact=True)).to_be_visible()
    expect(results.get_by_role("link", name=served["loop"][:8], exact=True)).to_have_count(0)
    s.check("03-requests-by-tool")

    results.get_by_role("link", name=served["tool_call"][:8], exact=True).click()
    page.wait_for_url(f"{url}/ui/turns/{served['tool_call']}")
    expect(page.get_by_text("get_weather", exact=True).first).to_be_visible()
    expect(page.get_by_role("heading", name="Routing decision")).to_be_visible()
    expect(page.get_by_text("rules: ", exact=False).first).to_be_visible()
    page.get_by_text("The answer as stored (internal schema, JSON)").click()
    expect(page.get_by_text('"tool_call"').first).to_be_visible()
    s.check("04-turn")

    page.get_by_role("link", name=SESSION, exact=True).first.click()
    page.wait_for_url(f"{url}/ui/sessions/{SESSION}")
    expect(page.get_by_text("Branch 1 (the current path)")).to_be_visible()
    expect(page.get_by_text("label: first question")).to_be_visible()
    page.get_by_text("Compaction summary").click()
    expect(page.get_by_text("The context after it starts at entry")).to_be_visible()
    expect(page.get_by_role("link", name=FORK).first).to_be_visible()
    s.check("05-session-tree")

    nav = page.get_by_role("navigation", name="Console sections")
    nav.get_by_role("link", name="Deployments").click()
    expect(page.get_by_role("heading", name="Deployments", level=1)).to_be_visible()
    s.check("06-deployments")
    nav.get_by_role("link", name="MCP servers").click()
    expect(page.get_by_role("link", name="turns calling time__get_current_time")).to_be_visible()
    s.check("07-mcp")
    nav.get_by_role("link", name="Audit").click()
    expect(page.get_by_text("allowed").first).to_be_visible()
    s.check("08-audit")
    nav.get_by_role("link", name="Keys").click()
    expect(page.get_by_text(served["key"]["prefix"] + "…")).to_be_visible()
    s.check("09-keys")
    page.goto(f"{url}/ui/turns/{served['loop']}")
    s.check("10-tool-loop-turn")

    sent = [(m, u) for m, u in s.requests if m != "GET"]
    assert sent == [("POST", f"{url}/ui/login")], sent  # browsing asked for nothing else
    assert store_state(served["db_path"]) == before  # and changed nothing
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{url}/ui/login")
    page.goto(f"{url}/ui/turns")
    assert page.url.startswith(f"{url}/ui/login")  # the session is gone
    assert s.errors == [], s.errors  # no CSP violation, no script error
    (ARTIFACTS / "axe-desktop.json").write_text(json.dumps(s.axe, indent=1))
    assert s.serious() == {}
    context.close()


def test_on_a_phone_the_pages_fit_and_the_keyboard_reaches_the_content(
    served: dict[str, Any], browser: Any
) -> None:
    context = browser.new_context(
        viewport={"width": PHONE_WIDTH, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    s = Session(context.new_page(), served, "phone")
    page, url = s.page, served["url"]
    s.log_in()
    overflowing = {}
    for label, path in (
        ("02-overview", "/ui"),
        ("03-requests", "/ui/turns?tool=get_weather"),
        ("04-turn", f"/ui/turns/{served['tool_call']}"),
        ("05-session-tree", f"/ui/sessions/{SESSION}"),
        ("06-deployments", "/ui/deployments"),
        ("07-keys", "/ui/access"),
        ("08-all-requests", "/ui/turns"),
        ("09-loop-turn", f"/ui/turns/{served['loop']}"),
        ("10-sessions", "/ui/sessions"),
        ("11-mcp", "/ui/mcp"),
        ("12-audit", "/ui/audit"),
        ("13-fork", f"/ui/sessions/{FORK}"),
        ("14-overview-week", "/ui?window=7d"),
    ):
        page.goto(url + path)
        # The page itself never scrolls sideways: a wide table scrolls inside its own region.
        # A phone browser zooms out to show a page wider than its screen, which widens
        # innerWidth too: so the page's width is held to the phone's 390 CSS pixels as well.
        wide, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        if wide > inner or inner > PHONE_WIDTH:
            overflowing[path] = (wide, inner)
        s.check(label)
    assert overflowing == {}, overflowing

    page.goto(url + "/ui/turns")
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => { const e = document.activeElement; const st = getComputedStyle(e);"
        " return [e.textContent.trim(), st.outlineStyle, st.outlineWidth]; }"
    )
    assert focused[0] == "Skip to content" and focused[1] != "none" and focused[2] != "0px", focused
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    page.keyboard.press("Tab")  # from the content on: the search form's first field
    assert page.evaluate("document.activeElement.id") == "f-request"
    (ARTIFACTS / "axe-phone.json").write_text(json.dumps(s.axe, indent=1))
    assert s.errors == [], s.errors
    assert s.serious() == {}
    context.close()
