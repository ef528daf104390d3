"""A schema field's name in each client dialect, so that refusals and dropped notes name what
the client sent (issue 14: "a 400 in the client's dialect naming the field"): a Gemini client
that sent ``generationConfig.stopSequences`` is told about ``generationConfig.stopSequences``,
not the schema's ``stop``. A field a dialect names like the schema has no entry (the OpenAI Chat
names are mostly the schema's own)."""

from __future__ import annotations

CLIENT_NAMES: dict[str, dict[str, str]] = {
    "gemini": {
        "presence_penalty": "generationConfig.presencePenalty",
        "frequency_penalty": "generationConfig.frequencyPenalty",
        "seed": "generationConfig.seed",
        "top_k": "generationConfig.topK",
        "top_p": "generationConfig.topP",
        "temperature": "generationConfig.temperature",
        "stop": "generationConfig.stopSequences",
        "thinking": "generationConfig.thinkingConfig",
        "response_format": "generationConfig.responseJsonSchema",
    },
    "anthropic_messages": {
        "stop": "stop_sequences",
        "user": "metadata.user_id",
        "response_format": "output_config.format",
    },
    "openai_chat": {"thinking": "reasoning_effort"},
    "openai_responses": {"thinking": "reasoning.effort", "response_format": "text.format"},
}
"""Client dialect -> schema field -> the client's own (dotted) name of it."""


def client_name(dialect: str, field: str) -> str:
    """The name a client of ``dialect`` gives the schema's ``field`` (``generationConfig.seed``
    for a Gemini client's ``seed``); ``field`` itself where the dialect names it the same."""
    names = CLIENT_NAMES.get(dialect)
    return field if names is None else names.get(field, field)
