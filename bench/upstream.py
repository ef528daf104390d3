"""The near-zero-cost upstream stand-in: nginx answering fixed OpenAI and Anthropic bodies.

The configuration and the body files are generated into a temporary directory; nginx runs in the foreground as
its own master with one worker, listens on 127.0.0.1 only and logs nothing per request.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.bodies import PACED_GAP_S, UPSTREAM_DELAY_S, delayed_bodies, paced_streams, upstream_bodies

NGINX_CANDIDATES = ("nginx", "/usr/sbin/nginx")
ECHO_MODULE = Path("/usr/lib/nginx/modules/ngx_http_echo_module.so")
"""OpenResty's echo module (Debian ``libnginx-mod-http-echo``): ``echo_sleep`` / ``echo_flush``
give the delayed and paced upstreams. Without it those two paths answer 404 and the phases
that need them are skipped with a message."""


def has_echo() -> bool:
    """Whether nginx can load the echo module (the delayed and paced upstreams)."""
    return ECHO_MODULE.exists()


def _echo_text(body: bytes) -> str:
    """``body`` as one single-quoted ``echo -n`` argument (newlines as ``\\n``)."""
    text = body.decode()
    if "'" in text or "\\" in text or "$" in text:
        raise ValueError("echo bodies must not contain quotes, backslashes or dollars")
    return "'" + text.replace("\n", "\\n") + "'"


def _echo_locations() -> list[str]:
    out = []
    for path, (ctype, body) in delayed_bodies().items():
        lines = [f"default_type {ctype};", f"echo_sleep {UPSTREAM_DELAY_S};", f"echo -n {_echo_text(body)};"]
        out.append(_location(path, lines))
    for path, frames in paced_streams().items():
        steps = [f"echo -n {_echo_text(frames[0])}; echo_flush;"]
        steps += [f"echo_sleep {PACED_GAP_S}; echo -n {_echo_text(f)}; echo_flush;" for f in frames[1:-1]]
        steps.append(f"echo -n {_echo_text(frames[-1])};")
        out.append(_location(path, ["default_type text/event-stream;", *steps]))
    return out


def _location(path: str, lines: list[str]) -> str:
    inner = "".join(f"            {x}\n" for x in lines)
    return f"        location = {path} {{\n{inner}        }}\n"


def nginx_binary() -> str | None:
    """Path of the nginx executable, or None when nginx is not installed."""
    for name in NGINX_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def nginx_config(workdir: Path, port: int) -> Path:
    """Write ``nginx.conf`` (and its temp folders) under ``workdir`` for 127.0.0.1:``port``;
    returns the config path."""
    workdir.mkdir(parents=True, exist_ok=True)
    for d in (workdir, *workdir.parents):  # nginx workers may run as an unprivileged user
        if d.stat().st_mode & 0o005 != 0o005:
            d.chmod(d.stat().st_mode | 0o005)
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    locations = []
    for i, (path, (ctype, body)) in enumerate(upstream_bodies().items()):
        body_file = workdir / f"body-{i}"
        body_file.write_bytes(body)
        body_file.chmod(0o644)  # nginx workers may run as an unprivileged user
        # A static file answers GET; ``error_page 405 =200 $uri`` re-serves a POST as that GET
        # (nginx's ``return`` text is limited to 4 KB, too short for a 50-chunk stream).
        locations.append(
            f"        location = {path} {{\n"
            f"            default_type {ctype};\n"
            f"            alias {body_file};\n"
            f"            error_page 405 =200 $uri;\n"
            f"        }}\n"
        )
    if has_echo():
        locations += _echo_locations()
    load = f"load_module {ECHO_MODULE};\n" if has_echo() else ""
    conf = f"""{load}daemon off;
master_process on;
worker_processes 1;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {workdir}/client_body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
    client_body_buffer_size 1m;
    client_max_body_size 20m;
    keepalive_requests 10000000;
    keepalive_timeout 120s;
    tcp_nodelay on;
    sendfile on;
    etag off;
    if_modified_since off;
    server {{
        listen 127.0.0.1:{port};
{"".join(locations)}        location / {{ return 404; }}
    }}
}}
"""
    out = workdir / "nginx.conf"
    out.write_text(conf)
    return out
