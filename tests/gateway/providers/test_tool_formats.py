"""Registry tools rendered in each provider's tool format."""

from __future__ import annotations

import pytest

from gateway.errors import InvalidRequest
from gateway.providers.tool_formats import inline_refs, render_tools
from gateway.schema import ToolDefinition

SCHEMA = {
    "type": "object",
    "$defs": {
        "Filter": {
            "type": "object",
            "properties": {"field": {"type": "string"}},
            "required": ["field"],
            "additionalProperties": False,
        }
    },
    "properties": {"query": {"type": "string"}, "filter": {"$ref": "#/$defs/Filter"}},
    "required": ["query"],
}


def test_refs_are_inlined_and_defs_removed() -> None:
    out = inline_refs(SCHEMA)
    assert "$defs" not in out and out["properties"]["filter"]["properties"] == {"field": {"type": "string"}}
    assert out["required"] == ["query"]


def test_recursive_ref_is_cut() -> None:
    node = {
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
        "$ref": "#/$defs/N",
    }
    assert inline_refs(node)["properties"]["next"] == {"type": "object"}


def test_openai_anthropic_and_gemini_shapes() -> None:
    tools = [ToolDefinition(name="github__search", description="search", parameters=SCHEMA)]
    openai = render_tools(tools, "openai")[0]
    assert openai["type"] == "function" and openai["function"]["name"] == "github__search"
    assert openai["function"]["parameters"]["required"] == ["query"]
    anthropic = render_tools(tools, "anthropic")[0]
    assert anthropic["input_schema"]["properties"]["filter"]["required"] == ["field"]
    gemini = render_tools(tools, "gemini")[0]["functionDeclarations"][0]
    assert "additionalProperties" not in str(gemini) and gemini["parameters"]["required"] == ["query"]


def test_too_many_tools_for_openai_is_a_clear_error() -> None:
    tools = [ToolDefinition(name=f"s__t{i}") for i in range(129)]
    with pytest.raises(InvalidRequest, match="129 tools exceed openai's limit of 128"):
        render_tools(tools, "openai")
    assert len(render_tools(tools, "anthropic")) == 129


def test_unknown_format() -> None:
    with pytest.raises(InvalidRequest, match="unknown tool format"):
        render_tools([], "cohere")
