"""Executed-bytecode counts per module and per function: a deterministic profile.

``uv run python -m bench.inproc --case openai -n 300 --opcodes`` counts every Python bytecode
the measured loop executes (``sys.settrace`` with per-opcode events, on the event-loop thread
and on threads started while it runs), divided by the number of requests. Unlike a sampling
profiler or cProfile it does not depend on the machine's load and does not inflate small
functions; unlike ``valgrind --tool=callgrind`` it names Python functions. Native code (the
pydantic core, orjson, SQLite, the kernel) is not counted: a line of C called once counts as
the one opcode that called it. The run is ~30x slower than normal, so a few hundred requests
are enough.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from types import FrameType
from typing import Any, TextIO

_SITE = "/site-packages/"
_STDLIB = "/lib/python3."


class OpcodeCounter:
    """Counts opcodes per ``(file, function)`` between :meth:`start` and :meth:`stop`."""

    def __init__(self) -> None:
        self.opcodes: Counter[tuple[str, str]] = Counter()
        self.calls: Counter[tuple[str, str]] = Counter()

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        frame.f_trace_opcodes = True
        self.calls[(frame.f_code.co_filename, frame.f_code.co_name)] += 1
        return self._local

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            self.opcodes[(frame.f_code.co_filename, frame.f_code.co_name)] += 1
        return self._local

    def start(self) -> None:
        """Count from now on (this thread, and threads started from now on)."""
        sys.settrace(self._global)
        threading.settrace(self._global)

    def stop(self) -> None:
        """Stop counting."""
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]

    def report(self, requests: int, out: TextIO, modules: int = 25, functions: int = 40) -> None:
        """Print opcodes per request: the total, the top ``modules`` (a package for third-party
        code, ``stdlib:`` paths for the standard library, repository paths for ours) and the top
        ``functions`` of this repository with their calls per request."""
        total = sum(self.opcodes.values())
        print(f"opcodes per request: {total / requests:,.0f}", file=out)
        by_module: Counter[str] = Counter()
        for (path, _), n in self.opcodes.items():
            by_module[_module(path)] += n
        for name, n in by_module.most_common(modules):
            print(f"  {n / requests:9,.0f} {100 * n / total:5.1f}%  {name}", file=out)
        import os

        every = os.environ.get("BENCH_OPCODES_ALL") == "1"  # third-party functions listed too
        ours = [
            (k, n)
            for k, n in self.opcodes.most_common()
            if every or (_SITE not in k[0] and _STDLIB not in k[0])
        ]
        print("functions of this repository (opcodes, calls per request):", file=out)
        for (path, func), n in ours[:functions]:
            calls = self.calls[(path, func)] / requests
            print(f"  {n / requests:9,.0f} {calls:6.1f}  {_module(path)}:{func}", file=out)


def _module(path: str) -> str:
    if _SITE in path:
        return path.split(_SITE, 1)[1].split("/", 1)[0]
    if _STDLIB in path:
        return "stdlib:" + path.split(_STDLIB, 1)[1].split("/", 1)[-1]
    for root in ("/gateway/", "/routers/", "/mcp_servers/", "/bench/"):
        if root in path:
            return root[1:] + path.split(root, 1)[1]
    return path
