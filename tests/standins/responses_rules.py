"""The rules the OpenAI Responses API enforces on ``POST /v1/responses``, as the upstream
stand-in checks them (:mod:`standins.upstream`), with OpenAI's own error shape and wording
(``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``):

* an unknown top-level parameter: ``Unknown parameter: 'x'.`` (code ``unknown_parameter``);
* ``input`` items: a ``function_call_output`` must name the ``call_id`` of a ``function_call``
  earlier in ``input`` ("No tool call found for function call output with call_id ..."), a
  ``custom_tool_call_output`` that of a ``custom_tool_call``;
  message roles and content part types are the documented ones; a ``reasoning`` item must carry
  ``encrypted_content`` when nothing is stored (``store: false``: "Items are not persisted when
  `store` is set to false"), and that content must have been issued by this stand-in for the
  same model ("The encrypted content ... could not be verified.", code
  ``invalid_encrypted_content``);
* function tools are strict unless ``strict: false`` (the API's default), and a strict schema
  must close every object (``additionalProperties: false``, every property required);
* ``max_output_tokens`` is at least 16; ``include`` values are the documented ones;
* a model without reasoning (gpt-4o, gpt-4.1, gpt-4, gpt-3.5) refuses
  ``include: ["reasoning.encrypted_content"]`` ("Encrypted content is not supported with this
  model.", ShishirPatil/gorilla#1148) and ``reasoning`` ("Unsupported parameter:
  'reasoning.effort' is not supported with this model.").

References: https://platform.openai.com/docs/api-reference/responses/create and
https://platform.openai.com/docs/guides/function-calling#strict-mode.
"""

from __future__ import annotations

import threading
from typing import Any

PARAMETERS = frozenset(
    {
        "access_programs",
        "background",
        "background_options",
        "client_metadata",
        "context_management",
        "conversation",
        "image",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "model",
        "moderation",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
    }
)
"""Top-level parameters of ``POST /v1/responses`` (API reference, December 2025; the ``openai``
SDK 3.60 ``ResponseCreateParams`` for ``prompt_cache_options``, ``access_programs``, ``image``,
``moderation``, ``background_options`` and ``context_management``), and ``client_metadata``, which
Codex CLI 0.171 sends to every Responses provider (tests/fixtures/e2e/) though the public
reference does not list it."""

INCLUDE = frozenset(
    {
        "code_interpreter_call.outputs",
        "computer_call_output.output.image_url",
        "file_search_call.results",
        "message.input_image.image_url",
        "message.output_text.logprobs",
        "reasoning.encrypted_content",
        "web_search_call.action.sources",
    }
)
USER_PARTS = frozenset({"input_text", "input_image", "input_file"})
ASSISTANT_PARTS = frozenset({"output_text", "refusal"})
ROLES = frozenset({"user", "assistant", "system", "developer"})


