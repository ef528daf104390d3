"""Running the tool calls of one model message for the server-side tool loop.

Invariants 2 and 4 where the gateway itself executes calls:

* every call gets exactly one :class:`~gateway.schema.ToolResultMessage`: an exception, a
  timeout, a refusal, a declined or impossible confirmation and an unknown tool each become an
  ``is_error`` result; nothing a tool does is raised past :func:`execute_calls`;
* independent calls run concurrently (``asyncio.gather``), each bounded by ``timeout_s``;
* the results are put in the order the model issued the calls, whatever order they finished
  in (:func:`in_call_order`). The ordering function is a parameter so the fault-injection tests
  can swap in :func:`in_completion_order` and show the pairing guard catches it.

Progress is reported in completion order through ``on_done`` (streams show it to the client).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
import structlog

from gateway.schema import ImagePart, ResultPart, TextPart, ToolCallPart, ToolResultMessage

log = structlog.get_logger("turnstile.tool_exec")

CallRunner = Callable[[ToolCallPart], Awaitable[ToolResultMessage]]
"""Runs one call and returns its result (may raise; :func:`execute_calls` catches)."""

Finished = list[tuple[ToolCallPart, ToolResultMessage]]
"""(call, result) pairs in the order the calls finished."""

Ordering = Callable[[Sequence[ToolCallPart], Finished], list[ToolResultMessage]]
"""Arranges finished results for the transcript; the correct one is :func:`in_call_order`."""

OnDone = Callable[[ToolCallPart, ToolResultMessage], Awaitable[None] | None]


def error_result(call: ToolCallPart, text: str) -> ToolResultMessage:
    """An ``is_error`` result for ``call`` with ``text``."""
    return ToolResultMessage(
        tool_call_id=call.id, name=call.name, is_error=True, content=[TextPart(text=text)]
    )


def in_call_order(calls: Sequence[ToolCallPart], finished: Finished) -> list[ToolResultMessage]:
    """The results of ``finished`` placed in the order of ``calls`` (the model's issue order)."""
    by_id = {call.id: result for call, result in finished}
    return [by_id[c.id] for c in calls if c.id in by_id]


def in_completion_order(calls: Sequence[ToolCallPart], finished: Finished) -> list[ToolResultMessage]:
    """The WRONG ordering, kept for the fault-injection tests: results as they finished."""
    return [result for _, result in finished]


async def _run_one(call: ToolCallPart, runner: CallRunner, timeout_s: float) -> ToolResultMessage:
    try:
        async with asyncio.timeout(timeout_s):
            result = await runner(call)
    except TimeoutError:
        return error_result(
            call, f"tool {call.name!r} did not finish within {timeout_s:g} s; it was cancelled"
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a tool never throws past the gateway's boundary
        log.warning("tool_call_raised", call_id=call.id, tool=call.name, error=repr(exc))
        return error_result(call, f"tool {call.name!r} failed: {type(exc).__name__}: {exc}")
    if result.tool_call_id != call.id:
        result = result.model_copy(update={"tool_call_id": call.id})
    return result


async def execute_calls(
    calls: Sequence[ToolCallPart],
    runner: CallRunner,
    *,
    timeout_s: float,
    order: Ordering = in_call_order,
    on_done: OnDone | None = None,
) -> list[ToolResultMessage]:
    """Run ``calls`` concurrently through ``runner`` (each bounded by ``timeout_s`` seconds),
    calling ``on_done(call, result)`` as each finishes, and return the results arranged by
    ``order`` (default: call order). Never raises for a tool's fault."""
    finished: Finished = []

    async def one(call: ToolCallPart) -> None:
        result = await _run_one(call, runner, timeout_s)
        finished.append((call, result))
        if on_done is not None:
            maybe = on_done(call, result)
            if maybe is not None:
                await maybe

    await asyncio.gather(*(one(c) for c in calls))
    return order(calls, finished)


def result_parts(result: Any) -> tuple[list[ResultPart], bool]:
    """Internal-schema parts and the error flag of an MCP ``CallToolResult``: text blocks as
    text, images inline (base64 ``data`` + ``mimeType``), any other block (audio, resource
    links, embedded resources) as its JSON text; structured content as JSON text when there is
    no content block."""
    parts: list[ResultPart] = []
    for block in result.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(TextPart(text=block.text))
        elif kind == "image":
            parts.append(ImagePart(data=block.data, media_type=block.mime_type))
        else:
            parts.append(TextPart(text=orjson.dumps(block.model_dump(mode="json", by_alias=True)).decode()))
    if not parts and result.structured_content is not None:
        parts.append(TextPart(text=orjson.dumps(result.structured_content).decode()))
    if not parts:
        parts.append(TextPart(text="(the tool returned no content)"))
    return parts, bool(result.is_error)


def mcp_runner(
    endpoint: Any, *, confirm: Any = None, visibility: Any = None, parent: Any = None
) -> CallRunner:
    """A :data:`CallRunner` over the MCP registry through ``endpoint``
    (:meth:`mcp_servers.endpoint.McpEndpoint.call_for_loop`: visibility, argument check, trust
    tier, audit, output cap). ``confirm`` (``async (message) -> bool``) or None when nobody can
    be asked; ``visibility`` the caller's (:class:`mcp_servers.clients.Visibility`; None: every
    tool); ``parent`` the turn's span (tracing on) the calls' spans are children of."""

    async def run(call: ToolCallPart) -> ToolResultMessage:
        result = await endpoint.call_for_loop(
            call.name, dict(call.arguments), confirm=confirm, visibility=visibility, parent=parent
        )
        parts, is_error = result_parts(result)
        return ToolResultMessage(tool_call_id=call.id, name=call.name, content=parts, is_error=is_error)

    return run
