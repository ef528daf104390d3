"""A stdio MCP server with the tool, resource and prompt names that the official
``@modelcontextprotocol/conformance`` server scenarios call. The gateway is put in front of it
(``mcp.namespaced: false``) and the suite is run against the gateway's ``/mcp``.

Written from the scenario descriptions printed by ``conformance list``/the scenario sources
(``@modelcontextprotocol/conformance@0.1.16``); each handler returns what the scenario checks.

Run as ``python tests/mcp_servers/conformance_server.py`` (stdio).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    AudioContent,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# a 1x1 transparent PNG and a tiny WAV header, base64
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00\x02\x00\x10\x00"
    b"data\x00\x00\x00\x00"
).decode()
SCHEMA_2020 = "https://json-schema.org/draft/2020-12/schema"
# every fixture tool only reads (elicitation and sampling ask the client, they change nothing)
RO = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
ASK_KEY = "ask"


def _elicit_text(result: Any) -> str:
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}"


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _answer(ctx: Context, model: Any) -> Any:
    """The client's answer to this tool's one input request of the previous round, or None."""
    got = (ctx.input_responses or {}).get(ASK_KEY)
    if got is None:
        return None
    return model.model_validate(got if isinstance(got, dict) else got.model_dump(by_alias=True))


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> ElicitResult | InputRequiredResult:
    """Ask the client through elicitation in either protocol era: a server-to-client request on
    a handshake-era connection, an ``InputRequiredResult`` round on a 2026-07-28 one."""
    if not _modern(ctx):
        return await ctx.session.elicit_form(message, schema)
    answer = _answer(ctx, ElicitResult)
    if answer is not None:
        return answer
    params = ElicitRequestFormParams(message=message, requested_schema=schema)
    return InputRequiredResult(input_requests={ASK_KEY: ElicitRequest(params=params)}, request_state="asked")


def build() -> MCPServer:
    """The conformance fixture server."""
    server = MCPServer("turnstile-conformance-fixture", version="0.0.1")

    @server.tool(annotations=RO, description="Returns simple text")
    def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @server.tool(annotations=RO, description="Returns an image")
    def test_image_content() -> CallToolResult:
        return CallToolResult(content=[ImageContent(type="image", data=PNG, mime_type="image/png")])

    @server.tool(annotations=RO, description="Returns audio")
    def test_audio_content() -> CallToolResult:
        return CallToolResult(content=[AudioContent(type="audio", data=WAV, mime_type="audio/wav")])

    @server.tool(annotations=RO, description="Returns an embedded resource")
    def test_embedded_resource() -> CallToolResult:
        res = TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return CallToolResult(content=[EmbeddedResource(type="resource", resource=res)])

    @server.tool(annotations=RO, description="Returns text, image and resource")
    def test_multiple_content_types() -> CallToolResult:
        res = TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return CallToolResult(
            content=[
                TextContent(type="text", text="Multiple content types test:"),
                ImageContent(type="image", data=PNG, mime_type="image/png"),
                EmbeddedResource(type="resource", resource=res),
            ]
        )

    @server.tool(annotations=RO, description="Sends three log messages")
    async def test_tool_with_logging(ctx: Context) -> str:
        await ctx.info("Tool execution started")
        await anyio.sleep(0.05)
        await ctx.info("Tool processing data")
        await anyio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return "Tool with logging executed successfully"

    @server.tool(annotations=RO, description="Always fails")
    def test_error_handling() -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text="This tool intentionally returns an error for testing")],
            is_error=True,
        )

    @server.tool(annotations=RO, description="Reports progress")
    async def test_tool_with_progress(ctx: Context) -> str:
        for step in (0, 50, 100):
            await ctx.report_progress(step, 100)
            if step < 100:
                await anyio.sleep(0.05)
        return "Tool with progress executed successfully"

    @server.tool(annotations=RO, description="Asks the client's model")
    async def test_sampling(prompt: str, ctx: Context) -> str | InputRequiredResult:
        messages = [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))]
        if _modern(ctx):
            result = _answer(ctx, CreateMessageResult)
            if result is None:
                params = CreateMessageRequestParams(messages=messages, max_tokens=100)
                request = CreateMessageRequest(params=params)
                return InputRequiredResult(input_requests={ASK_KEY: request}, request_state="asked")
        else:
            result = await ctx.session.create_message(messages, max_tokens=100)
        text = getattr(result.content, "text", str(result.content))
        return f"LLM response: {text}"

    @server.tool(annotations=RO, description="Asks the user")
    async def test_elicitation(message: str, ctx: Context) -> str | InputRequiredResult:
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        result = await _elicit(ctx, message, schema)
        if isinstance(result, InputRequiredResult):
            return result
        return f"User response: action={result.action}, content={json.dumps(result.content or {})}"

    @server.tool(annotations=RO, description="Elicitation with defaults")
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str | InputRequiredResult:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": True},
            },
        }
        result = await _elicit(ctx, "Please review and update the form fields", schema)
        return result if isinstance(result, InputRequiredResult) else _elicit_text(result)

    @server.tool(annotations=RO, description="Elicitation with enum variants")
    async def test_elicitation_sep1330_enums(ctx: Context) -> str | InputRequiredResult:
        opts = ["option1", "option2", "option3"]
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": opts},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": opts}},
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        }
        result = await _elicit(ctx, "Please select options", schema)
        return result if isinstance(result, InputRequiredResult) else _elicit_text(result)

    @server.tool(annotations=RO, description="Says test://watched-resource changed (not a suite tool)")
    async def touch_watched(ctx: Context) -> str:
        if _modern(ctx):
            await ctx.notify_resource_updated("test://watched-resource")
        else:
            await ctx.session.send_resource_updated("test://watched-resource")
        return "touched"

    @server.tool(annotations=RO, description="Tool with JSON Schema 2020-12 features")
    def json_schema_2020_12_tool(name: str = "", address: dict[str, str] | None = None) -> str:
        return f"name={name} address={address}"

    tool = server._tool_manager.get_tool("json_schema_2020_12_tool")
    assert tool is not None
    tool.parameters = {
        "$schema": SCHEMA_2020,
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }

    @server.resource(
        "test://static-text", name="static-text", description="static text", mime_type="text/plain"
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary", name="static-binary", description="static PNG", mime_type="image/png"
    )
    def static_binary() -> bytes:
        return base64.b64decode(PNG)

    @server.resource(
        "test://template/{id}/data",
        name="template",
        description="templated data",
        mime_type="application/json",
    )
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource(
        "test://watched-resource", name="watched", description="subscribable", mime_type="text/plain"
    )
    def watched() -> str:
        return "watched"

    @server.prompt(description="A simple prompt")
    def test_simple_prompt() -> list[UserMessage]:
        return [UserMessage("This is a simple prompt for testing.")]

    @server.prompt(description="A prompt with arguments")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    @server.prompt(description="A prompt with an embedded resource")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        text = "Embedded resource content for testing."
        res = TextResourceContents(uri=resourceUri, mime_type="text/plain", text=text)
        return [
            UserMessage(EmbeddedResource(type="resource", resource=res)),
            UserMessage("Please process the embedded resource above."),
        ]

    @server.prompt(description="A prompt with an image")
    def test_prompt_with_image() -> list[UserMessage]:
        return [
            UserMessage(ImageContent(type="image", data=PNG, mime_type="image/png")),
            UserMessage("Please analyze the image above."),
        ]

    return server


if __name__ == "__main__":
    build().run("stdio")
