"""The model names the pinned agents request by default (:mod:`tests.e2e.model_names`) are
routed by the shipped configurations: with no key set to the demo stand-in, with the provider's
key to a deployment of that very model; and the README's table names each of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import Settings, load_config
from gateway.deployments import DeploymentTable

from .model_names import REQUESTED, all_names

REPO = Path(__file__).resolve().parents[2]
CONFIGS = [REPO / "config" / "default.yaml", REPO / "config" / "example.yaml"]
KEYS = {"OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "x", "GEMINI_API_KEY": "x", "GROQ_API_KEY": "x"}


def _table(config: Path, monkeypatch: pytest.MonkeyPatch, keys: dict[str, str]) -> DeploymentTable:
    for var in KEYS:
        monkeypatch.delenv(var, raising=False)
    for var, value in keys.items():
        monkeypatch.setenv(var, value)
    return DeploymentTable.build(load_config(config), Settings(), resolve_prices=False)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_requested_name_goes_to_demo_without_keys(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(config, monkeypatch, {})
    assert {name: [d.name for d in table.candidates(name)] for name in all_names()} == {
        name: ["demo"] for name in all_names()
    }


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_requested_name_reaches_that_model_with_its_key(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(config, monkeypatch, KEYS)
    unserved = {
        name: [d.model for d in table.candidates(name)]
        for name in all_names()
        if name not in [d.model for d in table.candidates(name)]
    }
    assert unserved == {}


def test_readme_lists_every_requested_name() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Model names the tools ask for", 1)[-1].split("\n## ", 1)[0]
    missing = [name for name in all_names() if f"`{name}`" not in section]
    assert missing == [], f"README's model-name table lacks {missing} (tools: {sorted(REQUESTED)})"
