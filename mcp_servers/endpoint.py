"""The gateway's one MCP endpoint: a low-level ``mcp`` ``Server`` over every registered server.

* ``tools/list``: every available registered tool under its exposed name (``<server>__<tool>``),
  with the upstream's description, schemas and annotations, and ``_meta["io.turnstile/origin"]``
  naming the server, the original name and the trust tier.
* ``tools/call``: looked up by exposed name only (never by bare tool name) among the tools the
  caller may see (:mod:`mcp_servers.clients`), its arguments checked against the tool's input
  schema (:mod:`mcp_servers.arguments`; a mismatch is an ``is_error`` result and the upstream
  never sees the call), checked against the tool's trust tier (:mod:`mcp_servers.trust`;
  ``confirm`` asks the client through elicitation, showing the exact action; a 2026-07-28
  approval travels in a single-use sealed state, :mod:`mcp_servers.request_state`), every
  decision written to the audit log with the caller's client name, routed to (server, original
  name), the result capped (:func:`mcp_servers.output_cap.cap_text`), marked as external
  untrusted data, and the upstream's ``serverInfo`` stamp replaced by the gateway's; with
  guardrails on, the relayed result checked (the ``guardrails`` hook: redacted, or an error
  result when blocked).
* With ``mcp.tool_search`` on for the caller, ``tools/list`` is the search/describe/call
  meta-tools (:mod:`mcp_servers.tool_search`), and a call of the call meta-tool is handled as a
  ``tools/call`` of the tool it names.
* Upstream credentials are the gateway's own (config); nothing from the client's HTTP request
  (``Authorization`` included) is forwarded upstream: a call carries only name and arguments.

Faults become ``is_error`` results that name the server (unavailable, timed out, died mid-call);
an unknown tool name is a JSON-RPC ``-32602`` error.
"""

from __future__ import annotations

import time
import warnings
import weakref
from typing import Any

import orjson
import structlog
from mcp.server import InitializationOptions, NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.types import (
    INVALID_PARAMS,
    LOG_LEVEL_META_KEY,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_INFO_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    ContentBlock,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    SetLevelRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    TextContent,
    Tool,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_servers.aggregate import Aggregator, decode_cursor, encode_cursor
from mcp_servers.arguments import argument_errors, invalid_arguments_text
from mcp_servers.clients import EVERYTHING, Visibility, current_caller, from_request, subject_token
from mcp_servers.output_cap import cap_text
from mcp_servers.registry import McpRegistry, RegisteredTool
from mcp_servers.relay import LEVELS, Channel, caller_capabilities, missing_capabilities
from mcp_servers.request_state import STATE_TTL_S, SealedStates, binding
from mcp_servers.tool_search import CALL, META_NAMES, ToolSearch, call_target
from mcp_servers.trust import (
    CallDecision,
    confirmation_message,
    decide,
    path_argument_errors,
    preapproval_hint,
)
from mcp_servers.upstream import UpstreamCallFailed, UpstreamUnavailable

log = structlog.get_logger("turnstile.mcp.endpoint")

ORIGIN_META_KEY = "io.turnstile/origin"
CONFIRM_KEY = "turnstile_confirm"
_CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run it", "description": "Approve exactly this action once"}
    },
    "required": ["approve"],
}


def _text_result(text: str, *, is_error: bool, meta: dict[str, Any] | None = None) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error, _meta=meta)


