"""Structured logging: one JSON (or console) line per event, request id first.

Configured once by :func:`configure`, called from the CLI and the app factory.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
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


def configure(level: str = "info", json: bool = True) -> None:
    """Set up structlog (and the stdlib root logger it writes through) at ``level``.

    ``json`` True prints one JSON object per line; False a human console format."""
    lvl = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=lvl, force=True)
    renderer: Any = (
        structlog.processors.JSONRenderer(serializer=_orjson_dumps)
        if json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
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
