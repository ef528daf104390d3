from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import GatewayConfig, default_config_path, load_config, parse_config
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_default_config_is_valid_and_has_the_demo_deployment() -> None:
    cfg = load_config(default_config_path())
    assert cfg.server.port == 4000 and cfg.server.host == "127.0.0.1"
    assert any(d.api == "demo" for d in cfg.deployments)


def test_example_config_documents_a_valid_configuration() -> None:
    cfg = load_config(ROOT / "config" / "example.yaml")
    apis = {d.api for d in cfg.deployments}
    assert apis == {"openai_chat", "openai_responses", "anthropic_messages", "gemini", "litellm", "demo"}


def test_example_config_documents_every_sessions_and_tool_loop_option_at_its_default() -> None:
    from gateway.config import AccessConfig, SessionsConfig, StorageConfig, ToolLoopConfig

    text = (ROOT / "config" / "example.yaml").read_text()
    cfg = load_config(ROOT / "config" / "example.yaml")
    assert "\nsessions:" in text and "\ntool_loop:" in text and "\nstorage:" in text and "\naccess:" in text
    assert cfg.sessions == SessionsConfig() and cfg.tool_loop == ToolLoopConfig()
    assert cfg.storage == StorageConfig() and cfg.access == AccessConfig()
    fields = [*SessionsConfig.model_fields, *ToolLoopConfig.model_fields, *AccessConfig.model_fields]
    for name in fields:
        assert f"\n  {name}:" in text, name


def test_the_storage_url_defaults_to_the_transcript_file_and_sessions_follow_it() -> None:
    from gateway.config import effective_auth, sessions_url, storage_url

    plain = parse_config({"server": {"db_path": "x.db"}})
    assert storage_url(plain) == sessions_url(plain) == "x.db"
    shared = parse_config({"storage": {"url": "postgresql://db/t"}})
    assert storage_url(shared) == sessions_url(shared) == "postgresql://db/t"
    own = parse_config({"storage": {"url": "postgresql://db/t"}, "sessions": {"url": "s.db"}})
    assert (storage_url(own), sessions_url(own)) == ("postgresql://db/t", "s.db")
    assert (effective_auth(plain, True), effective_auth(plain, False)) == ("optional", "required")
    assert effective_auth(parse_config({"access": {"auth": "off"}}), False) == "off"
    with pytest.raises(ConfigError, match="cache_ttl_s"):
        parse_config({"access": {"cache_ttl_s": 5}})


def test_example_config_documents_every_tracing_option_at_its_default() -> None:
    from gateway.config import TracingConfig

    text = (ROOT / "config" / "example.yaml").read_text()
    assert load_config(ROOT / "config" / "example.yaml").tracing == TracingConfig()
    for name in TracingConfig.model_fields:
        assert f"\n  {name}:" in text, name


def test_tracing_export_headers_come_from_the_variable_the_config_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gateway.config import Settings

    monkeypatch.setenv("TRACE_HEADERS_T", "x-api-key=s%3Dcret, tenant=acme")
    assert Settings().read_headers("TRACE_HEADERS_T") == {"x-api-key": "s=cret", "tenant": "acme"}
    assert Settings().read_headers(None) == {}
    monkeypatch.setenv("TRACE_HEADERS_T", "no-equals-sign-here")
    with pytest.raises(ConfigError) as err:
        Settings().read_headers("TRACE_HEADERS_T")
    assert "TRACE_HEADERS_T" in err.value.message and "no-equals" not in err.value.message


def test_validation_error_names_file_key_and_expectation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("deployments:\n  - name: x\n    api: carrier_pigeon\n    model: m\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    text = err.value.message
    assert str(bad) in text and "deployments.0.api" in text and "openai_chat" in text


def test_alias_naming_an_unknown_deployment_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"models\[0\]\.deployments\[0\]: unknown deployment 'nope'"):
        parse_config({"deployments": [], "models": [{"name": "a", "deployments": ["nope"]}]})


