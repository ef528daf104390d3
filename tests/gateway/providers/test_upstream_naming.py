"""Tool name rewrites for upstreams (gateway/providers/naming.py): a namespaced name's dots
become ``__`` when that fits, and two names of one map never meet."""

from __future__ import annotations

from gateway.providers.naming import NameMap


def test_a_namespaced_name_loses_its_dots_for_an_upstream_that_refuses_them() -> None:
    names = NameMap()
    assert names.to_upstream_name("functions.exec") == "functions__exec"
    assert names.from_upstream_name("functions__exec") == "functions.exec"


def test_a_name_the_dotless_rewrite_would_meet_gets_the_hash_instead_in_either_order() -> None:
    first = NameMap()
    assert first.to_upstream_name("functions.exec") == "functions__exec"
    literal = first.to_upstream_name("functions__exec")
    assert literal != "functions__exec" and first.from_upstream_name(literal) == "functions__exec"
    second = NameMap()
    assert second.to_upstream_name("functions__exec") == "functions__exec"
    dotted = second.to_upstream_name("functions.exec")
    assert dotted.startswith("functions_exec_") and second.from_upstream_name(dotted) == "functions.exec"


def test_a_name_that_fits_is_kept_and_a_long_dotted_one_is_hashed_to_fit() -> None:
    names = NameMap()
    assert names.to_upstream_name("read_file") == "read_file"
    long = "n" * 40 + "." + "m" * 40
    out = names.to_upstream_name(long)
    assert len(out) <= 64 and names.from_upstream_name(out) == long
