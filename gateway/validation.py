"""Checks of a parsed request that hold whatever the dialect: tools and tool choice agree,
sampling values are in range, inline images are real base64.

The edges check each field's type and shape; these checks need the whole request. They run
before the guards and before any upstream call, and each failure is an
:class:`~gateway.errors.InvalidRequest` naming the field (``param``), so the client gets a
400 in its own dialect rather than a provider's error or, worse, a silently ignored option.
"""

from __future__ import annotations

import base64
import binascii

from gateway.errors import InvalidRequest
from gateway.schema import ImagePart, Request, ToolResultMessage, UserMessage

TEMPERATURE_RANGE = (0.0, 2.0)
"""OpenAI's range; Anthropic's is 0–1 and its API says so itself for values above 1."""


def _check_image(part: ImagePart, where: str) -> None:
    if part.data is None:
        if not part.url and part.file_id is None:
            raise InvalidRequest(f"{where}: image has neither data nor url", param=where)
        return
    try:
        base64.b64decode(part.data, validate=True)
    except (binascii.Error, ValueError) as err:
        raise InvalidRequest(f"{where}: image data is not valid base64 ({err})", param=where) from err


def validate_request(request: Request) -> None:
    """Raise :class:`InvalidRequest` for the first inconsistency found in ``request``.

    Checked: tool names unique; ``tool_choice`` ``required``/``tool`` only with tools, and a
    named tool must be offered; ``temperature`` in 0–2, ``top_p`` in 0–1, ``top_k`` >= 1,
    ``max_output_tokens`` >= 1 (tokens); inline image data is valid base64.
    """
    names: dict[str, int] = {}
    for i, tool in enumerate(request.tools):
        if tool.name in names:
            raise InvalidRequest(
                f"tools[{i}]: tool name {tool.name!r} is already used by tools[{names[tool.name]}]",
                param=f"tools[{i}]",
            )
        names[tool.name] = i
    choice = request.tool_choice
    if choice is not None:
        if choice.mode in ("required", "tool") and not request.tools:
            raise InvalidRequest(
                "tool_choice forces a tool call (OpenAI 'required' or a named tool, Anthropic 'any' or "
                "'tool', Gemini 'ANY'), which needs at least one tool, and the request offers none",
                param="tool_choice",
            )
        if choice.mode == "tool" and choice.name not in names:
            raise InvalidRequest(
                f"tool_choice names tool {choice.name!r}, which is not among the offered tools "
                f"({', '.join(names) or 'none'})",
                param="tool_choice",
            )
        if choice.allowed is not None:
            unknown = [n for n in choice.allowed if n not in names]
            if unknown or not choice.allowed:
                raise InvalidRequest(
                    f"tool_choice.allowed_tools names {', '.join(map(repr, unknown)) or 'no tool'}, "
                    f"which is not among the offered tools ({', '.join(names) or 'none'})",
                    param="tool_choice.allowed_tools",
                )
    lo, hi = TEMPERATURE_RANGE
    if request.temperature is not None and not lo <= request.temperature <= hi:
        raise InvalidRequest(
            f"temperature must be between {lo:g} and {hi:g}, got {request.temperature:g}", param="temperature"
        )
    if request.top_p is not None and not 0.0 <= request.top_p <= 1.0:
        raise InvalidRequest(f"top_p must be between 0 and 1, got {request.top_p:g}", param="top_p")
    if request.top_k is not None and request.top_k < 1:
        raise InvalidRequest(f"top_k must be at least 1, got {request.top_k}", param="top_k")
    if request.max_output_tokens is not None and request.max_output_tokens < 1:
        raise InvalidRequest(
            f"the output token limit must be at least 1, got {request.max_output_tokens}", param="max_tokens"
        )
    for i, msg in enumerate(request.messages):
        if type(msg) is UserMessage or type(msg) is ToolResultMessage:
            for j, part in enumerate(msg.content):
                if type(part) is ImagePart:
                    _check_image(part, f"{msg.src or f'messages[{i}]'}.content[{j}]")