def error(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error body."""
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


class Issued:
    """``encrypted_content`` values this stand-in sent, by model (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_model: dict[str, set[str]] = {}

    def note(self, model: str, body: bytes) -> None:
        """Record every ``encrypted_content`` string in an answer body (JSON or SSE)."""
        import json
        import re

        found = re.findall(rb'"encrypted_content"\s*:\s*("(?:[^"\\]|\\.)*")', body)
        with self._lock:
            seen = self._by_model.setdefault(model, set())
            for raw in found:
                seen.add(json.loads(raw))

    def issued(self, model: str, value: str) -> bool:
        """Whether ``value`` was sent in an answer to a request for ``model``."""
        with self._lock:
            return value in self._by_model.get(model, set())

    def clear(self) -> None:
        with self._lock:
            self._by_model.clear()


def _strict_violation(schema: Any, path: tuple[str, ...] = ()) -> str | None:
    """OpenAI's complaint about a strict schema that leaves an object open, else None."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return f"In context={path}, 'additionalProperties' is required to be supplied and to be false."
        if sorted(schema.get("required") or []) != sorted(props):
            return (
                f"In context={path}, 'required' is required to be supplied and to be an array including "
                "every key in properties."
            )
        for name, sub in props.items():
            bad = _strict_violation(sub, (*path, "properties", name))
            if bad:
                return bad
    if isinstance(schema.get("items"), dict):
        return _strict_violation(schema["items"], (*path, "items"))
    return None


def _tools(tools: Any) -> dict[str, Any] | None:
    if not isinstance(tools, list):
        return error("Invalid type for 'tools': expected an array.", "tools", "invalid_type")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return None  # hosted tools are not the stand-in's business
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            return error(
                f"Missing required parameter: 'tools[{i}].name'.",
                f"tools[{i}].name",
                "missing_required_parameter",
            )
        if tool.get("strict", True) is not False:
            bad = _strict_violation(tool.get("parameters") or {"type": "object"})
            if bad:
                return error(
                    f"Invalid schema for function '{tool['name']}': {bad}",
                    f"tools[{i}].parameters",
                    "invalid_function_parameters",
                )
    return None


def _message(item: dict[str, Any], i: int) -> dict[str, Any] | None:
    role = item.get("role")
    if role not in ROLES:
        return error(
            f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.",
            f"input[{i}].role",
            "invalid_value",
        )
    content = item.get("content")
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return error(f"Invalid type for 'input[{i}].content'.", f"input[{i}].content", "invalid_type")
    allowed = ASSISTANT_PARTS if role == "assistant" else USER_PARTS
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            supported = ", ".join(f"'{k}'" for k in sorted(allowed))
            return error(
                f"Invalid value: '{kind}'. Supported values are: {supported}.",
                f"input[{i}].content[{j}].type",
                "invalid_value",
            )
    return None


def _input(body: dict[str, Any], model: str, issued: Issued) -> dict[str, Any] | None:
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return error("Missing required parameter: 'input'.", "input", "missing_required_parameter")
    calls: set[str] = set()
    custom_calls: set[str] = set()
    stored = body.get("store", True) is not False
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return error(f"Invalid type for 'input[{i}]': expected an object.", f"input[{i}]", "invalid_type")
        kind = item.get("type", "message")
        if kind == "message":
            bad = _message(item, i)
            if bad:
                return bad
        elif kind == "function_call":
            for key in ("call_id", "name", "arguments"):
                if not isinstance(item.get(key), str):
                    return error(
                        f"Missing required parameter: 'input[{i}].{key}'.",
                        f"input[{i}].{key}",
                        "missing_required_parameter",
                    )
            calls.add(item["call_id"])
        elif kind == "custom_tool_call":
            for key in ("call_id", "name", "input"):
                if not isinstance(item.get(key), str):
                    return error(
                        f"Missing required parameter: 'input[{i}].{key}'.",
                        f"input[{i}].{key}",
                        "missing_required_parameter",
                    )
            custom_calls.add(item["call_id"])
        elif kind in ("function_call_output", "custom_tool_call_output"):
            custom = kind == "custom_tool_call_output"
            if item.get("call_id") not in (custom_calls if custom else calls):
                what = "custom tool call" if custom else "function call"
                return error(
                    f"No tool call found for {what} output with call_id {item.get('call_id')}.",
                    "input",
                    None,
                )
            if not isinstance(item.get("output"), str | list):
                return error(
                    f"Missing required parameter: 'input[{i}].output'.",
                    f"input[{i}].output",
                    "missing_required_parameter",
                )
        elif kind == "reasoning":
            content = item.get("encrypted_content")
            if not isinstance(item.get("summary"), list):
                return error(
                    f"Missing required parameter: 'input[{i}].summary'.",
                    f"input[{i}].summary",
                    "missing_required_parameter",
                )
            if content is None:
                if not stored:
                    return error(
                        f"Item with id '{item.get('id')}' not found. Items are not persisted when "
                        "`store` is set to false. Try again with `store` set to true, or remove this item "
                        "from your input.",
                        "input",
                        None,
                    )
            elif not isinstance(content, str) or not issued.issued(model, content):
                return error(
                    f"The encrypted content for item input[{i}] could not be verified.",
                    f"input[{i}].encrypted_content",
                    "invalid_encrypted_content",
                )
        else:
            return error(f"Invalid value: '{kind}'.", f"input[{i}].type", "invalid_value")
    return None


NON_REASONING = ("gpt-4o", "gpt-4.1", "gpt-4-", "gpt-3.5")
"""Model id prefixes of models without reasoning."""


def _reasoning_params(body: dict[str, Any], model: str) -> dict[str, Any] | None:
    if not model.startswith(NON_REASONING):
        return None
    if "reasoning.encrypted_content" in (body.get("include") or []):
        return error("Encrypted content is not supported with this model.", "include", None)
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        return error(
            "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
            "reasoning.effort",
            "unsupported_parameter",
        )
    return None


def violation(body: dict[str, Any], issued: Issued) -> dict[str, Any] | None:
    """OpenAI's 400 error body for the first rule ``body`` breaks, or None when it keeps them."""
    for key in body:
        if key not in PARAMETERS:
            return error(f"Unknown parameter: '{key}'.", key, "unknown_parameter")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return error("Missing required parameter: 'model'.", "model", "missing_required_parameter")
    mot = body.get("max_output_tokens")
    if mot is not None and (not isinstance(mot, int) or mot < 16):
        return error(
            "Invalid 'max_output_tokens': integer below minimum value. "
            f"Expected a value >= 16, but got {mot} instead.",
            "max_output_tokens",
            "integer_below_min_value",
        )
    for value in body.get("include") or []:
        if value not in INCLUDE:
            return error(f"Invalid value: '{value}'.", "include", "invalid_value")
    bad = _reasoning_params(body, model)
    if bad:
        return bad
    if "tools" in body:
        bad = _tools(body["tools"])
        if bad:
            return bad
    return _input(body, model, issued)
