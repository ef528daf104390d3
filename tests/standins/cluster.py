"""Several ``turnstile serve`` processes behind one nginx round-robin proxy, sharing one
PostgreSQL database (a fresh one per test, dropped afterwards): the topology of
``docs/deploy.md`` on one machine, for the multi-instance tests.

nginx is the Debian package (installed by ``.ci/run`` for the benchmark smoke test); it balances
each request to the next instance (round robin, keep-alive to the instances, no buffering so
SSE streams pass as they come).
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from .serve_process import ServeProcess, clean_env, free_port

PG_ADMIN_URL = "postgresql://127.0.0.1:5432/test"


def nginx_binary() -> str | None:
    """The nginx executable (``PATH``, then Debian's ``/usr/sbin/nginx``), or None."""
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if Path("/usr/sbin/nginx").is_file() else None


def fresh_database(admin_url: str = PG_ADMIN_URL) -> str:
    """Create an empty PostgreSQL database; returns its URL. Raises ``psycopg.Error`` when the
    server is unreachable."""
    import psycopg

    name = f"turnstile_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


def drop_database(url: str, admin_url: str = PG_ADMIN_URL) -> None:
    """Drop the database at ``url`` (its connections are closed first)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def nginx_round_robin(workdir: Path, port: int, backends: list[int]) -> Path:
    """Write an nginx configuration listening on 127.0.0.1:``port`` that spreads requests over
    ``backends`` (ports on 127.0.0.1) round robin; returns its path."""
    workdir.mkdir(parents=True, exist_ok=True)
    for d in (workdir, *workdir.parents):  # nginx workers may run as an unprivileged user
        if d.stat().st_mode & 0o005 != 0o005:
            d.chmod(d.stat().st_mode | 0o005)
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    servers = "".join(f"        server 127.0.0.1:{p} max_fails=0;\n" for p in backends)
    conf = f"""daemon off;
master_process on;
worker_processes 1;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {workdir}/client_body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
    client_max_body_size 20m;
    upstream turnstile {{
{servers}        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://turnstile;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 60s;
            proxy_next_upstream off;
        }}
    }}
}}
"""
    out = workdir / "nginx.conf"
    out.write_text(conf)
    return out


@dataclass
class Cluster:
    """``instances`` gateway processes (one configuration, one shared database) and the nginx
    proxy in front; :attr:`url` is the proxy's."""

    workdir: Path
    config: dict[str, Any]
    env: dict[str, str]
    size: int = 2
    instances: list[ServeProcess] = field(default_factory=list)
    url: str = ""
    _nginx: subprocess.Popen[bytes] | None = None

    def start(self, nginx: str, timeout_s: float = 60.0) -> None:
        """Start every instance (each with its own transcript file, the shared stores of the
        configuration), then nginx; returns when the proxy answers ``/health``. Raises
        ``RuntimeError`` with the logs when something does not come up."""
        for i in range(self.size):
            home = self.workdir / f"instance-{i}"
            home.mkdir(parents=True, exist_ok=True)
            config = dict(self.config)
            config["server"] = {**config.get("server", {}), "db_path": str(home / "transcript.db")}
            path = home / "gateway.yaml"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            self.instances.append(ServeProcess(path, free_port(), cwd=home, env=clean_env(**self.env)))
        with ThreadPoolExecutor(self.size) as pool:  # the instances start side by side
            for done in [pool.submit(proc.start, timeout_s) for proc in self.instances]:
                done.result()
        port = free_port()
        conf = nginx_round_robin(self.workdir / "nginx", port, [p.port for p in self.instances])
        log = (self.workdir / "nginx" / "nginx.out").open("ab")
        self._nginx = subprocess.Popen([nginx, "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self._nginx.poll() is not None:
                    raise RuntimeError(
                        f"nginx exited: {(self.workdir / 'nginx' / 'nginx-error.log').read_text()}"
                    )
                try:
                    if http.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)  # polling pace while nginx starts, not a synchronisation
        raise RuntimeError("nginx did not answer /health in time")

    def stop(self) -> None:
        """Stop nginx and kill every instance."""
        if self._nginx is not None and self._nginx.poll() is None:
            self._nginx.terminate()
            self._nginx.wait(10)
        for proc in self.instances:
            proc.kill()

    def logs(self) -> str:
        """Every instance's log, for a failure message."""
        return "\n".join(f"--- instance {i}\n{p.output()[-3000:]}" for i, p in enumerate(self.instances))
