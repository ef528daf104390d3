"""A stdio MCP server with the tool, resource and prompt names that the official
``@modelcontextprotocol/conformance`` server scenarios call. The gateway is put in front of it
(``mcp.namespaced: false``) and the suite is run against the gateway's ``/mcp``.

Written from the scenario descriptions printed by ``conformance list``/the scenario sources
(``@modelcontextprotocol/conformance@0.1.16`` and ``@0.2.0-alpha.12``); each handler returns what
the scenario checks. The 2026-07-28 line adds the ``test_input_required_result_*`` tools and
prompt (multi-round ``InputRequiredResult``: elicitation, sampling, roots, several at once, a
``requestState`` the fixture signs and checks), ``test_missing_capability`` (asks for sampling),
``test_header_param`` (a string argument mirrored in the ``Mcp-Param-Region`` header,
``x-mcp-header``) and JSON Schema 2020-12 ``allOf``/``anyOf``, ``if``/``then``/``else`` and
``$anchor`` in ``json_schema_2020_12_tool``.

Run as ``python tests/mcp_servers/conformance_server.py`` (stdio).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Annotated, Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.exceptions import MCPError
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    ListRootsRequest,
    MissingRequiredClientCapabilityErrorData,
    SamplingCapability,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

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


def _responses(ctx: Context) -> dict[str, Any]:
    """This round's input responses as plain JSON (empty on the first round)."""
    got = ctx.input_responses or {}
    return {
        k: (v if isinstance(v, dict) else v.model_dump(by_alias=True, mode="json")) for k, v in got.items()
    }


def _ask_name(message: str, field: str = "name") -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _sample(text: str, max_tokens: int) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


STATE_KEY = b"conformance-fixture-state-key"


