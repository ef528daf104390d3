"""Arguments of an MCP tool call checked against the tool's declared ``inputSchema`` before the
tool runs (invariant 3's principle: a malformed call is judged explicitly, never run).

A validator is compiled once per registered tool, when its server's tool list is read
(:func:`compile_schema`); a schema that is itself invalid is reported then and the tool is not
exposed. A call whose arguments do not match (a value outside an ``enum``, a missing required
key, a wrong type, an unexpected key under ``additionalProperties: false``...) becomes an
``is_error`` result naming each field and why, e.g. ``arguments.mode: 'hardest' is not one of
['soft', 'hard']`` — a tool execution error, not a protocol error, so a model can correct
itself (MCP 2025-11-25, "Error Handling": input validation errors are tool execution errors).
The upstream never sees such a call. The mcp SDK's low-level ``Server`` does not validate
arguments (its ``get_tool_input_schema`` hook only checks ``Mcp-Param-*`` headers), so both
of the gateway's paths, ``/mcp`` ``tools/call`` and the server-side tool loop, answer with this
same result.

``$ref`` resolves only within the schema itself (an empty ``referencing.Registry``: nothing is
fetched); a ``$ref`` that does not resolve makes the call an error result too. ``format`` is not
asserted (JSON Schema's default: an annotation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from jsonschema import SchemaError, ValidationError
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry
from referencing.exceptions import Unresolvable

MAX_SHOWN = 10
"""Errors named in one result at most (the rest are counted)."""
MAX_MESSAGE_CHARS = 300
"""One error's text is cut to this many characters (a huge wrong value is not echoed whole)."""


class InvalidSchema(Exception):
    """A tool's ``inputSchema`` is not a valid JSON Schema; the message names where and why."""


def compile_schema(schema: dict[str, Any]) -> Validator:
    """A validator for ``schema`` (the draft its ``$schema`` names; default the latest, 2020-12,
    which MCP 2025-11-25 specifies). Raises :class:`InvalidSchema` naming the offending
    keyword's path (``inputSchema.properties.mode.enum: ...``)."""
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        raise InvalidSchema(f"{_path('inputSchema', err.path)}: {_cut(err.message)}") from None
    return cls(schema, registry=Registry())


def _path(root: str, parts: Iterable[Any]) -> str:
    out = root
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _cut(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return f"{text[:MAX_MESSAGE_CHARS]}… ({len(text) - MAX_MESSAGE_CHARS} more characters)"


def argument_errors(validator: Validator, arguments: dict[str, Any]) -> list[str]:
    """Every mismatch of ``arguments`` against the compiled schema, as ``"arguments.<field>:
    <why>"`` texts in field order (empty: the arguments conform). Under ``anyOf``/``oneOf`` the
    most specific failing branch is named. A ``$ref`` that does not resolve is one error."""
    try:
        errors: Sequence[ValidationError] = list(validator.iter_errors(arguments))
    except Unresolvable as unresolvable:
        return [f"the tool's input schema has a $ref that does not resolve ({_cut(str(unresolvable))})"]
    out = []
    for error in errors:
        shown = best_match([error]) or error
        text = f"{_path('arguments', shown.absolute_path)}: {_cut(shown.message)}"
        if text not in out:
            out.append(text)
    return sorted(out)


def invalid_arguments_text(server: str, tool: str, errors: list[str]) -> str:
    """The text of the error result: the tool, each mismatch (at most :data:`MAX_SHOWN`), and
    that nothing ran."""
    shown = "; ".join(errors[:MAX_SHOWN])
    more = f"; and {len(errors) - MAX_SHOWN} more" if len(errors) > MAX_SHOWN else ""
    return (
        f'invalid arguments for tool "{tool}" of MCP server "{server}": {shown}{more}. '
        "The tool was not run; call it again with arguments that match its input schema."
    )