def cap_result(result: CallToolResult, cap_bytes: int, mode: str) -> tuple[CallToolResult, dict[str, Any]]:
    """Cap a tool result to about ``cap_bytes`` UTF-8 bytes in all.

    Text blocks share the budget in order (head + tail + marker each, on UTF-8 boundaries); an
    image/audio/embedded blob that does not fit is replaced by a text marker naming its size.
    When anything was cut, ``structured_content`` (usually a copy of the same data) is dropped;
    if the tool declared an output schema the result then becomes ``is_error`` (a truncated
    structure cannot conform). ``mode="error"`` turns an oversized result into an ``is_error``
    "result too large" result. Returns the result and ``{"truncated", "original_bytes",
    "omitted_bytes"}``.
    """
    budget = cap_bytes
    out: list[ContentBlock] = []
    truncated = False
    original = kept = 0
    for block in result.content:
        if isinstance(block, TextContent):
            size = len(block.text.encode("utf-8", errors="replace"))
            original += size
            capped = cap_text(block.text, max(256, budget), mode="truncate")
            if capped.truncated:
                truncated = True
            text = capped.text
            out.append(TextContent(type="text", text=text, annotations=block.annotations))
            used = len(text.encode("utf-8", errors="replace"))
        else:
            used = len(orjson.dumps(block.model_dump(mode="json")))
            original += used
            if used > budget:
                truncated = True
                kind = (
                    "image"
                    if isinstance(block, ImageContent)
                    else "embedded resource"
                    if isinstance(block, EmbeddedResource)
                    else block.type
                )
                text = f"[turnstile: {kind} of {used} bytes omitted: over the gateway's result cap]"
                out.append(TextContent(type="text", text=text))
                used = len(text)
            else:
                out.append(block)
        kept += used
        budget = max(0, budget - used)
    if not truncated:
        if result.structured_content is not None:
            size = len(orjson.dumps(result.structured_content))
            if size + kept > cap_bytes:
                truncated = True
                original += size
        if not truncated:
            return result, {"truncated": False, "original_bytes": original, "omitted_bytes": 0}
    info = {"truncated": True, "original_bytes": original, "omitted_bytes": max(0, original - kept)}
    if mode == "error":
        msg = (
            f"result too large: the tool returned {original} bytes, over the gateway's cap of "
            f"{cap_bytes} bytes"
        )
        return _text_result(msg, is_error=True), info
    return CallToolResult(content=out, is_error=result.is_error, _meta=result.meta), info


class _GatewayServer(Server[Any]):
    """The low-level server, advertising ``listChanged`` for tools, resources and prompts to
    handshake-era clients too (2026-07-28 clients get it from ``subscriptions/listen``)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(True, True, True),
            experimental_capabilities,
            extensions,
        )


_LOG_LEVELS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""Handshake-era connection -> the level its client set with ``logging/setLevel``."""


async def _set_logging_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    """``logging/setLevel`` (handshake era): upstream log messages relayed to this connection
    from then on are those at or above ``level`` (before it: every level)."""
    connection = getattr(ctx.session, "_connection", None)
    if connection is not None:
        _LOG_LEVELS[connection] = params.level
    return EmptyResult()


def channel_for(ctx: ServerRequestContext[Any], server: str) -> Channel:
    """The way back to the caller of ``ctx`` (:class:`mcp_servers.relay.Channel`): its log
    level is the 2026-07-28 per-request opt-in (``_meta``), or for a handshake-era caller
    the level of its last ``logging/setLevel`` (every level before one)."""
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    caps = ctx.session.client_capabilities
    if modern:
        level = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
        level = level if level in LEVELS else None
    else:
        level = _LOG_LEVELS.get(getattr(ctx.session, "_connection", None) or ctx, "debug")
    return Channel(
        session=ctx.session,
        request_id=ctx.request_id,
        modern=modern,
        log_level=level,
        can_elicit=caps is not None and caps.elicitation is not None,
        can_sample=caps is not None and caps.sampling is not None,
        server=server,
        capabilities=caller_capabilities(caps, modern),
    )