def _signed(value: str) -> str:
    """``value`` with an HMAC, as an integrity-protected ``requestState``."""
    mac = hmac.new(STATE_KEY, value.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{value}.{mac}"


def _verified(state: str | None) -> str | None:
    """The value of a ``requestState`` made by :func:`_signed`, None when absent or tampered."""
    value, _, _mac = (state or "").rpartition(".")
    return value if value and hmac.compare_digest(_signed(value), state or "") else None


def _add_input_required_tools(server: MCPServer) -> None:
    """The ``input-required-result-*`` tools and prompt of the 2026-07-28 scenarios."""

    @server.tool(annotations=RO, description="Asks the user's name (InputRequiredResult)")
    def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
        got = _responses(ctx).get("user_name")
        if not isinstance(got, dict) or not isinstance(got.get("content"), dict):
            return InputRequiredResult(input_requests={"user_name": _ask_name("What is your name?")})
        return f"Hello, {got['content'].get('name', '')}!"

    @server.tool(annotations=RO, description="Asks the client's model (InputRequiredResult)")
    def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
        got = _responses(ctx).get("capital_question")
        if not isinstance(got, dict):
            request = _sample("What is the capital of France?", 100)
            return InputRequiredResult(input_requests={"capital_question": request})
        content = got.get("content") or {}
        return f"Sampling response: {content.get('text', '') if isinstance(content, dict) else content}"

    @server.tool(annotations=RO, description="Asks the client's roots (InputRequiredResult)")
    def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
        got = _responses(ctx).get("client_roots")
        if not isinstance(got, dict):
            return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})
        uris = [r.get("uri") for r in got.get("roots", []) if isinstance(r, dict)]
        return f"Roots: {', '.join(str(u) for u in uris)}"

    @server.tool(annotations=RO, description="Asks three things at once (InputRequiredResult)")
    def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
        got = _responses(ctx)
        keys = ("user_name", "greeting", "client_roots")
        if not all(isinstance(got.get(k), dict) for k in keys) or _verified(ctx.request_state) != "multi":
            requests: dict[str, Any] = {
                "user_name": _ask_name("What is your name?"),
                "greeting": _sample("Generate a greeting", 50),
                "client_roots": ListRootsRequest(),
            }
            return InputRequiredResult(input_requests=requests, request_state=_signed("multi"))
        return "Received all inputs: " + ", ".join(keys)

    @server.tool(annotations=RO, description="Round-trips its requestState (InputRequiredResult)")
    def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
        got = _responses(ctx).get("confirm")
        if not isinstance(got, dict):
            schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
            params = ElicitRequestFormParams(message="Please confirm", requested_schema=schema)
            request = ElicitRequest(params=params)
            return InputRequiredResult(input_requests={"confirm": request}, request_state=_signed("confirm"))
        if _verified(ctx.request_state) != "confirm":
            raise ValueError("requestState missing or failed its integrity check")
        return "state-ok: the request state was received and validated"

    @server.tool(annotations=RO, description="Two rounds of questions (InputRequiredResult)")
    def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
        got = _responses(ctx)
        step = _verified(ctx.request_state)
        if step == "round-1" and isinstance(got.get("step1"), dict):
            name = (got["step1"].get("content") or {}).get("name", "")
            request = _ask_name("Step 2: What is your favorite color?", "color")
            return InputRequiredResult(
                input_requests={"step2": request}, request_state=_signed(f"round-2:{name}")
            )
        if step is not None and step.startswith("round-2:") and isinstance(got.get("step2"), dict):
            color = (got["step2"].get("content") or {}).get("color", "")
            return f"Done: name={step.removeprefix('round-2:')}, color={color}"
        request = _ask_name("Step 1: What is your name?")
        return InputRequiredResult(input_requests={"step1": request}, request_state=_signed("round-1"))

    @server.tool(annotations=RO, description="Signs its requestState (InputRequiredResult)")
    def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
        if ctx.request_state is None:
            schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
            params = ElicitRequestFormParams(message="Please confirm", requested_schema=schema)
            request = ElicitRequest(params=params)
            return InputRequiredResult(input_requests={"confirm": request}, request_state=_signed("tamper"))
        if _verified(ctx.request_state) != "tamper":
            raise ValueError("requestState failed its integrity check")
        return "state verified"

    @server.tool(annotations=RO, description="Asks only what the client declared it supports")
    def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
        if ctx.input_responses:
            return "answered"
        caps = ctx.client_capabilities
        requests: dict[str, Any] = {}
        if caps is not None and caps.elicitation is not None:
            requests["user_name"] = _ask_name("What is your name?")
        if caps is not None and caps.sampling is not None:
            requests["greeting"] = _sample("Generate a greeting", 50)
        if caps is not None and caps.roots is not None:
            requests["client_roots"] = ListRootsRequest()
        if not requests:
            return "the client declared no capability to ask with"
        return InputRequiredResult(input_requests=requests)

    @server.tool(annotations=RO, description="Needs sampling, which the client must declare")
    def test_missing_capability(ctx: Context) -> str | InputRequiredResult:
        caps = ctx.client_capabilities
        if caps is None or caps.sampling is None:
            data = MissingRequiredClientCapabilityErrorData(
                required_capabilities=ClientCapabilities(sampling=SamplingCapability())
            )
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "this tool needs the sampling capability",
                data.model_dump(by_alias=True, mode="json", exclude_none=True),
            )
        got = _responses(ctx).get("sample")
        if not isinstance(got, dict):
            return InputRequiredResult(input_requests={"sample": _sample("Say hi", 20)})
        return "sampled"

    @server.tool(annotations=RO, description="Asks through elicitation (server-stateless diagnostic)")
    def test_streaming_elicitation(ctx: Context) -> str | InputRequiredResult:
        if not isinstance(_responses(ctx).get("user_name"), dict):
            return InputRequiredResult(input_requests={"user_name": _ask_name("What is your name?")})
        return "elicited"

    @server.tool(annotations=RO, description="Logs three messages (server-stateless diagnostic)")
    async def test_logging_tool(ctx: Context) -> str:
        for message in ("first", "second", "third"):
            await ctx.info(f"log message {message}")
        return "logged"

    changes = {"n": 0}

    @server.tool(annotations=RO, description="Adds a tool and says the list changed (diagnostic)")
    async def test_trigger_tool_change(ctx: Context) -> str:
        changes["n"] += 1
        n = changes["n"]
        server.add_tool(lambda: "added", name=f"added_tool_{n}", description="added", annotations=RO)
        await ctx.notify_tools_changed()
        return f"tool list changed ({n})"

    @server.tool(annotations=RO, description="Adds a prompt and says the list changed (diagnostic)")
    async def test_trigger_prompt_change(ctx: Context) -> str:
        changes["n"] += 1
        n = changes["n"]
        server.add_prompt(
            Prompt.from_function(lambda: "added", name=f"added_prompt_{n}", description="added")
        )
        await ctx.notify_prompts_changed()
        return f"prompt list changed ({n})"

    @server.prompt(description="A prompt that asks for context first (InputRequiredResult)")
    def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
        got = _responses(ctx).get("user_context")
        if not isinstance(got, dict):
            request = _ask_name("What context should the prompt use?", "context")
            return InputRequiredResult(input_requests={"user_context": request})
        context = (got.get("content") or {}).get("context", "")
        return [UserMessage(f"Prompt with context: {context}")]


def build() -> MCPServer:
    """The conformance fixture server."""
    server = MCPServer("turnstile-conformance-fixture", version="0.0.1")
    _add_input_required_tools(server)

    @server.tool(annotations=RO, description="Mirrors region in the Mcp-Param-Region header")
    def test_header_param(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return f"region={region}"

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
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
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