def test_unknown_key_is_refused_with_its_path() -> None:
    with pytest.raises(ConfigError, match=r"guards\.pairng"):
        parse_config({"guards": {"pairng": "reject"}})


def test_missing_file_and_bad_yaml_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("server: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(broken)


def test_duplicate_deployment_names_are_refused() -> None:
    dep = {"name": "d", "api": "demo", "model": "m"}
    with pytest.raises(ConfigError, match="repeated: d"):
        parse_config({"deployments": [dep, dep]})


def test_empty_file_gives_defaults() -> None:
    assert parse_config(None) == GatewayConfig()


def test_negative_prices_are_refused() -> None:
    dep = {"name": "d", "api": "demo", "model": "m", "price": {"input": -1}}
    with pytest.raises(ConfigError, match=r"deployments\.0\.price\.input"):
        parse_config({"deployments": [dep]})


def test_openai_responses_deployment_defaults_to_provider_openai() -> None:
    cfg = parse_config({"deployments": [{"name": "r", "api": "openai_responses", "model": "gpt-5"}]})
    assert (cfg.deployments[0].api, cfg.deployments[0].provider) == ("openai_responses", "openai")


def test_unknown_wire_api_names_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="openai_responses"):
        parse_config({"deployments": [{"name": "r", "api": "openai_response", "model": "gpt-5"}]})


def test_example_config_documents_every_redis_and_limits_option_at_its_default() -> None:
    from gateway.config import LimitsConfig, RedisConfig

    text = (ROOT / "config" / "example.yaml").read_text()
    cfg = load_config(ROOT / "config" / "example.yaml")
    assert "\nredis:" in text and "\nlimits:" in text
    assert cfg.redis == RedisConfig() and cfg.limits == LimitsConfig()
    for name in [*RedisConfig.model_fields, *LimitsConfig.model_fields]:
        assert f"\n  {name}:" in text, name


def test_redis_fail_mode_and_limits_time_zone_are_validated() -> None:
    cfg = parse_config(
        {"redis": {"url": "redis://127.0.0.1:6379/0", "fail": "open"}, "limits": {"timezone": "Asia/Tokyo"}}
    )
    assert (cfg.redis.fail, cfg.limits.timezone) == ("open", "Asia/Tokyo")
    with pytest.raises(ConfigError, match=r"redis\.fail"):
        parse_config({"redis": {"fail": "sometimes"}})
    with pytest.raises(ConfigError, match="Mars/Olympus"):
        parse_config({"limits": {"timezone": "Mars/Olympus"}})


def test_one_admin_key_the_deprecated_mcp_setting_names_it_when_access_does_not() -> None:
    from gateway.config import deprecations

    default = parse_config({})
    assert default.access.admin_key_env == "TURNSTILE_ADMIN_KEY" and deprecations(default) == []
    old = parse_config({"mcp": {"admin_key_env": "OLD_ADMIN"}})
    assert old.access.admin_key_env == "OLD_ADMIN"
    assert [n.split(" ")[0] for n in deprecations(old)] == ["mcp.admin_key_env"]
    both = parse_config({"mcp": {"admin_key_env": "SAME"}, "access": {"admin_key_env": "SAME"}})
    assert both.access.admin_key_env == "SAME"
    with pytest.raises(ConfigError, match="two admin keys"):
        parse_config({"mcp": {"admin_key_env": "ONE"}, "access": {"admin_key_env": "TWO"}})


def test_example_config_documents_every_console_option_at_its_default() -> None:
    from gateway.config import ConsoleConfig

    text = (ROOT / "config" / "example.yaml").read_text()
    assert load_config(ROOT / "config" / "example.yaml").console == ConsoleConfig()
    for name in ConsoleConfig.model_fields:
        assert f"\n  {name}:" in text, name
    with pytest.raises(ConfigError, match="session_hours"):
        parse_config({"console": {"session_hours": 0}})
