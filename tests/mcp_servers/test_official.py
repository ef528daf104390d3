"""An official ``server.json`` (schema 2025-12-11) turned into a gateway spec with its version
pinned: npm -> npx, pypi -> uvx, oci -> docker, nuget -> dnx, remotes -> a URL with headers from
environment variables; what cannot run is refused by name; ``turnstile mcp add`` reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mcp_servers.cli import app, spec_from_file
from mcp_servers.official import ServerJsonError, is_server_json, server_id, spec_from_server_json


def _doc(**more: Any) -> dict[str, Any]:
    return {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.github.acme/weather-mcp",
        "description": "Weather forecasts",
        "version": "1.4.2",
        **more,
    }


def _npm(**more: Any) -> dict[str, Any]:
    return {
        "registryType": "npm",
        "identifier": "@acme/weather-mcp",
        "version": "1.4.2",
        "transport": {"type": "stdio"},
        **more,
    }


def test_an_npm_package_runs_with_npx_at_the_pinned_version_with_its_arguments_and_env() -> None:
    pkg = _npm(
        runtimeArguments=[{"type": "named", "name": "--prefer-offline"}],
        packageArguments=[
            {"type": "positional", "valueHint": "units", "default": "metric"},
            {
                "type": "named",
                "name": "--region",
                "value": "{region}",
                "variables": {"region": {"default": "eu"}},
            },
        ],
        environmentVariables=[
            {"name": "WEATHER_API_KEY", "isSecret": True, "isRequired": True},
            {"name": "LOG_FORMAT", "value": "json"},
        ],
    )
    spec = spec_from_server_json(_doc(packages=[pkg]))
    t = spec.transport
    assert spec.id == "weather-mcp" and t.type == "stdio"
    assert (t.command, t.args) == (
        "npx",
        ["-y", "--prefer-offline", "@acme/weather-mcp@1.4.2", "metric", "--region", "eu"],
    )
    assert t.env == {"LOG_FORMAT": "json"} and t.env_passthrough == [
        "WEATHER_API_KEY"
    ]  # the secret is never written
    assert spec.server_json is not None and spec.server_json["version"] == "1.4.2"


@pytest.mark.parametrize(
    ("pkg", "command", "args"),
    [
        (
            {"registryType": "pypi", "identifier": "weather-mcp", "version": "0.9.1"},
            "uvx",
            ["weather-mcp==0.9.1"],
        ),
        (
            {"registryType": "oci", "identifier": "ghcr.io/acme/weather", "version": "1.4.2"},
            "docker",
            ["run", "-i", "--rm", "ghcr.io/acme/weather:1.4.2"],
        ),
        (
            {"registryType": "oci", "identifier": "ghcr.io/acme/weather:1.4.2"},
            "docker",
            ["run", "-i", "--rm", "ghcr.io/acme/weather:1.4.2"],
        ),
        (
            {"registryType": "nuget", "identifier": "Acme.Weather", "version": "2.0.0"},
            "dnx",
            ["Acme.Weather@2.0.0", "--yes"],
        ),
        (
            {
                "registryType": "pypi",
                "identifier": "weather-mcp",
                "version": "0.9.1",
                "runtimeHint": "uvx",
                "packageArguments": [{"type": "positional", "value": "--stdio"}],
            },
            "uvx",
            ["weather-mcp==0.9.1", "--stdio"],
        ),
    ],
)
def test_each_package_registry_runs_its_pinned_version(
    pkg: dict[str, Any], command: str, args: list[str]
) -> None:
    t = spec_from_server_json(_doc(packages=[{**pkg, "transport": {"type": "stdio"}}])).transport
    assert t.type == "stdio" and (t.command, t.args) == (command, args)


def test_a_remote_becomes_a_url_with_headers_read_from_the_environment() -> None:
    remote = {
        "type": "streamable-http",
        "url": "https://{tenant}.weather.example/mcp",
        "headers": [
            {"name": "Authorization", "isSecret": True, "value": "Bearer {token}"},
            {"name": "X-Org"},
        ],
    }
    spec = spec_from_server_json(
        _doc(packages=[_npm()], remotes=[remote]),
        prefer="remote",
        values={"tenant": "acme"},
        header_env={"Authorization": "WEATHER_TOKEN"},
    )
    t = spec.transport
    assert t.type == "streamable_http" and t.url == "https://acme.weather.example/mcp"
    assert t.headers_env == {"Authorization": "WEATHER_TOKEN", "X-Org": "WEATHER_MCP_X_ORG"}


@pytest.mark.parametrize(
    ("doc", "named"),
    [
        (_doc(packages=[_npm(version="^1.4.0")]), "packages[0].version"),
        (_doc(packages=[_npm(version="latest")]), "packages[0].version"),
        (
            _doc(
                packages=[
                    {"registryType": "mcpb", "identifier": "https://x/y.mcpb", "transport": {"type": "stdio"}}
                ]
            ),
            "mcpb",
        ),
        (
            _doc(packages=[_npm(transport={"type": "streamable-http", "url": "http://localhost:3000/mcp"})]),
            "transport.type",
        ),
        (_doc(remotes=[{"type": "sse", "url": "https://x.example/sse"}]), "sse"),
        (_doc(remotes=[{"type": "streamable-http", "url": "https://{tenant}.x.example/mcp"}]), "{tenant}"),
        (
            _doc(
                packages=[
                    _npm(packageArguments=[{"type": "positional", "valueHint": "dir", "isRequired": True}])
                ]
            ),
            "'dir'",
        ),
        (_doc(), "no packages or remotes"),
        ({**_doc(packages=[_npm()]), "name": "weather"}, "name"),
        ({**_doc(packages=[_npm()]), "version": "1.x"}, "version"),
    ],
)
def test_what_cannot_run_is_refused_naming_the_field(doc: dict[str, Any], named: str) -> None:
    with pytest.raises(ServerJsonError) as err:
        spec_from_server_json(doc)
    assert named in str(err.value)


def test_ids_and_detection() -> None:
    assert server_id("io.github.acme/Weather MCP!") == "Weather-MCP" and server_id("com.x/a__b") == "a_b"
    assert is_server_json(_doc()) and not is_server_json(
        {"id": "t", "transport": {"type": "stdio", "command": "x"}}
    )


def test_mcp_add_dry_run_prints_the_pinned_spec(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text(json.dumps(_doc(packages=[_npm()])))
    result = CliRunner().invoke(app, ["add", str(path), "--id", "wx", "--dry-run"])
    assert result.exit_code == 0, result.output
    spec = json.loads(result.output)
    assert spec["id"] == "wx" and spec["transport"]["args"] == ["-y", "@acme/weather-mcp@1.4.2"]
    assert spec_from_file(path)["id"] == "weather-mcp"


def test_mcp_add_refuses_a_file_it_cannot_use_with_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text(json.dumps(_doc(remotes=[{"type": "sse", "url": "https://x.example/sse"}])))
    result = CliRunner().invoke(app, ["add", str(path), "--dry-run"])
    assert result.exit_code == 1 and "sse" in result.output


def test_mcp_add_posts_the_spec_to_the_admin_api_with_the_admin_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[tuple[str, str, dict[str, Any]]] = []

    class Admin(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append((self.path, self.headers["authorization"], body))
            out = json.dumps({"spec": body, "source": "admin", "status": {"state": "ready"}}).encode()
            self.send_response(201)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Admin)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        path = tmp_path / "server.json"
        path.write_text(json.dumps(_doc(packages=[_npm()])))
        config = tmp_path / "gateway.yaml"
        config.write_text("deployments: []\n")
        monkeypatch.setenv("TURNSTILE_ADMIN_KEY", "admin-secret")
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = CliRunner().invoke(
            app, ["add", str(path), "--url", url, "--config", str(config), "--wait-s", "5"]
        )
    finally:
        server.shutdown()
        thread.join(timeout=5)
    assert result.exit_code == 0, result.output
    assert "added MCP server 'weather-mcp' (stdio): ready" in result.output
    (where, auth, body) = seen[0]
    assert where == "/admin/mcp/servers?wait_s=5" and auth == "Bearer admin-secret"
    assert (
        body["transport"]["args"] == ["-y", "@acme/weather-mcp@1.4.2"]
        and body["server_json"]["name"] == WEATHER_NAME
    )


WEATHER_NAME = "io.github.acme/weather-mcp"
