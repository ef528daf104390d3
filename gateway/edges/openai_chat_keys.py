"""The keys of each object of an OpenAI Chat Completions request that
:mod:`gateway.edges.openai_chat_parse` knows (``openai.types.chat`` param types and the
tolerated extensions of that module's docstring), and how the ones the schema has no place for
are classed (issue 14, ``docs/fidelity.md`` "Nested fields")."""

from __future__ import annotations

__all__ = [
    "AUDIO_KEYS",
    "BREAKPOINT",
    "CACHE",
    "CALL_FUNCTION_KEYS",
    "CALL_KEYS",
    "CHOICE_FUNCTION_KEYS",
    "CHOICE_KEYS",
    "FILE_KEYS",
    "FORMAT_KEYS",
    "FUNCTION_KEYS",
    "IMAGE_URL_KEYS",
    "JSON_SCHEMA_KEYS",
    "LEGACY_FUNCTION_KEYS",
    "MESSAGE_KEYS",
    "MESSAGE_SERVING",
    "PART_KEYS",
    "STREAM_OPTIONS_KEYS",
    "TOOL_KEYS",
    "TOOL_SERVING",
]

CACHE = "cache_control"  # tolerated on messages, parts and tools (module docstring)
BREAKPOINT = "prompt_cache_breakpoint"
PART_KEYS = {
    "text": frozenset({"type", "text", CACHE, BREAKPOINT}),
    "refusal": frozenset({"type", "refusal", CACHE}),
    "image_url": frozenset({"type", "image_url", CACHE, BREAKPOINT}),
    "file": frozenset({"type", "file", CACHE, BREAKPOINT}),
    "input_audio": frozenset({"type", "input_audio", CACHE, BREAKPOINT}),
    "tool_use": frozenset({"type", "id", "name", "input", CACHE}),
    "thinking": frozenset({"type", "thinking", "signature", CACHE}),
    "redacted_thinking": frozenset({"type", "data", CACHE}),
}
"""Keys of each content part type: the SDK's (``ChatCompletionContentPart*Param``) and the
tolerated extensions; any other is refused by name (:mod:`gateway.edges._keys`)."""
IMAGE_URL_KEYS = frozenset({"url", "detail"})
FILE_KEYS = frozenset({"file_data", "file_id", "filename"})
AUDIO_KEYS = frozenset({"data", "format"})
MESSAGE_KEYS = {
    "user": frozenset({"role", "content", "name", CACHE}),
    "system": frozenset({"role", "content", "name", CACHE}),
    "developer": frozenset({"role", "content", "name", CACHE}),
    "tool": frozenset({"role", "content", "tool_call_id", "name", CACHE}),
    "function": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {
            "role",
            "content",
            "name",
            "refusal",
            "tool_calls",
            "function_call",
            "audio",
            "reasoning_content",
            "reasoning",
            "reasoning_details",
            "thinking_blocks",
            CACHE,
        }
    ),
}
"""Keys of a message of each role (``ChatCompletion*MessageParam`` and the tolerated
extensions of the module docstring)."""
TOOL_KEYS = frozenset({"type", "function", CACHE})
TOOL_SERVING = frozenset({"defer_loading", "eager_input_streaming"})
"""Keys of a tool entry besides the SDK's that only steer serving (OpenRouter's Anthropic
forms: tool search, input streaming): carried to an OpenAI Chat upstream on that tool and
dropped and named toward another wire API; any other key of a tool entry is carried the same
way and refused toward another wire API (``NativeFields.fields["tool_fields"]``)."""
FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict", CACHE})
LEGACY_FUNCTION_KEYS = frozenset({"name", "description", "parameters"})
CALL_KEYS = frozenset({"id", "type", "function", "custom", "index", CACHE})
"""``index``: the stream position a client's SDK leaves on a call it merged from a streamed
answer (the openai SDK's ``ChatCompletionStreamState``); it carries nothing."""
CALL_FUNCTION_KEYS = frozenset({"name", "arguments"})
CHOICE_KEYS = frozenset({"type", "function", "custom", "allowed_tools"})
CHOICE_FUNCTION_KEYS = frozenset({"name"})
FORMAT_KEYS = frozenset({"type", "json_schema"})
JSON_SCHEMA_KEYS = frozenset({"name", "description", "schema", "strict"})
STREAM_OPTIONS_KEYS = frozenset({"include_usage", "include_obfuscation"})
MESSAGE_SERVING = frozenset({"audio", "annotations"})
"""A message's keys the schema has no place for are carried to an OpenAI Chat upstream on that
message (``NativeFields.fields["message_fields"]``); toward another wire API these are dropped
and named: an assistant message's ``audio`` (``{"id"}``: a reference to an earlier audio
answer stored at OpenAI) and ``annotations`` (an answer's URL citations sent back as they
came: ``ChatCompletionMessage.annotations``); any other (a vendor extension such as Mistral's
``prefix: true``) is refused by name there."""
