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


def _pkg(kind: str, **more: Any) -> dict[str, Any]:
    base = {
        "npm": {"identifier": "@acme/weather-mcp", "version": "1.4.2"},
        "pypi": {"identifier": "weather-mcp", "version": "0.9.1"},
        "oci": {"identifier": "ghcr.io/acme/weather", "version": "1.4.2"},
        "nuget": {"identifier": "Acme.Weather", "version": "2.0.0"},
    }[kind]
    return {"registryType": kind, "transport": {"type": "stdio"}, **base, **more}


@pytest.mark.parametrize(
    ("kind", "version"),
    [
        ("npm", "1"),
        ("npm", "1.2"),
        ("npm", "1.2.X"),
        ("npm", "1.2.x"),
        ("npm", "next"),
        ("npm", "1.2.3||2"),
        ("npm", "1.2.3 || 2"),
        ("npm", ">=1.2.3"),
        ("npm", "npm:evil@6.6.6"),
        ("npm", "github:evil/pkg"),
        ("npm", "file:/tmp/x"),
        ("npm", "https://evil/x.tgz"),
        ("npm", "01.2.3"),
        ("pypi", "1.*"),
        ("pypi", "1.2.3,<2"),
        ("pypi", "v1.2.3"),
        ("pypi", "latest"),
        ("pypi", " 1.2.3"),
        ("nuget", "[1.0,2.0)"),
        ("nuget", "1.*"),
        ("oci", "latest"),
        ("oci", "1.2@sha256:x"),
    ],
)
def test_only_an_exact_version_is_accepted(kind: str, version: str) -> None:
    with pytest.raises(ServerJsonError) as err:
        spec_from_server_json(_doc(packages=[_pkg(kind, version=version)]), index=0)
    assert "packages[0].version" in str(err.value) and repr(version) in str(err.value)


@pytest.mark.parametrize(
    ("kind", "version", "reference"),
    [
        ("npm", "1.4.2-rc.1+build.5", "@acme/weather-mcp@1.4.2-rc.1+build.5"),
        ("pypi", "1.0rc1", "weather-mcp==1.0rc1"),
        ("pypi", "2024.1", "weather-mcp==2024.1"),
        ("nuget", "2.0.0.1-beta", "Acme.Weather@2.0.0.1-beta"),
        ("oci", "v1.4.2", "ghcr.io/acme/weather:v1.4.2"),
    ],
)
def test_exact_versions_of_each_registry_are_accepted(kind: str, version: str, reference: str) -> None:
    t = spec_from_server_json(_doc(packages=[_pkg(kind, version=version)])).transport
    assert t.type == "stdio" and reference in t.args


@pytest.mark.parametrize(
    ("pkg", "named"),
    [
        (_pkg("npm", identifier="--call=touch /tmp/pwned;#"), "'--call=touch /tmp/pwned;#'"),
        (_pkg("npm", identifier="Evil Pkg"), "npm package name"),
        (_pkg("npm", identifier="a" * 215), "npm package name"),
        (_pkg("npm", identifier="evil@6.6.6"), "npm package name"),
        (_pkg("pypi", identifier="--from=evil"), "'--from=evil'"),
        (_pkg("pypi", identifier="weather-mcp[extra]"), "PyPI project name"),
        (_pkg("pypi", identifier="evil @ https://evil/x.whl"), "PyPI project name"),
        (_pkg("nuget", identifier="-evil"), "'-evil'"),
        (_pkg("nuget", identifier="Acme Weather"), "NuGet package id"),
        (_pkg("oci", identifier="--privileged"), "'--privileged'"),
        (_pkg("oci", identifier="Evil/Img"), "OCI image reference"),
        (_pkg("oci", identifier="evil/img:latest"), "already names a tag"),
        (_pkg("oci", identifier="img@sha256:" + "a" * 64), "already names a tag"),
        (_pkg("oci", identifier="evil/img:latest", version=None), "tag"),
    ],
)
def test_an_identifier_that_is_not_its_registrys_name_is_refused(pkg: dict[str, Any], named: str) -> None:
    with pytest.raises(ServerJsonError) as err:
        spec_from_server_json(_doc(packages=[pkg]), index=0)
    assert "packages[0].identifier" in str(err.value) and named in str(err.value)


