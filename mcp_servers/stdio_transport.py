"""The stdio transport to an upstream MCP server (replaces the ``mcp`` SDK's ``stdio_client``).

Two things the SDK's transport does not do (mcp 2.3, checked by running it):

* **No descendant outlives the gateway.** The SDK starts the server in a session of its own and
  kills that process group only when the server does not exit within 2 s of its stdin closing,
  so a server that exits promptly leaves its children running; a child that called ``setsid()``
  is never reached; a ``kill -9`` of the gateway leaves everything. Here, on Linux, the server is
  started through :mod:`mcp_servers._launcher` (a child subreaper with a parent-death signal that
  ends every descendant when the server exits, when asked to stop, or when the gateway dies). On
  other POSIX systems the server runs directly in its own session and the whole *process group*
  is ended after the server exits (a descendant that starts a session of its own, and every
  descendant after a ``kill -9`` of the gateway, escape there). Why a subreaper and not a cgroup:
  it needs no privilege and no delegated cgroup tree (rarely writable inside containers), and
  every orphan of the tree is reparented to it by the kernel; what escapes it is a process that
  kills the launcher itself with SIGKILL first.
* **A hostile server cannot wedge the connection.** The SDK's reader keeps an unbounded line
  buffer (a 100 MB line is re-copied on every 64 KiB read: minutes of work while the connection
  shows ready) and, on bytes that are not UTF-8, stops delivering for good while still draining
  the pipe. Here stdout is read as bytes by :class:`mcp_servers.stdio_framing.LineFramer`:

  - a line over ``max_message_bytes`` is refused while it is read (memory stays bounded); the
    request it answered fails at once with an error naming the size and the limit (its id read
    from the line's edges, or the only request in flight); when it cannot be attributed while
    requests are in flight, the connection is judged broken;
  - a line that is not a JSON-RPC message (junk) is counted and dropped; a message glued after
    junk on one line is recovered; more than ``max_junk_lines`` junk lines in a row and the
    connection is judged broken;
  - the end of stdout outside a shutdown is reported at once, not at the next health check.

  "Judged broken" calls ``on_lost(reason)``: the upstream restarts the connection.
* **A server's stderr cannot flood or forge the gateway's log.** The SDK passes the gateway's
  own stderr to the server. Here stderr is a pipe (the launcher passes it on to the server and
  every descendant) read by :func:`mcp_servers.stdio_stderr.drain_stderr`: one log event per
  line, each line cut, a bounded rate of lines and bytes per server, the rest counted and
  dropped, the pipe always drained.

Shutdown (the MCP spec's order, every wait bounded): flush and close stdin; wait up to
``EXIT_WAIT_S`` for the server (or launcher) to exit; SIGTERM its process group, wait up to
``GROUP_GRACE_S``; SIGKILL the group; then end whatever is left of the group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
import structlog
from anyio.abc import Process
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from mcp_servers.stdio_framing import (
    LineFramer,
    Oversize,
    oversize_is_from_server,
    oversize_request_id,
    parse_line,
)
from mcp_servers.stdio_stderr import StderrLimits, StderrLog, drain_stderr

log = structlog.get_logger("turnstile.mcp.stdio")

LAUNCHER = Path(__file__).with_name("_launcher.py")
LAUNCHER_GRACE_S = 1.0
"""The launcher's wait between SIGTERM and SIGKILL of the server's descendants (seconds)."""
EXIT_WAIT_S = 2.0
"""After stdin closes: the server's time to exit on its own (seconds; the SDK's value)."""
GROUP_GRACE_S = LAUNCHER_GRACE_S + 2.0
"""After SIGTERM to the group: its time to go before SIGKILL; longer than the launcher's own
grace, so the launcher can SIGKILL descendants outside the group before it is killed itself."""
_FLUSH_S = 0.5
_REAP_S = 2.0
_POLL_S = 0.01
_READ_BYTES = 64 * 1024
WIRE_FAULT_KEY = "turnstile_wire_fault"
"""Key of ``error.data`` in the error answer the transport makes for a refused message."""


def uses_launcher() -> bool:
    """Whether stdio servers start through :mod:`mcp_servers._launcher` (Linux only)."""
    return sys.platform.startswith("linux")


def launch_argv(command: str, args: list[str]) -> list[str]:
    """The command line that starts ``command args...``: through the launcher on Linux (the
    gateway's own Python, isolated and without ``site``), else the command itself."""
    if not uses_launcher():
        return [command, *args]
    own = [sys.executable, "-I", "-S", str(LAUNCHER), "--parent", str(os.getpid())]
    return [*own, "--grace", str(LAUNCHER_GRACE_S), "--", command, *args]


@dataclass
class WireStats:
    """What one server's stdout did wrong, over every connection to it (for ``status()``)."""

    junk_lines: int = 0
    oversize_messages: int = 0
    last_fault: str | None = None


def wire_fault(err: Any) -> dict[str, Any] | None:
    """The transport's description of why a request failed (``{"fault": "oversize", "bytes",
    "limit"}``) when ``err`` (an ``MCPError``) is the error this transport made up, else None."""
    data = getattr(err, "data", None)
    fault = data.get(WIRE_FAULT_KEY) if isinstance(data, dict) else None
    return fault if isinstance(fault, dict) else None


@asynccontextmanager
async def stdio_transport(
    params: StdioServerParameters,
    *,
    server_id: str,
    max_message_bytes: int,
    max_junk_lines: int,
    stats: WireStats,
    on_lost: Callable[[str], None],
    stderr_limits: StderrLimits,
) -> AsyncIterator[Any]:
    """Start ``params`` (the SDK's safe environment plus ``params.env``; stderr a pipe into the
    gateway's log within ``stderr_limits``) and yield ``(read stream, write stream)`` for
    ``mcp.Client``; stop it on exit (see the module docstring). ``max_message_bytes``: the
    largest line accepted from stdout (bytes); ``max_junk_lines``: junk lines in a row
    tolerated; ``on_lost(reason)`` is called once when the connection is judged broken or stdout
    ends outside a shutdown.

    Raises ``OSError`` when the process cannot be started.
    """
    env = get_default_environment() | (params.env or {})
    process = await anyio.open_process(
        launch_argv(params.command, params.args),
        env=env,
        cwd=params.cwd,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    stderr_done = anyio.Event()
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    pending: set[types.RequestId] = set()
    writer_done = anyio.Event()
    state = {"shutting_down": False, "lost": False}

    def lost(reason: str) -> None:
        if state["lost"] or state["shutting_down"]:
            return
        state["lost"] = True
        stats.last_fault = reason
        log.warning("mcp_stdio_connection_broken", server=server_id, reason=reason)
        on_lost(reason)
        read_send.close()  # requests in flight fail at once (CONNECTION_CLOSED), not at their timeout

    def judge(frame: bytes | Oversize, junk_run: list[int]) -> SessionMessage | None:
        if isinstance(frame, Oversize):
            return _refuse(frame)
        message, junk = parse_line(frame)
        if junk is not None:
            stats.junk_lines += 1
            # the content goes to the operator's log only: /health is read by anyone
            stats.last_fault = f"a line of {junk.size:,} bytes on stdout that is not JSON-RPC"
            if junk_run[0] == 0:
                log.warning("mcp_stdio_junk", server=server_id, bytes=junk.size, line=junk.preview)
            junk_run[0] = 0 if message is not None else junk_run[0] + 1
            if junk_run[0] > max_junk_lines:
                log.warning("mcp_stdio_junk", server=server_id, bytes=junk.size, line=junk.preview)
                lost(
                    f"it wrote {junk_run[0]} lines in a row on stdout that are not JSON-RPC messages "
                    f"(max_junk_lines {max_junk_lines})"
                )
                return None
        else:
            junk_run[0] = 0
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
            pending.discard(message.id)
        return SessionMessage(message) if message is not None else None

    def _refuse(frame: Oversize) -> SessionMessage | None:
        stats.oversize_messages += 1
        why = (
            f"answered with a message of {frame.size:,} bytes, over the limit of {max_message_bytes:,} "
            f"(max_message_bytes); it was refused unread"
        )
        stats.last_fault = why
        if oversize_is_from_server(frame):  # not an answer: no call of ours is waiting for it
            log.warning("mcp_stdio_oversize", server=server_id, bytes=frame.size, request=None, answer=False)
            return None
        request = oversize_request_id(frame)
        if request is None and len(pending) == 1:
            request = next(iter(pending))
        log.warning("mcp_stdio_oversize", server=server_id, bytes=frame.size, request=request, answer=True)
        if request is not None and request in pending:
            pending.discard(request)
            fault = {"fault": "oversize", "bytes": frame.size, "limit": max_message_bytes}
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=why, data={WIRE_FAULT_KEY: fault})
            return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request, error=error))
        if request is None and pending:
            lost(
                f"it answered with a message of {frame.size:,} bytes (over max_message_bytes) whose "
                f"request could not be told among the {len(pending)} in flight"
            )
        return None

    async def reader() -> None:
        assert process.stdout is not None
        framer = LineFramer(max_message_bytes)
        junk_run = [0]
        delivering = True
        try:
            while True:
                try:
                    chunk = await process.stdout.receive(_READ_BYTES)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    break
                if not delivering or state["lost"]:
                    continue  # drain: a server blocked writing stdout could not read its stdin
                for frame in framer.feed(chunk):
                    message = judge(frame, junk_run)
                    if state["lost"]:
                        break  # judged broken: nothing more is delivered on this connection
                    if message is None:
                        continue
                    try:
                        await read_send.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        delivering = False  # the session is gone
                        break
        finally:
            read_send.close()
            lost("the server closed its standard output (it exited)")

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for session_message in write_recv:
                    message = session_message.message
                    if isinstance(message, types.JSONRPCRequest):
                        pending.add(message.id)
                    elif isinstance(message, types.JSONRPCNotification) and message.method == (
                        "notifications/cancelled"
                    ):
                        pending.discard((message.params or {}).get("requestId"))  # type: ignore[arg-type]
                    data = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            read_send.close()  # the session sees the connection end instead of a request hanging
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        assert process.stderr is not None
        tg.start_soon(drain_stderr, process.stderr, StderrLog(server_id, stderr_limits), stderr_done)
        try:
            yield read_recv, write_send
        finally:
            state["shutting_down"] = True
            with anyio.CancelScope(shield=True):
                read_recv.close()  # unblocks a reader waiting to deliver: it drains from now on
                write_send.close()
                with anyio.move_on_after(_FLUSH_S):
                    await writer_done.wait()
                await stop_process(process, stderr_done)
            tg.cancel_scope.cancel()  # a survivor holding a pipe must not keep a reader waiting
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def stop_process(process: Process, stderr_done: anyio.Event | None = None) -> None:
    """Close stdin, wait up to ``EXIT_WAIT_S`` for the process to exit, SIGTERM its group (its
    pid is the group id: it was started in a session of its own), wait up to
    ``GROUP_GRACE_S``, SIGKILL the group, then end what is left of the group; then wait up to
    ``_FLUSH_S`` for ``stderr_done`` (the last lines on stderr read) before closing the pipes.
    Bounded."""
    assert process.stdin is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    group = process.pid
    if not await _exited(process, EXIT_WAIT_S):
        _signal_group(group, signal.SIGTERM)
        if not await _exited(process, GROUP_GRACE_S):
            _signal_group(group, signal.SIGKILL)
            if not await _exited(process, _REAP_S):
                log.warning("mcp_stdio_unkillable", pid=process.pid)
    await end_group(group)
    if stderr_done is not None:
        with anyio.move_on_after(_FLUSH_S):
            await stderr_done.wait()
    if process.stdout is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()
    _close_transport(process)


