"""The test tree stays collectable: pytest's default import mode needs every test module's
file name to be unique across the tree (two ``test_x.py`` in different folders stop the whole
run at collection)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def test_every_test_module_has_a_file_name_of_its_own() -> None:
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []
