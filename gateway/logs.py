"""Structured logging: one JSON (or console) line per event, request id first.

Configured once by :func:`configure`, called from the CLI and the app factory.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog


def _request_id_first(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    rid = event_dict.pop("request_id", None)
    if rid is None:
        return event_dict
    return {"request_id": rid, **event_dict}


def _orjson_dumps(obj: Any, default: Any = None, **_: Any) -> str:
    """JSON text of a log event via orjson (several times faster than the stdlib encoder)."""
    return orjson.dumps(obj, default=default).decode()


_LEVELS = {"warn": "warning", "exception": "error"}


class _UtcStamp:
    """ISO-8601 UTC timestamps in the text of structlog's ``TimeStamper(fmt="iso", utc=True)``
    (``2026-11-30T11:05:22.374794Z``; no fraction when it is zero), with the date and time of
    day formatted once per second instead of once per line."""

    __slots__ = ("_prefix", "_sec")

    def __init__(self) -> None:
        self._sec = -1
        self._prefix = ""

    def __call__(self) -> str:
        sec, us = divmod(time.time_ns() // 1000, 1_000_000)
        if sec != self._sec:
            self._sec = sec
            self._prefix = datetime.fromtimestamp(sec, UTC).replace(tzinfo=None).isoformat()
        return f"{self._prefix}.{us:06d}Z" if us else self._prefix + "Z"


def _json_line(stamp: _UtcStamp) -> Any:
    """The whole JSON chain in one processor: level, ``ts``, formatted exception, request id
    first, orjson bytes. Same keys and order as the chain ``add_log_level``,
    ``TimeStamper(fmt="iso", utc=True, key="ts")``, ``format_exc_info``, request id first,
    ``JSONRenderer`` — at a fraction of the cost (one line per request is on the hot path)."""
    format_exc_info = structlog.processors.format_exc_info
    dumps = orjson.dumps

    def render(_: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> bytes:
        event_dict["level"] = _LEVELS.get(method_name, method_name)
        event_dict["ts"] = stamp()
        if "exc_info" in event_dict:
            event_dict = format_exc_info(_, method_name, event_dict)
        if "request_id" in event_dict:
            rid = event_dict.pop("request_id")
            if rid is not None:  # as _request_id_first: a None id is dropped
                event_dict = {"request_id": rid, **event_dict}
        return dumps(event_dict, default=repr)

    return render


class AccessLog:
    """The access log: one line per HTTP request, event ``request``, at level info.

    In JSON mode (the default, see :func:`configure`) the line is rendered here, with the same
    keys and order as a structlog ``log.info("request", request_id=..., ...)`` through the
    JSON chain, and written to stderr's buffer; the buffer is flushed once per event-loop
    iteration (at its end, with ``call_soon``), so the lines of the requests finished in one
    iteration go out in one write instead of one system call each, and none waits for a later
    request. Outside an event loop, and in console mode, each line is written at once (through
    structlog). Below level info nothing is written.
    """

    __slots__ = ("_file", "_flush_pending", "_log", "_stamp")

    def __init__(self) -> None:
        self._file: Any = None  # stderr's binary buffer in JSON mode, else None (structlog path)
        self._stamp = _UtcStamp()
        self._flush_pending = False
        self._log = structlog.get_logger("turnstile.server")

    def _configure(self, file: Any) -> None:
        self._file = file
        self._flush_pending = False

    def _flush(self) -> None:
        self._flush_pending = False
        file = self._file
        if file is not None:
            file.flush()

    def __call__(
        self,
        request_id: str,
        method: str,
        path: str,
        status: int,
        deployment: str | None,
        ms: float,
        client_request_id: str | None,
    ) -> None:
        """Log one request: ``ms`` is its duration in milliseconds (rounded to 1 µs here)."""
        file = self._file
        if file is None:
            if _LEVEL <= logging.INFO:
                self._log.info(
                    "request",
                    request_id=request_id,
                    method=method,
                    path=path,
                    status=status,
                    deployment=deployment,
                    ms=round(ms, 3),
                    client_request_id=client_request_id,
                )
            return
        line = {
            "request_id": request_id,
            "method": method,
            "path": path,
            "status": status,
            "deployment": deployment,
            "ms": round(ms, 3),
            "client_request_id": client_request_id,
            "event": "request",
            "level": "info",
            "ts": self._stamp(),
        }
        file.write(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
        if self._flush_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            file.flush()
            return
        self._flush_pending = True
        loop.call_soon(self._flush)


access_log = AccessLog()
"""The process's access log (configured by :func:`configure`)."""

_LEVEL = logging.INFO


def configure(level: str = "info", json: bool = True) -> None:
    """Set up structlog (and the stdlib root logger it writes through) at ``level``.

    ``json`` True prints one JSON object per line (bytes written straight to stderr); False a
    human console format. Nothing in Turnstile binds structlog context variables (request
    fields are passed with each event), so the chain does not merge them."""
    global _LEVEL
    lvl = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    _LEVEL = lvl
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=lvl, force=True)
    access_log._configure(None)
    if json and hasattr(sys.stderr, "buffer"):
        if lvl <= logging.INFO:
            access_log._configure(sys.stderr.buffer)
        structlog.configure(
            processors=[_json_line(_UtcStamp())],
            wrapper_class=structlog.make_filtering_bound_logger(lvl),
            logger_factory=structlog.BytesLoggerFactory(file=sys.stderr.buffer),
            cache_logger_on_first_use=True,
        )
        return
    renderer: Any = (
        structlog.processors.JSONRenderer(serializer=_orjson_dumps)
        if json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
            structlog.processors.format_exc_info,
            _request_id_first,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
