"""Exposed MCP tool names (handed cases C24, C26)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors import ConfigError
from mcp_servers.naming import EXPOSED_NAME, ToolNameTable, exposed_name


def test_C24_long_server_and_tool_name_fits_64_chars_and_routes_back() -> None:
    table = ToolNameTable()
    name = table.register("enterprise-knowledge-base-prod", "search_documents_by_semantic_similarity")
    assert len(name) <= 64 and EXPOSED_NAME.match(name)
    pair = ("enterprise-knowledge-base-prod", "search_documents_by_semantic_similarity")
    assert table.resolve(name) == pair
    # deterministic across restarts: a fresh table gives the same name
    assert ToolNameTable().register(*pair) == name


def test_C24_two_long_names_sharing_a_prefix_stay_distinct() -> None:
    a = exposed_name("enterprise-knowledge-base-prod", "search_documents_by_semantic_similarity_v1")
    b = exposed_name("enterprise-knowledge-base-prod", "search_documents_by_semantic_similarity_v2")
    assert a != b


def test_C26_same_tool_name_on_two_servers_is_keyed_by_server() -> None:
    table = ToolNameTable()
    gh = table.register("github", "search")
    jira = table.register("jira", "search")
    assert (gh, jira) == ("github__search", "jira__search")
    assert table.resolve(jira) == ("jira", "search")


def test_C26_collision_without_namespacing_is_a_registration_error() -> None:
    table = ToolNameTable(namespaced=False)
    table.register("github", "search")
    with pytest.raises(ConfigError, match=r"collision.*github.*jira"):
        table.register("jira", "search")


def test_dots_and_spaces_are_rewritten_with_a_hash() -> None:
    name = exposed_name("fs", "read.file v2")
    assert EXPOSED_NAME.match(name) and name.startswith("fs__read_file_v2_")


def test_unregistering_a_server_frees_its_names() -> None:
    table = ToolNameTable()
    n = table.register("a", "t")
    table.unregister_server("a")
    assert table.resolve(n) is None and table.names() == []


names = st.text(min_size=1, max_size=90)


@given(names, names, names, names)
def test_exposed_names_are_valid_and_injective(s1: str, t1: str, s2: str, t2: str) -> None:
    a, b = exposed_name(s1, t1), exposed_name(s2, t2)
    assert EXPOSED_NAME.match(a) and EXPOSED_NAME.match(b)
    if (s1, t1) != (s2, t2):
        assert a != b


def test_separator_inside_a_server_id_cannot_make_two_tools_meet() -> None:
    assert exposed_name("a", "b__c") != exposed_name("a__b", "c")
    assert exposed_name("a", "_b") != exposed_name("a_", "b")
