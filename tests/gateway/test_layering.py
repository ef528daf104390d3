"""Invariant 1: provider formats stop at the adapter layer."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UPPER = ["gateway", "routers", "mcp_servers"]
ADAPTER_DIRS = ("gateway/edges/", "gateway/providers/")
PROVIDER_FIELDS = re.compile(
    r"""["'](tool_use|tool_calls|tool_result|functionCall|functionResponse|finish_reason|stop_reason|"""
    r"""input_json_delta|content_block_delta|tool_use_id|thoughtSignature|prompt_tokens|"""
    r"""completion_tokens|cache_creation_input_tokens|cache_read_input_tokens|usageMetadata)["']"""
)
SDK_IMPORT = re.compile(r"^\s*(from|import)\s+(openai|anthropic|google\.genai|litellm)\b", re.M)


# The internal stop reason `tool_use` is the schema's own vocabulary (issue 2 names the set
# stop | length | tool_use | content_filter | error | aborted); only its definition may spell it.
ALLOWED_LINES = {
    ("gateway/schema.py", "StopReason = Literal["),
}


def _allowed(rel: str, line: str) -> bool:
    return any(rel == f and line.lstrip().startswith(prefix) for f, prefix in ALLOWED_LINES)


def _upper_layer_files() -> list[Path]:
    files = []
    for top in UPPER:
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(ADAPTER_DIRS):
                files.append(path)
    return files


def test_no_provider_field_names_above_the_adapters() -> None:
    hits = []
    for path in _upper_layer_files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PROVIDER_FIELDS.search(line) and not _allowed(path.relative_to(ROOT).as_posix(), line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == [], "provider field names above gateway/edges and gateway/providers:\n" + "\n".join(hits)


def test_no_provider_sdk_imports_above_the_adapters() -> None:
    hits = [str(p.relative_to(ROOT)) for p in _upper_layer_files() if SDK_IMPORT.search(p.read_text("utf-8"))]
    assert hits == []


def test_upper_layer_scan_sees_the_pipeline() -> None:
    names = {p.name for p in _upper_layer_files()}
    assert {"pipeline.py", "schema.py", "invariants.py"} <= names


def test_import_linter_contract_holds() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
