"""Fixtures and matrix bookkeeping of the compatibility suite.

The clients run against the session's gateway and upstream stand-in (``tests/conftest.py``,
configured by :mod:`standins.topology`): a scenario picks its upstream by the model name it
sends (:data:`MODEL_FOR`), e.g. ``an`` goes to the Anthropic Messages stand-in. Each test's
outcome becomes a cell of ``docs/compat.md`` (:mod:`compat.matrix`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from wire.conftest import ant, db_path, gateway_url, gem, oai, upstream  # noqa: F401  (fixtures)

from .matrix import COLUMNS, parse, render, write_merged

HERE = Path(__file__).parent
DOC = HERE.parents[1] / "docs" / "compat.md"
# The model name a client sends to reach each upstream wire API (standins.topology.MATRIX).
MODEL_FOR = {"openai_chat": "oa", "openai_responses": "rs", "anthropic_messages": "an", "gemini": "ge"}
# The upstream model id the stand-in sees for each (what a scripted answer matches).
UPSTREAM_MODEL = {
    "openai_chat": "gpt-4o-mini",
    "openai_responses": "gpt-4o-mini",
    "anthropic_messages": "claude-sonnet-4-20250514",
    "gemini": "gemini-3-pro-preview",
}

_OUTCOMES = pytest.StashKey[dict[tuple[str, str, str], str]]()
_CHECKS = pytest.StashKey[dict[tuple[str, str], str]]()
_ITEMS = pytest.StashKey[set[str]]()


def _cell(item: pytest.Item) -> tuple[str, str, str, str] | None:
    mark = item.get_closest_marker("compat")
    if mark is None:
        return None
    kw = mark.kwargs
    params = getattr(item, "callspec", None)
    api = kw.get("api") or (params.params.get("api") if params is not None else None) or "mcp"
    if api not in COLUMNS:
        raise pytest.UsageError(f"{item.nodeid}: compat api {api!r} is not one of {COLUMNS}")
    return str(kw["client"]), str(kw["scenario"]), api, str(kw.get("checks", ""))


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    config.stash[_OUTCOMES] = {}
    config.stash[_CHECKS] = {}
    config.stash[_ITEMS] = {str(item.path) for item in items if item.path.is_relative_to(HERE)}
    for item in items:
        exempt = item.path.name == "test_compat_matrix_doc.py"
        if item.path.is_relative_to(HERE) and not exempt and _cell(item) is None:
            raise pytest.UsageError(f"{item.nodeid}: every compat test needs a compat(...) marker")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    cell = _cell(item)
    if cell is None or (report.when != "call" and not (report.skipped or report.failed)):
        return report
    client, scenario, api, checks = cell
    if hasattr(report, "wasxfail"):  # a known failure, marked strict: its reason is in the test
        outcome = "xfail" if report.skipped else "FAIL"
    else:
        outcome = "pass" if report.passed else "skip" if report.skipped else "FAIL"
    outcomes = item.config.stash[_OUTCOMES]
    key = (client, scenario, api)
    if outcomes.get(key) in (None, "pass") or outcome == "FAIL":
        outcomes[key] = outcome
    item.config.stash[_CHECKS][(client, scenario)] = checks
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _OUTCOMES not in config.stash or not config.stash[_OUTCOMES]:
        return
    outcomes, checks = config.stash[_OUTCOMES], config.stash[_CHECKS]
    files = {str(p) for p in HERE.rglob("test_*.py")}
    full = (
        files <= config.stash[_ITEMS]
        and not session.config.option.keyword
        and not session.config.option.markexpr
    )
    target = config.getoption("--compat-matrix")
    if target:
        write_merged(Path(target), outcomes, checks, full=full)
        return
    if not full or "skip" in outcomes.values():
        return
    want = render(outcomes, checks)
    have = DOC.read_text() if DOC.exists() else ""
    if parse(have) != parse(want):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                "docs/compat.md differs from this run's compatibility matrix: "
                "run `uv run pytest tests/compat --compat-matrix docs/compat.md` and commit it",
                red=True,
            )


# The model name structured-output scenarios send: Anthropic's native ``output_config.format``
# slot is only on newer Claude models (``claude-sonnet-4-5``); ``an`` gets the forced output tool.
STRUCTURED_MODEL = {**MODEL_FOR, "anthropic_messages": "claude-sonnet-4-5"}
STRUCTURED_UPSTREAM_MODEL = {**UPSTREAM_MODEL, "anthropic_messages": "claude-sonnet-4-5"}