class McpEndpoint:
    """Holds the low-level ``Server`` facing clients and the logic of its handlers."""

    def __init__(
        self,
        registry: McpRegistry,
        *,
        name: str = "turnstile",
        version: str = "0.1.0",
        workspace_roots: list[str] | None = None,
        state_secret: bytes | None = None,
    ) -> None:
        self.registry = registry
        self.name = name
        self.version = version
        self.workspace_roots = list(workspace_roots or [])
        # Counts tool calls and trust decisions (``tool_call(server, tool, outcome, seconds)``,
        # ``trust_decision(server, tier, outcome)``: gateway.metrics.Metrics), set by the server.
        self.observer: Any = None
        # Spans of tool calls (``server_span``, ``client_span``, ``current``, ``end``:
        # gateway.tracing.McpTracer), set by the server when tracing is on; None: off.
        self.tracer: Any = None
        # Checks a relayed tool result (``await tool_result(result, server=, tool=, client=)``:
        # gateway.guardrails.mcp.McpGuard), set by the server when guardrails are on; None: off.
        # The tool loop's results are checked by the guardrails layer instead.
        self.guardrails: Any = None
        self.states = SealedStates(secret=state_secret, ttl_s=STATE_TTL_S)
        self.search = ToolSearch(registry)  # the meta-tools of mcp.tool_search
        self.aggregate = Aggregator(registry, name=name, version=version, page_size=registry.config.page_size)
        self.aggregate.states = self.states
        self._listen_handler = ListenHandler(self.aggregate.bus)
        with warnings.catch_warnings():  # logging/setLevel is deprecated in 2026-07-28, still served
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server: Server[Any] = self._make_server(name, version)

    async def _on_listen(
        self, ctx: ServerRequestContext[Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        """``subscriptions/listen``: the SDK's handler, its stream recorded with the caller's
        visibility (resource updates of servers it may not see never reach it)."""
        with self.aggregate.bus.listening_as(self.aggregate.visibility(ctx)):
            return await self._listen_handler(ctx, params)

    def _make_server(self, name: str, version: str) -> Server[Any]:
        return _GatewayServer(
            name,
            version=version,
            instructions="Turnstile MCP gateway: tools of every registered MCP server as <server>__<tool>",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self.visible_input_schema,
            on_list_resources=self.aggregate.list_resources,
            on_list_resource_templates=self.aggregate.list_resource_templates,
            on_read_resource=self.aggregate.read_resource,
            on_list_prompts=self.aggregate.list_prompts,
            on_get_prompt=self.aggregate.get_prompt,
            on_completion=self.aggregate.complete,
            on_subscribe_resource=self.aggregate.subscribe,
            on_unsubscribe_resource=self.aggregate.unsubscribe,
            on_subscriptions_listen=self._on_listen,
            on_set_logging_level=_set_logging_level,
        )

    # ------------------------------------------------------------------ tools/list

    def exposed_tool(self, t: RegisteredTool) -> Tool:
        """The upstream tool as the gateway lists it (exposed name, origin in ``_meta``)."""
        meta = {ORIGIN_META_KEY: {"server": t.server, "tool": t.name, "trust": t.trust.tier}}
        return Tool(
            name=t.exposed,
            title=t.tool.title,
            description=t.tool.description,
            input_schema=t.tool.input_schema,
            output_schema=t.tool.output_schema,
            annotations=t.tool.annotations,
            icons=t.tool.icons,
            _meta=meta,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """Available tools in (server, name) order, ``page_size`` a page; the cursor names the
        last (server, tool) handed out, so a page boundary survives changes to the list."""
        self.aggregate.track(ctx)
        start = decode_cursor("tools", params.cursor if params else None)
        after = tuple(start["a"]) if start.get("a") else None
        visible = from_request(self.registry.config, ctx.request)
        if self.search.applies(visible):
            return ListToolsResult(tools=self.search.meta_tools(visible))
        tools = [
            t
            for t in self.registry.tools()
            if visible.allows(t.exposed) and (after is None or (t.server, t.name) > after)
        ]
        page = tools[: self.aggregate.page_size]
        nxt = None
        if len(tools) > len(page):
            nxt = encode_cursor("tools", None, after=[page[-1].server, page[-1].name])
        return ListToolsResult(tools=[self.exposed_tool(t) for t in page], next_cursor=nxt)

    def visible_input_schema(self, exposed: str) -> dict[str, Any] | None:
        """The input schema of ``exposed`` when the current ``/mcp`` caller may see it, else
        None, as for a tool that does not exist. The MCP SDK checks a modern ``tools/call``'s
        ``Mcp-Param-*`` headers against it before :meth:`_call_tool` runs, and its errors name
        the schema's header properties: a hidden tool must not be looked up there."""
        caller = current_caller(self.registry.config)
        if exposed in META_NAMES and self.search.applies(caller):
            return self.search.meta_schema(exposed)
        if not caller.allows(exposed):
            return None
        return self.registry.input_schema(exposed)

    # ------------------------------------------------------------------ tools/call

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        tracer = self.tracer
        if tracer is None:
            return await self._handle_call(ctx, params)
        request = ctx.request
        headers = getattr(request, "headers", None)
        session = headers.get("mcp-session-id") if headers is not None else None
        span = tracer.server_span(params.name, params.meta, headers, session)
        try:
            with tracer.current(span):  # the forwarded call's CLIENT span is its child
                result = await self._handle_call(ctx, params)
        except MCPError as err:
            tracer.end(span, None, str(err.error.code))
            raise
        except BaseException:
            tracer.end(span, None, "_OTHER")
            raise
        tracer.end(span, result)
        return result

    async def _handle_call(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        self.aggregate.track(ctx)
        visible = from_request(self.registry.config, ctx.request)
        if params.name in META_NAMES and self.search.applies(visible):
            args = dict(params.arguments or {})
            if params.name != CALL:
                return self.search.answer(params.name, args, visible)
            target = call_target(args)
            if isinstance(target, str):
                return _text_result(target, is_error=True)
            params = params.model_copy(update={"name": target[0], "arguments": target[1]})
            found = self.registry.lookup(params.name)
            if found is None or not visible.allows(found.exposed):  # a model's error: an error result
                return _text_result(
                    f"unknown tool {params.name!r}: not exposed by this gateway", is_error=True
                )
        t = self.registry.lookup(params.name)
        if t is None or not visible.allows(t.exposed):
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}: not exposed by this gateway")
        if not t.available:
            return self._unavailable(t)
        args = dict(params.arguments or {})
        decision = await self._screen(t, args, visible)
        if isinstance(decision, CallToolResult):
            return decision
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        bound = binding(params.name, params.arguments, visible.client)
        state = self.states.unseal(bound, params.request_state) if modern else None  # single-use
        if modern and state is None and params.request_state and self.states.forged(params.request_state):
            raise MCPError(
                INVALID_PARAMS, "requestState failed the gateway's integrity check (tampered or foreign)"
            )
        if decision.outcome == "refuse":
            return await self._refused(t, decision, visible)
        if decision.outcome == "ask" and not (state or {}).get("c"):
            answer = await self._confirm(ctx, params, t, decision, visible, state)
            if answer is not None:
                return answer
        elif decision.outcome != "ask":
            await self._audit(t, decision, "allowed", visible)
        result = await self._forward(ctx, params, t, args, state, visible)
        guard = self.guardrails
        if guard is not None and isinstance(result, CallToolResult):  # tool output entering a model's context
            result = await guard.tool_result(result, server=t.server, tool=t.name, client=visible.client)
        return result

    async def _screen(
        self, t: RegisteredTool, args: dict[str, Any], visible: Visibility
    ) -> CallToolResult | CallDecision:
        """The trust decision for a call with ``args``, or the ``is_error`` result that ends it
        here: arguments that do not match the input schema or path arguments that cannot be
        file paths (:meth:`_check_arguments`), or a check that failed unexpectedly (logged once
        with its traceback; the call is not run). Never raises an ``Exception``: nothing of a
        check reaches the MCP SDK (which would answer JSON-RPC code 0)."""
        try:
            invalid = await self._check_arguments(t, args, visible)
            if invalid is not None:
                return invalid
            return decide(t.server, t.name, t.trust, args, self.workspace_roots, t.path_base)
        except Exception as err:
            log.exception("mcp_call_check_failed", server=t.server, tool=t.name)
            return _text_result(
                f'the gateway could not check the arguments of tool "{t.name}" of MCP server "{t.server}" '
                f"({type(err).__name__}); the tool was not run.",
                is_error=True,
            )

    async def _check_arguments(
        self, t: RegisteredTool, args: dict[str, Any], visible: Visibility
    ) -> CallToolResult | None:
        """None when ``args`` match the tool's input schema and its path arguments can be file
        paths (:func:`mcp_servers.trust.path_argument_errors`); else the ``is_error`` result
        naming each problem (audited, logged; the upstream never sees the call)."""
        errors = argument_errors(t.validator, args) if t.validator is not None else []
        if not errors:
            errors = path_argument_errors(t.trust, args)
        if not errors:
            return None
        text = invalid_arguments_text(t.server, t.name, errors)
        log.info("mcp_invalid_arguments", server=t.server, tool=t.name, errors=errors[:10])
        await self._audit_entry(
            {
                "server": t.server,
                "tool": t.name,
                "exposed": t.exposed,
                "tier": t.trust.tier,
                "outcome": "invalid_arguments",
                "reason": "; ".join(errors[:10]),
                "action": "not run",
                "client": visible.client,
            }
        )
        return _text_result(text, is_error=True)

    def _unavailable(self, t: RegisteredTool) -> CallToolResult:
        up = self.registry.upstream(t.server)
        why = f" ({up.state}: {up.last_error})" if up is not None and up.last_error else ""
        return _text_result(
            f"MCP server {t.server!r} is unavailable{why}; tool {t.name!r} cannot run now. "
            "Other servers' tools are unaffected.",
            is_error=True,
        )

    async def _refused(
        self, t: RegisteredTool, decision: CallDecision, visible: Visibility
    ) -> CallToolResult:
        await self._audit(t, decision, "refused", visible)
        return _text_result(
            f"refused by the gateway: {decision.action} is denied ({decision.reason})", is_error=True
        )

    async def call_for_loop(
        self,
        exposed: str,
        arguments: dict[str, Any],
        *,
        confirm: Any = None,
        timeout_s: float | None = None,
        visibility: Visibility | None = None,
        parent: Any = None,
    ) -> CallToolResult:
        """One call from the gateway's own tool loop (:mod:`gateway.tool_loop`), through the same
        visibility, argument check, trust decision, audit log, routing and output cap as
        ``tools/call``. Never raises for a tool fault: an unknown tool or one ``visibility`` (the
        chat caller's; None: every tool) may not see (answered alike), an unavailable tool,
        arguments that do not match its input schema (the upstream never sees the call), a
        refusal, a ``confirm`` tier without a way to ask (``confirm`` None: the error names the
        exact action and how to pre-approve it), a declined confirmation, a timeout
        (``timeout_s``, else the server's ``call_timeout_s``) and an upstream failure all become
        ``is_error`` results.

        ``confirm`` is ``async (message: str) -> bool``, shown the confirmation text; it is asked
        once per call, and its answer covers only that call. ``parent``: the span (the turn's)
        the call's span is a child of, when tracing is on.
        """
        visible = visibility or EVERYTHING
        if exposed in META_NAMES and self.search.applies(visible):
            if exposed != CALL:
                return self.search.answer(exposed, arguments, visible)
            target = call_target(arguments)
            if isinstance(target, str):
                return _text_result(target, is_error=True)
            exposed, arguments = target
        t = self.registry.lookup(exposed)
        if t is None or not visible.allows(t.exposed):
            return _text_result(f"unknown tool {exposed!r}: not exposed by this gateway", is_error=True)
        if not t.available:
            return self._unavailable(t)
        decision = await self._screen(t, arguments, visible)
        if isinstance(decision, CallToolResult):
            return decision
        if decision.outcome == "refuse":
            return await self._refused(t, decision, visible)
        if decision.outcome == "ask":
            message = confirmation_message(decision)
            if confirm is None:
                await self._audit(t, decision, "needs_approval_no_confirmer", visible)
                return _text_result(
                    f"approval needed: {message} The gateway ran this call for a chat request and had "
                    f"no way to ask anyone. {preapproval_hint(t.server, t.name)}",
                    is_error=True,
                )
            approved = (await confirm(message)) is True
            await self._audit(t, decision, "approved" if approved else "declined", visible)
            if not approved:
                return _text_result(
                    f"not run: the user did not approve. The request was: {decision.action}.", is_error=True
                )
        else:
            await self._audit(t, decision, "allowed", visible)
        return await self.forward(t, arguments, timeout_s=timeout_s, parent=parent)

    async def _forward(
        self,
        ctx: ServerRequestContext[Any],
        params: CallToolRequestParams,
        t: RegisteredTool,
        args: dict[str, Any],
        state: dict[str, Any] | None,
        visible: Visibility,
    ) -> CallToolResult | InputRequiredResult:
        """Forward an approved call with a way back to the caller. A 2026-07-28 caller gets the
        upstream's ``InputRequiredResult`` (keys prefixed, the upstream's state sealed in the
        gateway's own, approval remembered for the next round only) and its retry's answers are
        passed upstream."""

        async def progress(p: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(p, total, message)

        channel = channel_for(ctx, t.server)
        user = subject_token(ctx.request)
        delegated: dict[str, Any] = {"subject_token": user} if user is not None else {}
        if not channel.modern:
            return await self.forward(t, args, progress=progress, channel=channel, **delegated)
        responses = None
        upstream_state = None
        if state is not None and state.get("u") is not None:
            upstream_state = state["u"] or None
            given = params.input_responses or {}
            responses = {k: v for k, v in given.items() if k != CONFIRM_KEY}
        result = await self.forward(
            t,
            args,
            progress=progress,
            channel=channel,
            pass_input_required=True,
            input_responses=responses,
            request_state=upstream_state,
            **delegated,
        )
        if not isinstance(result, InputRequiredResult):
            return result
        requests = dict(result.input_requests or {})
        if CONFIRM_KEY in requests:
            return _text_result(
                f"MCP server {t.server!r} asked its caller with the key {CONFIRM_KEY!r}, which the gateway "
                "keeps for its own approval question; the call was not completed.",
                is_error=True,
            )
        missing = missing_capabilities(requests, channel.capabilities or {})
        if missing:
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"MCP server {t.server!r} needs the client capabilities {sorted(missing)}, which this "
                "client did not declare",
                {"requiredCapabilities": missing},
            )
        bound = binding(params.name, params.arguments, visible.client)
        sealed = self.states.seal(bound, {"c": True, "u": result.request_state or ""})
        return InputRequiredResult(input_requests=requests or None, request_state=sealed)

    async def forward(
        self,
        t: RegisteredTool,
        args: dict[str, Any],
        *,
        progress: Any = None,
        timeout_s: float | None = None,
        channel: Channel | None = None,
        parent: Any = None,
        **rounds: Any,
    ) -> Any:
        """Route an already-approved call to (server, original name); cap and stamp the result.
        Upstream faults become ``is_error`` results naming the server. ``channel`` and
        ``rounds`` (``pass_input_required``, ``input_responses``, ``request_state``) go to
        :meth:`mcp_servers.upstream.Upstream.call_tool`; an ``InputRequiredResult`` is
        returned unchanged. With tracing on, the call is a CLIENT span (child of ``parent``,
        else of the current span), current while the upstream is called so that the ``mcp``
        SDK puts its ``traceparent`` in the request's ``params._meta``."""
        spec = self.registry.spec(t.server)
        started = time.perf_counter()
        tracer = self.tracer
        if tracer is None:
            result, final = await self._call_upstream(t, args, progress, timeout_s, channel, rounds)
        else:
            span = tracer.client_span(t.name, t.server, parent)
            try:
                with tracer.current(span):
                    result, final = await self._call_upstream(t, args, progress, timeout_s, channel, rounds)
            except BaseException:
                tracer.end(span, None, "_OTHER")
                raise
            tracer.end(span, result)
        if self.observer is not None:
            outcome = (
                "input_required"
                if isinstance(result, InputRequiredResult)
                else "error"
                if result.is_error
                else "ok"
            )
            self.observer.tool_call(t.server, t.name, outcome, time.perf_counter() - started)
        if final or spec is None or isinstance(result, InputRequiredResult):
            return result
        capped, info = cap_result(result, spec.output_cap_bytes, spec.output_cap_mode)
        if info["truncated"] and t.tool.output_schema is not None and not capped.is_error:
            capped = CallToolResult(content=capped.content, is_error=True, _meta=capped.meta)
        meta = dict(capped.meta or {})
        meta[SERVER_INFO_META_KEY] = {"name": self.name, "version": self.version}
        meta[ORIGIN_META_KEY] = {"server": t.server, "tool": t.name, "untrusted": True, **info}
        return capped.model_copy(update={"meta": meta})

    async def _call_upstream(
        self,
        t: RegisteredTool,
        args: dict[str, Any],
        progress: Any,
        timeout_s: float | None,
        channel: Channel | None,
        rounds: dict[str, Any],
    ) -> tuple[Any, bool]:
        """``(answer, final)``: the upstream's answer to one call (``final`` False: to be capped
        and stamped), or an ``is_error`` result naming the server when it is gone, unavailable,
        failed or refused (``final`` True)."""
        up = self.registry.upstream(t.server)
        if self.registry.spec(t.server) is None or up is None:
            return _text_result(f"MCP server {t.server!r} was removed", is_error=True), True
        try:
            result = await up.call_tool(
                t.name, args, timeout_s=timeout_s, progress_callback=progress, channel=channel, **rounds
            )
        except (UpstreamUnavailable, UpstreamCallFailed) as err:
            log.warning("mcp_call_failed", server=t.server, tool=t.name, error=str(err))
            return _text_result(str(err), is_error=True), True
        except MCPError as err:
            if err.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise  # the caller's own fault (it did not declare what the tool needs): its error as sent
            return _text_result(
                f"MCP server {t.server!r} refused tool {t.name!r}: {err}", is_error=True
            ), True
        return result, False

    # ------------------------------------------------------------------ confirmation

    async def _confirm(
        self,
        ctx: ServerRequestContext[Any],
        params: CallToolRequestParams,
        t: RegisteredTool,
        d: CallDecision,
        visible: Visibility,
        state: dict[str, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult | None:
        """None when the call is approved; otherwise the result to return (a question for a
        2026-07-28 client, a refusal, or the error for a client that cannot be asked). A
        2026-07-28 answer counts only with the state its question was sealed in, once: a
        replayed approval gets a fresh question."""
        message = confirmation_message(d)
        caps = ctx.session.client_capabilities
        can_elicit = caps is not None and caps.elicitation is not None
        if not can_elicit:
            await self._audit(t, d, "needs_approval_no_elicitation", visible)
            return _text_result(
                f"approval needed: {message} This client cannot be asked (it does not support MCP "
                f"elicitation). {preapproval_hint(t.server, t.name)}",
                is_error=True,
            )
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            responses = params.input_responses or {}
            if CONFIRM_KEY not in responses or not (state or {}).get("q"):
                request = ElicitRequest(
                    params=ElicitRequestFormParams(message=message, requested_schema=_CONFIRM_SCHEMA)
                )
                await self._audit(t, d, "asked", visible)
                sealed = self.states.seal(binding(params.name, params.arguments, visible.client), {"q": True})
                return InputRequiredResult(input_requests={CONFIRM_KEY: request}, request_state=sealed)
            answer = ElicitResult.model_validate(
                responses[CONFIRM_KEY]
                if isinstance(responses[CONFIRM_KEY], dict)
                else responses[CONFIRM_KEY].model_dump(by_alias=True)
            )
        else:
            try:
                answer = await ctx.session.elicit_form(
                    message, _CONFIRM_SCHEMA, related_request_id=ctx.request_id
                )
            except NoBackChannelError:
                await self._audit(t, d, "needs_approval_no_elicitation", visible)
                return _text_result(
                    f"approval needed: {message} This connection cannot carry a question. "
                    f"{preapproval_hint(t.server, t.name)}",
                    is_error=True,
                )
        # Only a real JSON true approves: "false", "no", 1 … are not a yes (the schema asks for a boolean).
        approved = answer.action == "accept" and (answer.content or {}).get("approve") is True
        await self._audit(t, d, "approved" if approved else f"declined ({answer.action})", visible)
        if approved:
            return None
        return _text_result(f"not run: the user did not approve. The request was: {d.action}.", is_error=True)

    async def _audit(self, t: RegisteredTool, d: CallDecision, outcome: str, visible: Visibility) -> None:
        entry = {
            "server": t.server,
            "tool": t.name,
            "exposed": t.exposed,
            "tier": d.tier,
            "outcome": outcome,
            "reason": d.reason,
            "action": d.action,
            "client": visible.client,
        }
        log.info("mcp_trust_decision", **entry)
        if self.observer is not None:
            self.observer.trust_decision(t.server, d.tier, outcome)
        await self._audit_entry(entry)

    async def _audit_entry(self, entry: dict[str, Any]) -> None:
        try:
            await self.registry.store.audit(entry)
        except Exception:
            log.exception("mcp_audit_write_failed", **entry)
