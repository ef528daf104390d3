"""Anthropic Messages request options -> schema dicts: ``temperature``, ``tool_choice``,
``thinking`` with ``output_config.effort``, and the response format (``output_config.format``
or the beta ``output_format``). Part of :mod:`gateway.edges.anthropic_messages_parse`; every
function raises :class:`gateway.errors.InvalidRequest` naming the field."""

from __future__ import annotations

from gateway.edges._common import JSONObj, check, join, opt, req, unsupported
from gateway.edges.anthropic_messages_blocks import FORMAT_KEYS, check_thinking, check_tool_choice, only_keys
from gateway.errors import InvalidRequest

_EFFORTS = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
    "max": "high",
}

_CHOICE_MODES = {"auto": "auto", "any": "required", "tool": "tool", "none": "none"}


def temperature(data: JSONObj) -> float | None:
    """``temperature``: Anthropic takes 0–1 (docs.anthropic.com, Messages API), not OpenAI's 0–2."""
    value = opt(data, "temperature", float, "")
    if value is not None and not 0.0 <= value <= 1.0:
        raise InvalidRequest(f"temperature must be between 0 and 1, got {value:g}", param="temperature")
    return value


def tool_choice(raw: JSONObj) -> JSONObj:
    """``tool_choice`` -> a tool-choice dict (``mode``, ``name``, ``parallel``)."""
    path = "tool_choice"
    ctype = req(raw, "type", str, path)
    if ctype not in _CHOICE_MODES:
        raise InvalidRequest(
            f"{path}.type: expected auto, any, tool or none, got {ctype!r}", param=join(path, "type")
        )
    check_tool_choice(raw, ctype)
    disable = opt(raw, "disable_parallel_tool_use", bool, path)
    return {
        "mode": _CHOICE_MODES[ctype],
        "name": req(raw, "name", str, path) if ctype == "tool" else None,
        "parallel": None if disable is None else not disable,
    }


def thinking(data: JSONObj, out_cfg: JSONObj, serving: list[str]) -> JSONObj | None:
    """The thinking config dict of ``thinking`` and ``output_config.effort``; the paths of
    ``thinking`` keys only an Anthropic upstream gets go to ``serving``
    (:func:`gateway.edges.anthropic_messages_blocks.check_thinking`)."""
    cfg: JSONObj | None = None
    raw = opt(data, "thinking", dict, "")
    if raw is not None:
        ttype = req(raw, "type", str, "thinking")
        check_thinking(raw, ttype, serving)
        if ttype == "enabled":
            cfg = {"enabled": True, "budget_tokens": req(raw, "budget_tokens", int, "thinking")}
        elif ttype == "disabled":
            cfg = {"enabled": False}
        elif ttype == "adaptive" or ttype == "between_tools":  # sent verbatim to Claude (_native)
            cfg = {"enabled": True}
        else:
            raise InvalidRequest(
                f"thinking.type: expected enabled, disabled, adaptive or between_tools, got {ttype!r}",
                param="thinking.type",
            )
    effort = opt(out_cfg, "effort", str, "output_config")
    if effort is not None:
        if effort not in _EFFORTS:
            raise InvalidRequest(
                f"output_config.effort: expected low, medium, high, xhigh or max, got {effort!r}",
                param="output_config.effort",
            )
        cfg = cfg or {}
        cfg["effort"] = _EFFORTS[effort]
    return cfg


def response_format(data: JSONObj, out_cfg: JSONObj | None) -> JSONObj | None:
    """``output_config.format`` (GA) or the beta top-level ``output_format`` (structured
    outputs beta ``structured-outputs-2025-11-13``; the SDK calls it deprecated) -> a
    response-format dict; both at once is refused, as the SDK refuses it ("Both output_format
    and output_config.format were provided")."""
    fmt = opt(out_cfg, "format", dict, "output_config") if out_cfg else None
    path = "output_config.format"
    beta = data.get("output_format")
    if beta is not None:
        if fmt is not None:
            raise InvalidRequest(
                "output_format: give either output_format or output_config.format, not both "
                "(output_format is the deprecated beta form)",
                param="output_format",
            )
        fmt, path = check(beta, dict, "output_format"), "output_format"
    if fmt is None:
        return None
    ftype = req(fmt, "type", str, path)
    if not fmt.keys() <= FORMAT_KEYS:
        only_keys(fmt, FORMAT_KEYS, path, "output format")
    if ftype != "json_schema":
        raise unsupported(join(path, "type"), f"output format {ftype!r}")
    # Anthropic's structured outputs are always strict (constrained decoding): an OpenAI upstream
    # is sent strict: true where the schema allows (ResponseFormat.dialect_strict).
    return {"type": "json_schema", "schema": req(fmt, "schema", dict, path), "dialect_strict": True}
