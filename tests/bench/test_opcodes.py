"""bench.opcodes: executed bytecodes are attributed to the function that ran them."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

# tests/bench is itself a package named ``bench`` on the test path: load the module by file.
_SPEC = importlib.util.spec_from_file_location(
    "bench_opcodes", Path(__file__).resolve().parents[2] / "bench" / "opcodes.py"
)
assert _SPEC is not None and _SPEC.loader is not None
_MOD = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MOD)
OpcodeCounter = _MOD.OpcodeCounter


def _loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def test_opcodes_of_a_loop_grow_with_its_length_and_are_reported_per_request() -> None:
    counts = []
    for n in (10, 100):
        counter = OpcodeCounter()
        counter.start()
        try:
            _loop(n)
        finally:
            counter.stop()
        key = next(k for k in counter.opcodes if k[1] == "_loop")
        assert counter.calls[key] == 1
        counts.append(counter.opcodes[key])
    assert counts[1] > 5 * counts[0] > 0
    out = io.StringIO()
    counter.report(requests=2, out=out)
    text = out.getvalue()
    assert text.startswith("opcodes per request: ")
    assert ":_loop" in text