def _close_transport(process: Process) -> None:
    """Close asyncio's subprocess transport now (it would warn when collected after the loop
    closed). Not ``process.aclose()``: it waits for the pipes too. Nothing public reaches the
    transport; the same attribute walk as mcp 2.3's ``stdio._close_subprocess_transport``
    (duck-typed: uvloop's transport is not an ``asyncio.SubprocessTransport``)."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError):  # Python <= 3.12 may re-kill a setuid child
            close()


async def end_group(group: int, grace_s: float = LAUNCHER_GRACE_S) -> None:
    """SIGTERM the process group ``group`` (when any member is left), wait up to ``grace_s``
    for it to go, then SIGKILL it."""
    if not _signal_group(group, signal.SIGTERM):
        return
    with anyio.move_on_after(grace_s):
        while _signal_group(group, 0):
            await anyio.sleep(_POLL_S)
        return
    _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when it has no member left."""
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member we may not signal (or a zombie): still there
    return True


async def _exited(process: Process, timeout_s: float) -> bool:
    """Whether the process exited within ``timeout_s``, by polling its return code (``wait()``
    also waits for the pipes to close, which a surviving descendant may hold open)."""
    with anyio.move_on_after(timeout_s):
        while process.returncode is None:
            await anyio.sleep(_POLL_S)
        return True
    return False
