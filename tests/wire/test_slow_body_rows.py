"""A request body cut for its pace (``server.body_timeout_s``: a gap, or below
``server.body_min_bytes_per_s``) is answered 408 by the connection guard
(:mod:`gateway.serving`); its request still gets one transcript row (status 408), on every
client edge."""

from __future__ import annotations

import socket
import sqlite3
import time
from pathlib import Path

import pytest
from standins.serve_process import ServeProcess, free_port

GAP_S = 0.5
HEADER_S = (
    20.0  # longer than the gap: the gap is kept from the end of the headers, not after the header deadline
)
PATHS = ["/v1/responses", "/v1beta/models/demo:generateContent", "/v1/chat/completions", "/v1/messages"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> ServeProcess:
    tmp = tmp_path_factory.mktemp("slow-body")
    config = tmp / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {tmp / 'transcript.db'}\n"
        f"  body_timeout_s: {GAP_S}\n  header_timeout_s: {HEADER_S}\n"
        "deployments:\n  - {name: demo, api: demo, model: turnstile-demo, price: {input: 0, output: 0}}\n"
    )
    proc = ServeProcess(config, free_port(), cwd=tmp)
    proc.start()
    yield proc
    proc.kill()


def _stalled(port: int, path: str) -> bytes:
    """Send headers announcing 100 bytes and 10 of them, then stop; the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            'Content-Length: 100\r\n\r\n{"model": '.encode()
        )
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    return data


@pytest.mark.parametrize("path", PATHS)
def test_a_stalled_body_is_one_transcript_row_with_408(server: ServeProcess, path: str) -> None:
    db = server.config.parent / "transcript.db"
    before = _rows(db)
    start = time.monotonic()
    answer = _stalled(server.port, path)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert time.monotonic() - start < HEADER_S / 2, "cut at the body gap, not at the header deadline"
    deadline = time.monotonic() + 5
    while len(_rows(db)) == len(before) and time.monotonic() < deadline:
        time.sleep(0.02)  # polling the batched transcript writer, not a synchronisation
    new = [r for r in _rows(db) if r not in before]
    assert [status for _, status in new] == [408], new


def _rows(db: Path) -> list[tuple[str, int]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        return [(r, s) for r, s in conn.execute("SELECT request_id, status FROM turns")]
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()
