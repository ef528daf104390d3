"""A stdio MCP server that misbehaves on the wire, for the gateway's tests (issue 11, item 14).

Written by hand, not with the ``mcp`` SDK (whose server guards its stdout), so that each tool
can put exactly the bytes it wants on stdout. It speaks the handshake era (``initialize``,
``tools/list``, ``tools/call``; ``server/discover`` is answered "method not found", so a
``mode="auto"`` client falls back to the handshake). Its tools:

* ``echo(text)``, ``pid()``: well behaved;
* ``flood(mb, order)``: a result of ``mb`` MiB of text, in one line, its ``id`` ``first`` (as the
  Python SDK writes it), ``last`` (as the TypeScript SDK does) or in the ``middle``, far from
  both ends;
* ``junk(lines)``: ``lines`` lines that are not JSON-RPC on stdout, then the answer;
* ``glued()``: text without a newline on stdout, then the answer (glued to it on one line);
* ``badbytes()``: a line that is not UTF-8, then the answer;
* ``freeze()``: stops reading and answering for good (the process stays alive);
* ``stderr(text, lines, size, child)``: writes ``text`` as one line on stderr, then ``lines``
  lines of ``size`` bytes each, then answers; with ``child`` a child process of the server
  writes them (the server waits for it).

Run as ``python tests/mcp_servers/hostile_server.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

OUT = sys.stdout.buffer
NUMBER = {"type": "number"}
TOOLS: dict[str, dict[str, Any]] = {
    "echo": {"text": {"type": "string"}},
    "pid": {},
    "flood": {"mb": NUMBER, "order": {"enum": ["first", "last", "middle"]}},
    "junk": {"lines": NUMBER},
    "glued": {},
    "badbytes": {},
    "freeze": {},
    "stderr": {"text": {"type": "string"}, "lines": NUMBER, "size": NUMBER, "child": {"type": "boolean"}},
}
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def flood(mid: Any, args: dict[str, Any]) -> None:
    """Answer with ``mb`` MiB of text, written without building the JSON in memory twice."""
    text = b"x" * int(float(args.get("mb", 100)) * 1024 * 1024)
    result = b'"result": {"content": [{"type": "text", "text": "' + text + b'"}]}'
    ident = b'"jsonrpc": "2.0", "id": ' + json.dumps(mid).encode()
    members = {
        "first": [ident, result],
        "last": [result, ident],
        "middle": [result, ident, b'"padding": "' + b"y" * 100_000 + b'"'],
    }[args.get("order", "first")]
    OUT.write(b"{" + b", ".join(members) + b"}\n")
    OUT.flush()


def write_stderr(text: str, lines: int, size: int) -> None:
    """``text`` (when not empty) as one line on stderr, then ``lines`` lines of ``size`` bytes."""
    err = sys.stderr.buffer
    if text:
        err.write(text.encode() + b"\n")
    line = b"E" * max(0, size - 1) + b"\n"
    for _ in range(lines):
        err.write(line)
    err.flush()


def call(name: str, args: dict[str, Any]) -> str:
    """Run tool ``name``: what it writes on stdout before its answer, and the answer's text."""
    if name == "echo":
        return str(args.get("text", ""))
    if name == "pid":
        return str(os.getpid())
    if name == "junk":
        OUT.write(b"".join(b"this is not JSON-RPC, line %d\n" % i for i in range(int(args.get("lines", 1)))))
    elif name == "glued":
        OUT.write(b"progress: 100% (no newline) ")
    elif name == "badbytes":
        OUT.write(b"\xff\xfe\xfd not UTF-8\n")
    elif name == "stderr":
        text, lines, size = str(args.get("text", "")), int(args.get("lines", 0)), int(args.get("size", 0))
        if args.get("child"):
            code = f"import hostile_server as h; h.write_stderr({text!r}, {lines}, {size})"
            here = os.path.dirname(os.path.abspath(__file__))
            subprocess.run([sys.executable, "-c", code], cwd=here, check=True)
        else:
            write_stderr(text, lines, size)
    elif name == "freeze":
        while True:
            time.sleep(3600)
    return f"{name} done"


def main() -> None:
    """Answer requests read from stdin, one JSON-RPC message per line."""
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None or method is None:
            continue  # a notification, or an answer to nothing we asked
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0.0.1"},
            }
        elif method == "tools/list":
            tools = [
                {"name": n, "inputSchema": {"type": "object", "properties": p}, "annotations": READ_ONLY}
                for n, p in TOOLS.items()
            ]
            result = {"tools": tools}
        elif method == "tools/call":
            params = msg.get("params") or {}
            if params.get("name") == "flood":
                flood(mid, params.get("arguments") or {})
                continue
            text = call(params.get("name", ""), params.get("arguments") or {})
            result = {"content": [{"type": "text", "text": text}]}
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"no method {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
