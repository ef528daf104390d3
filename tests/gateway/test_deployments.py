from __future__ import annotations

import pytest

from gateway.config import Settings, default_config_path, load_config, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import ModelNotFound


def _table(monkeypatch: pytest.MonkeyPatch, **env: str) -> DeploymentTable:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return DeploymentTable.build(load_config(default_config_path()), Settings(), resolve_prices=False)


def test_without_keys_only_the_demo_deployment_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(monkeypatch)
    assert list(table.deployments) == ["demo"]
    assert table.disabled["openai-gpt-4.1-mini"] == "environment variable OPENAI_API_KEY is not set"
    assert table.aliases["default"] == ["demo"]
    # the names coding agents request by default (README "Model names the tools ask for") too
    assert {name: deps for name, deps in table.aliases.items() if deps != ["demo"]} == {}
    assert "gpt-6.2-sol" in table.aliases and "claude-haiku-5-5" in table.aliases


def test_a_key_in_the_environment_switches_its_deployments_on(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(monkeypatch, ANTHROPIC_API_KEY="sk-test")
    assert "anthropic-claude-sonnet-4-5" in table.deployments
    assert table.keys["anthropic-claude-sonnet-4-5"] == "sk-test"
    assert [d.name for d in table.candidates("default")] == ["anthropic-claude-sonnet-4-5"]


def test_with_a_key_set_the_demo_stand_in_is_never_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(monkeypatch, OPENAI_API_KEY="sk-test")
    for alias in ("default", "gpt-6.2-sol", "gpt-5.6-luna"):
        assert "demo" not in [d.name for d in table.candidates(alias)], alias
    assert [d.name for d in table.candidates("claude-opus-5-5")] == ["demo"]  # its provider's key is unset


def test_models_list_labels_the_demo_as_a_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = _table(monkeypatch).models()
    demo = next(e for e in entries if e["id"] == "demo")
    assert "stand-in" in demo["description"]


def test_unknown_model_names_what_is_available(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelNotFound) as err:
        _table(monkeypatch).candidates("gpt-9")
    assert err.value.param == "model" and "gpt-9" in err.value.message and "demo" in err.value.message


def test_a_disabled_deployment_says_which_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelNotFound, match=r"model 'openai-gpt-4\.1' is disabled: set OPENAI_API_KEY"):
        _table(monkeypatch).candidates("openai-gpt-4.1")


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("gpt-4.1", "OPENAI_API_KEY"),
        ("claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("gemini-2.5-pro", "GEMINI_API_KEY"),
    ],
)
def test_an_alias_whose_deployments_all_lack_keys_says_which_variable_to_set(
    monkeypatch: pytest.MonkeyPatch, model: str, variable: str
) -> None:
    with pytest.raises(ModelNotFound) as err:
        _table(monkeypatch).candidates(model)
    assert err.value.status == 404 and err.value.param == "model"
    assert err.value.message.startswith(f"model {model!r} is disabled: set {variable} ")
    assert "does not exist" not in err.value.message


def test_a_disabled_alias_over_several_providers_names_every_variable_that_would_enable_it() -> None:
    cfg = parse_config(
        {
            "deployments": [
                {"name": "o", "api": "openai_chat", "model": "gpt-x", "api_key_env": "OPENAI_API_KEY"},
                {"name": "o2", "api": "openai_chat", "model": "gpt-y", "api_key_env": "OPENAI_API_KEY"},
                {
                    "name": "a",
                    "api": "anthropic_messages",
                    "model": "claude-x",
                    "api_key_env": "ANTHROPIC_API_KEY",
                },
            ],
            "models": [{"name": "smart", "deployments": ["o", "a", "o2"]}],
        }
    )
    table = DeploymentTable.build(cfg, _NoKeys(), resolve_prices=False)
    with pytest.raises(ModelNotFound, match="'smart' is disabled: set OPENAI_API_KEY or ANTHROPIC_API_KEY "):
        table.candidates("smart")
    with pytest.raises(ModelNotFound, match="'claude-x' is disabled: set ANTHROPIC_API_KEY "):
        table.candidates("claude-x")  # the upstream model id of a disabled deployment
    assert table.disabled_aliases == {"smart": "set OPENAI_API_KEY or ANTHROPIC_API_KEY"}


class _NoKeys(Settings):
    def read_key(self, name: str) -> str | None:
        return None


def test_upstream_model_id_resolves_to_its_deployment() -> None:
    cfg = parse_config({"deployments": [{"name": "d1", "api": "demo", "model": "m-1"}]})
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    assert [d.name for d in table.candidates("m-1")] == ["d1"]


@pytest.mark.parametrize(
    "model",
    [
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-3-pro-preview",
        "gemini-3-flash-preview",
    ],
)
def test_the_names_gemini_cli_asks_for_are_served_with_a_gemini_key(
    monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    table = _table(monkeypatch, GEMINI_API_KEY="k")
    assert [d.model for d in table.candidates(model)] == [model]
