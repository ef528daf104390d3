"""A schema field's name in each client dialect, so that refusals and dropped notes name what
the client sent (issue 14: "a 400 in the client's dialect naming the field"): a Gemini client
that sent ``generationConfig.stopSequences`` is told about ``generationConfig.stopSequences``,
not the schema's ``stop``. The OpenAI Chat names are the schema's own, so that dialect needs no
entry; a field a dialect names like the schema has none either."""

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
    },
    "anthropic_messages": {"stop": "stop_sequences", "user": "metadata.user_id"},
}
"""Client dialect -> schema field -> the client's own (dotted) name of it."""


def client_name(dialect: str, field: str) -> str:
    """The name a client of ``dialect`` gives the schema's ``field`` (``generationConfig.seed``
    for a Gemini client's ``seed``); ``field`` itself where the dialect names it the same."""
    names = CLIENT_NAMES.get(dialect)
    return field if names is None else names.get(field, field)
