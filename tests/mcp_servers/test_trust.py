"""Trust tiers from annotations (missing hint = worst case), overrides, workspace checks, path
arguments that cannot be paths, and the confirmation text."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.types import Tool, ToolAnnotations

from mcp_servers.request_state import binding
from mcp_servers.trust import (
    MAX_PATH_BYTES,
    classify,
    confirmation_message,
    decide,
    path_argument_errors,
    path_arguments,
    render_action,
)

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _tool(ann: ToolAnnotations | None, props: dict | None = None) -> Tool:
    return Tool(name="t", input_schema={"type": "object", "properties": props or {}}, annotations=ann)


def test_read_only_is_allow() -> None:
    assert classify(_tool(ToolAnnotations(read_only_hint=True))).tier == "allow"


def test_missing_annotations_count_as_destructive_and_confirm() -> None:
    c = classify(_tool(None))
    assert c.tier == "confirm" and c.destructive and c.open_world and not c.read_only
    assert "no destructiveHint" in c.reason


def test_missing_open_world_hint_counts_as_open_world() -> None:
    c = classify(
        _tool(ToolAnnotations(read_only_hint=False, destructive_hint=False), {"path": {"type": "string"}})
    )
    assert c.tier == "confirm" and "openWorldHint" in c.reason


def test_closed_world_non_destructive_write_with_path_is_allow_in_workspace() -> None:
    ann = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    c = classify(_tool(ann, {"repo_path": {"type": "string"}, "message": {"type": "string"}}))
    assert c.tier == "allow_in_workspace" and c.path_args == ("repo_path",)


def test_write_without_path_argument_confirms() -> None:
    ann = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    assert classify(_tool(ann, {"message": {"type": "string"}})).tier == "confirm"


def test_admin_override_wins_over_annotations() -> None:
    assert classify(_tool(ToolAnnotations(read_only_hint=True)), "deny").tier == "deny"
    assert classify(_tool(None), "allow").tier == "allow"


def test_path_arguments_are_string_properties_with_path_like_names() -> None:
    schema = {
        "properties": {
            "path": {"type": "string"},
            "paths": {"type": "array", "items": {"type": "string"}},
            "source": {"type": "string"},
            "count": {"type": "integer"},
            "query": {"type": "string"},
        }
    }
    assert path_arguments(schema) == ("path", "paths", "source")


def test_workspace_check_follows_symlinks_and_relative_paths(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "escape").symlink_to("/etc")
    ann = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    c = classify(_tool(ann, {"path": {"type": "string"}}))
    assert decide("s", "t", c, {"path": str(ws / "a.txt")}, [str(ws)]).outcome == "run"
    assert decide("s", "t", c, {"path": "sub/a.txt"}, [str(ws)], str(ws)).outcome == "run"
    assert decide("s", "t", c, {"path": str(ws / "escape" / "passwd")}, [str(ws)]).outcome == "ask"
    assert decide("s", "t", c, {"path": "../outside"}, [str(ws)], str(ws)).outcome == "ask"
    assert decide("s", "t", c, {"path": "escape/passwd"}, [str(ws)], str(ws)).outcome == "ask"
    assert decide("s", "t", c, {"path": str(ws / "a")}, []).outcome == "ask"


def test_a_relative_path_counts_as_inside_only_where_the_server_resolves_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ann = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    c = classify(_tool(ann, {"path": {"type": "string"}}))
    # no known base (a stdio server without cwd runs in the gateway's directory; HTTP elsewhere)
    unplaced = decide("s", "t", c, {"path": "in2.txt"}, [str(ws)])
    assert unplaced.outcome == "ask" and unplaced.outside == ["in2.txt"]
    assert "resolved where the server runs" in unplaced.reason
    # a base outside the workspace: the same relative path lands outside
    assert decide("s", "t", c, {"path": "in2.txt"}, [str(ws)], str(tmp_path)).outcome == "ask"
    assert decide("s", "t", c, {"path": "in2.txt"}, [str(ws)], str(ws)).outcome == "run"


def test_home_and_variable_paths_never_count_as_inside_the_workspace(tmp_path: Path) -> None:
    ann = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    c = classify(_tool(ann, {"path": {"type": "string"}}))
    for path in ("~/home.txt", "~root/x", "$HOME/x", "${HOME}/x"):
        assert decide("s", "t", c, {"path": path}, [str(tmp_path)]).outcome == "ask", path


def test_confirmation_says_exactly_what_will_run() -> None:
    c = classify(_tool(ToolAnnotations(read_only_hint=False, destructive_hint=True)))
    d = decide("git", "git_reset", c, {"mode": "hard", "target": "HEAD~3", "repo_path": "/srv/app"}, [])
    msg = confirmation_message(d)
    assert (
        'will run tool "git_reset" of MCP server "git" with '
        'mode="hard", target="HEAD~3", repo_path="/srv/app"' in msg
    )
    assert "destructive" in msg and "continue?" not in msg.lower()


def test_long_argument_values_are_cut_with_a_count() -> None:
    text = render_action("s", "t", {"body": "x" * 1000})
    assert "more characters" in text and len(text) < 400


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("a\x00b", "arguments.path: holds a NUL byte, which no file path can"),
        ("\ud800", "arguments.path: is not valid Unicode (a lone surrogate), which no file path can hold"),
        (
            "é" * 2048,
            f"arguments.path: is 4,096 bytes long, over the longest file path ({MAX_PATH_BYTES:,} bytes)",
        ),
        (5, "arguments.path: must be a string (a file path), got integer"),
        ({"a": 1}, "arguments.path: must be a string (a file path), got object"),
        (["ok", None, "x\x00"], "arguments.path[1]: must be a string (a file path), got null"),
    ],
)
def test_a_path_argument_that_cannot_be_a_path_is_an_error_naming_it(value: object, error: str) -> None:
    c = classify(_tool(WRITES, {"path": {"type": "string"}}))
    assert path_argument_errors(c, {"path": value})[0] == error


def test_every_item_of_a_path_list_is_judged_and_paths_that_can_be_are_not() -> None:
    c = classify(_tool(WRITES, {"path": {"type": "string"}}))
    assert path_argument_errors(c, {"path": ["ok", "x\x00", 3]}) == [
        "arguments.path[1]: holds a NUL byte, which no file path can",
        "arguments.path[2]: must be a string (a file path), got integer",
    ]
    assert path_argument_errors(c, {"path": "a" * MAX_PATH_BYTES}) == []
    assert path_argument_errors(c, {}) == [] and path_argument_errors(c, {"path": None}) == []


def test_paths_are_judged_only_for_tiers_that_place_them() -> None:
    for ann in (ToolAnnotations(read_only_hint=True), None):  # allow, confirm
        c = classify(_tool(ann, {"path": {"type": "string"}}))
        assert path_argument_errors(c, {"path": "a\x00b"}) == []


def test_the_decision_never_raises_for_a_value_no_path_can_hold(tmp_path: Path) -> None:
    c = classify(_tool(WRITES, {"path": {"type": "string"}}))
    for value in ("a\x00b", "\ud800", "a" * 70_000):
        assert decide("s", "t", c, {"path": value}, [str(tmp_path)], str(tmp_path)).outcome == "ask"


def test_arguments_orjson_cannot_write_are_rendered_and_bound() -> None:
    big = 10**30
    assert render_action("s", "t", {"n": big}) == f'will run tool "t" of MCP server "s" with n={big}'
    assert binding("s__t", {"n": big}, None) != binding("s__t", {"n": big + 1}, None)
