"""Framing of a stdio server's stdout (:mod:`mcp_servers.stdio_framing`): bounded memory for any
line, junk told apart from JSON-RPC, and the request a refused message answered."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from mcp_servers.stdio_framing import (
    EDGE_BYTES,
    LineFramer,
    Oversize,
    oversize_is_from_server,
    oversize_request_id,
    parse_line,
)

LIMIT = 1024 * 1024


def test_lines_split_across_reads_come_out_whole_and_blank_lines_are_skipped() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b'{"a": 1}\n{"b"') == [b'{"a": 1}']
    assert framer.feed(b": 2}\n\n\r\n") == [b'{"b": 2}']
    assert framer.feed(b"tail") == [] and framer.held_bytes == 4


def test_a_line_over_the_limit_is_refused_while_read_holding_only_its_edges() -> None:
    framer = LineFramer(LIMIT)
    chunk = b"x" * 65536
    framer.feed(b'{"jsonrpc": "2.0", "id": 7, "result": {"text": "')
    most = 0
    for _ in range(100 * 1024 * 1024 // len(chunk)):  # 100 MiB, as a pipe delivers it
        assert framer.feed(chunk) == []
        most = max(most, framer.held_bytes)
    assert most <= LIMIT + 2 * EDGE_BYTES
    refused, after = framer.feed(b'"}}\n{"next": true}\n')
    assert isinstance(refused, Oversize) and refused.size > 100 * 1024 * 1024
    assert refused.head.startswith(b'{"jsonrpc"') and refused.tail.endswith(b'"}}')
    assert after == b'{"next": true}' and framer.held_bytes == 0


def test_the_line_after_a_refused_one_is_read_normally() -> None:
    framer = LineFramer(LIMIT)
    out = framer.feed(b"y" * (LIMIT + 1) + b"\nok\n")
    assert isinstance(out[0], Oversize) and out[1:] == [b"ok"]


def test_a_json_rpc_line_parses_and_junk_is_reported_as_junk() -> None:
    message, junk = parse_line(b'{"jsonrpc": "2.0", "id": 1, "result": {}}')
    assert isinstance(message, types.JSONRPCResponse) and junk is None
    for line in (b"Starting server on stdio...", b'{"hello": 1}', b"[1, 2]", b"\xff\xfe not UTF-8"):
        message, junk = parse_line(line)
        assert message is None and junk is not None and junk.size == len(line)


def test_a_message_glued_after_junk_on_one_line_is_recovered() -> None:
    line = b'progress 100% {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}'
    message, junk = parse_line(line)
    assert isinstance(message, types.JSONRPCResponse) and message.id == 3
    assert junk is not None and junk.preview == "progress 100% "


def _refused(message: dict[str, object], keep: int = 64) -> Oversize:
    raw = json.dumps(message).encode()
    return Oversize(len(raw), raw[:keep], raw[-keep:])


@pytest.mark.parametrize("ident", [12, "req-12"])
def test_the_id_of_a_refused_answer_is_read_from_its_head_or_its_tail(ident: object) -> None:
    big = {"content": [{"type": "text", "text": "x" * 10_000}]}
    assert oversize_request_id(_refused({"jsonrpc": "2.0", "id": ident, "result": big})) == ident
    assert oversize_request_id(_refused({"result": big, "jsonrpc": "2.0", "id": ident})) == ident
    assert oversize_request_id(_refused({"result": big, "id": ident, "jsonrpc": "2.0"})) == ident


def test_an_id_inside_the_result_is_never_taken_for_the_message_id() -> None:
    inner = {"content": [{"type": "text", "text": "x" * 10_000, "id": 99}], "id": 98}
    assert oversize_request_id(_refused({"jsonrpc": "2.0", "result": inner})) is None
    assert oversize_request_id(_refused({"method": "notifications/message", "params": inner})) is None


def test_a_refused_request_of_the_server_is_not_taken_for_an_answer() -> None:
    big = {"messages": [{"text": "x" * 10_000}]}
    request = _refused({"jsonrpc": "2.0", "id": 4, "method": "sampling/createMessage", "params": big})
    answer = _refused({"jsonrpc": "2.0", "id": 4, "result": big})
    assert oversize_is_from_server(request) and not oversize_is_from_server(answer)