def test_an_oci_image_pinned_by_digest_alone_is_used_as_it_is() -> None:
    image = "ghcr.io/acme/weather@sha256:" + "a" * 64
    t = spec_from_server_json(_doc(packages=[_pkg("oci", identifier=image, version=None)])).transport
    assert t.type == "stdio" and t.args == ["run", "-i", "--rm", image]


@pytest.mark.parametrize(
    ("kind", "hint"),
    [("npm", "bash"), ("npm", "uvx"), ("pypi", "python"), ("oci", "podman"), ("nuget", "sh"), ("npm", "")],
)
def test_a_runtime_hint_outside_the_registrys_runner_is_refused(kind: str, hint: str) -> None:
    with pytest.raises(ServerJsonError) as err:
        spec_from_server_json(_doc(packages=[_pkg(kind, runtimeHint=hint)]), index=0)
    assert "packages[0].runtimeHint" in str(err.value) and repr(hint) in str(err.value)


@pytest.mark.parametrize(
    ("kind", "argument", "named"),
    [
        ("oci", {"type": "named", "name": "--privileged"}, "'--privileged'"),
        ("oci", {"type": "named", "name": "-v", "value": "/:/host"}, "'-v'"),
        ("oci", {"type": "named", "name": "--network", "value": "host"}, "'--network'"),
        ("oci", {"type": "positional", "value": "evil/img:latest"}, "'evil/img:latest'"),
        ("oci", {"type": "named", "name": "-e", "value": "--privileged"}, "'--privileged'"),
        ("oci", {"type": "named", "name": "-e"}, "needs a value"),
        ("npm", {"type": "named", "name": "--call", "value": "touch /tmp/pwned"}, "'--call'"),
        ("npm", {"type": "named", "name": "--call=touch /tmp/pwned"}, "'--call=touch /tmp/pwned'"),
        ("npm", {"type": "named", "name": "--prefer-offline", "value": "x"}, "'x'"),
        ("pypi", {"type": "named", "name": "--from", "value": "evil"}, "'--from'"),
        ("pypi", {"type": "named", "name": "--with", "value": "evil"}, "'--with'"),
        ("nuget", {"type": "named", "name": "--source", "value": "https://evil"}, "'--source'"),
    ],
)
def test_a_runtime_argument_outside_the_allow_list_is_refused(
    kind: str, argument: dict[str, Any], named: str
) -> None:
    with pytest.raises(ServerJsonError) as err:
        spec_from_server_json(_doc(packages=[_pkg(kind, runtimeArguments=[argument])]), index=0)
    assert "packages[0].runtimeArguments[0]" in str(err.value) and named in str(err.value)


def test_allowed_runtime_arguments_are_kept() -> None:
    pkg = _pkg(
        "oci",
        runtimeArguments=[
            {"type": "named", "name": "-e", "value": "WEATHER_API_KEY"},
            {"type": "named", "name": "--read-only"},
        ],
    )
    t = spec_from_server_json(_doc(packages=[pkg])).transport
    assert t.type == "stdio" and t.args == [
        "run",
        "-i",
        "--rm",
        "-e",
        "WEATHER_API_KEY",
        "--read-only",
        "ghcr.io/acme/weather:1.4.2",
    ]


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("file:///etc/passwd", "'file'"),
        ("ftp://x.example/mcp", "'ftp'"),
        ("http://169.254.169.254/latest/meta-data", "'169.254.169.254'"),
        ("http://[fd00:ec2::254]/mcp", "'fd00:ec2::254'"),
        ("http://[::ffff:169.254.169.254]/mcp", "link-local or cloud metadata"),
        ("http://metadata.google.internal/computeMetadata/v1", "'metadata.google.internal'"),
        ("https:///mcp", "no host"),
    ],
)
def test_a_remote_url_with_another_scheme_or_a_metadata_host_is_refused(url: str, named: str) -> None:
    with pytest.raises(ServerJsonError) as err:
        spec_from_server_json(_doc(remotes=[{"type": "streamable-http", "url": url}]), index=0)
    assert "remotes[0].url" in str(err.value) and named in str(err.value)


def test_the_admin_policy_may_allow_a_metadata_host() -> None:
    remote = {"type": "streamable-http", "url": "http://169.254.10.1:8080/mcp"}
    t = spec_from_server_json(_doc(remotes=[remote]), allow_hosts=["169.254.10.1:8080"]).transport
    assert t.type == "streamable_http" and t.url == "http://169.254.10.1:8080/mcp"
