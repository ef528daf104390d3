"""The fidelity table of the Gemini dialect (``models/{model}:generateContent`` /
``:streamGenerateContent``, edge :mod:`gateway.edges.gemini_parse`): every field of the REST
body the ``google-genai`` SDK sends, each in one class, and the rows of its nested fields;
assembled with the other dialects' tables by :mod:`gateway.edges.fidelity`
(``docs/fidelity.md``).

How the SDK's names map to the body's keys (:data:`GEMINI_NOTE`): the SDK's pydantic types
(``google.genai.types``) spell each field's wire key as its alias (``to_camel``:
``top_k`` -> ``topK``). ``GenerateContentConfig`` fields that ``GenerationConfig`` also has go
under ``generationConfig``; the others are top-level body fields, except ``image_config``
(which the SDK's request converter writes as ``generationConfig.imageConfig``) and the SDK's
client-side options ``http_options``, ``automatic_function_calling`` and
``should_return_http_response``, which never reach the body. ``contents`` is the request's
own field; the model and the stream flag are in the URL.
"""

from __future__ import annotations

from gateway.edges.fidelity_rule import (
    CARRIED,
    DROPPED,
    PASSED,
    REFUSED,
    REFUSED_ELSEWHERE,
    SERVING,
    TRANSLATED,
    Rule,
)

__all__ = ["GEMINI", "GEMINI_NESTED", "GEMINI_NOTE", "SDK_ONLY", "SDK_WIRE_KEYS"]

SDK_ONLY = frozenset({"http_options", "automatic_function_calling", "should_return_http_response"})
"""``GenerateContentConfig`` fields the SDK keeps to itself (transport options, its own
function-calling loop, the raw HTTP answer): never in a request body."""
SDK_WIRE_KEYS = {"image_config": "generationConfig.imageConfig"}
"""``GenerateContentConfig`` fields outside ``GenerationConfig`` that the SDK's request converter
(``google.genai.models._GenerateContentConfig_to_mldev``) still writes under
``generationConfig``."""

GEMINI_NOTE = (
    "Field names are the REST body's camelCase keys (snake_case is read too; one field in both "
    "spellings, `generationConfig` and `generation_config`, is refused naming both). They come from "
    "the `google-genai` SDK's types: each field's alias (`top_k` -> `topK`); "
    "`GenerateContentConfig` fields that `GenerationConfig` also has (and `image_config`, which "
    "the SDK writes there) are `generationConfig.*` keys, the others top-level keys; the SDK's "
    "client-side `http_options`, `automatic_function_calling` and `should_return_http_response` "
    "never reach the body. The model and streaming come from the URL. A `generationConfig` or "
    "`toolConfig` key or built-in tool this table does not list is passed through; any other "
    "unknown key is refused by name."
)

_GEN = "generationConfig."

GEMINI: dict[str, Rule] = {
    "model": Rule(
        CARRIED,
        "the deployment's model (the URL's; a body `model` only where the URL names none: "
        "`countTokens`' `generateContentRequest`)",
        "the deployment's model",
    ),
    "contents": Rule(
        TRANSLATED,
        "`user` / `model` turns -> messages, rebuilt as `contents` (`functionCall` ids kept or made "
        "deterministic, `thoughtSignature`s carried); nested fields: the nested table",
        "each API's messages: `functionCall` / `functionResponse` -> tool calls and results (paired "
        "by id, else by name and order)",
    ),
    "systemInstruction": Rule(
        TRANSLATED,
        "a leading system message (text parts; any other part refused by name; its `role` means "
        "nothing) -> `systemInstruction`",
        "OpenAI Chat: a leading `system` message; Responses `instructions`; Anthropic `system`",
    ),
    "tools": Rule(
        TRANSLATED,
        "`functionDeclarations` -> tools (`parameters` in Gemini's `Schema` -> JSON Schema and "
        "back; `parametersJsonSchema` as is); built-in search and context tools passed through; "
        "code execution, computer use, file search, retrieval, `mcpServers` refused by name; "
        "`{type: mcp}` the gateway's own tool loop",
        "function tools; a built-in tool: " + REFUSED_ELSEWHERE,
    ),
    "toolConfig": Rule(
        TRANSLATED,
        "`functionCallingConfig` -> the tool choice (`AUTO`, `ANY` with one or all names, `NONE`; "
        "`VALIDATED` as sent); its other keys (`retrievalConfig`, "
        "`includeServerSideToolInvocations`) passed through",
        "each API's tool choice (`VALIDATED`: `auto` with strict tools); the other keys: "
        + REFUSED_ELSEWHERE,
    ),
    "safetySettings": Rule(PASSED, "as sent", REFUSED_ELSEWHERE),
    "labels": Rule(PASSED, "as sent (Vertex AI billing labels)", REFUSED_ELSEWHERE),
    "modelArmorConfig": Rule(PASSED, "as sent (Vertex AI Model Armor screening)", REFUSED_ELSEWHERE),
    "serviceTier": Rule(SERVING, "as sent", DROPPED),
    "cachedContent": Rule(
        REFUSED, "refused: a cache lives in one upstream project, not behind a router", "refused"
    ),
    _GEN + "temperature": Rule(CARRIED, "as sent", "as sent"),
    _GEN + "topP": Rule(CARRIED, "as sent", "as sent"),
    _GEN + "topK": Rule(
        CARRIED,
        "as sent (an integral float read as an integer)",
        "Anthropic `top_k`; OpenAI Chat and Responses (no such field): " + DROPPED,
    ),
    _GEN + "maxOutputTokens": Rule(
        CARRIED, "as sent", "the deployment's `max_tokens_field` / `max_output_tokens` / `max_tokens`"
    ),
    _GEN + "stopSequences": Rule(
        CARRIED,
        "as sent",
        "OpenAI Chat `stop`, Anthropic `stop_sequences`; Responses (no slot): refused, 400 naming "
        "`generationConfig.stopSequences` and the model",
    ),
    _GEN + "candidateCount": Rule(REFUSED, "refused above 1 (1 accepted)", "refused above 1"),
    _GEN + "seed": Rule(CARRIED, "as sent", "OpenAI Chat `seed`; elsewhere " + DROPPED),
    _GEN + "presencePenalty": Rule(
        CARRIED,
        "as sent (0 asks for nothing)",
        "OpenAI Chat `presence_penalty`; elsewhere " + REFUSED_ELSEWHERE,
    ),
    _GEN + "frequencyPenalty": Rule(
        CARRIED,
        "as sent (0 asks for nothing)",
        "OpenAI Chat `frequency_penalty`; elsewhere " + REFUSED_ELSEWHERE,
    ),
    _GEN + "responseMimeType": Rule(
        TRANSLATED,
        "as sent: `application/json` (a JSON object, or with a schema), `text/plain` (the default); "
        "any other type refused by name",
        "a JSON object or JSON Schema response format",
    ),
    _GEN + "responseSchema": Rule(
        TRANSLATED, "as sent (with its `propertyOrdering`)", "a JSON Schema response format"
    ),
    _GEN + "responseJsonSchema": Rule(TRANSLATED, "as sent", "a JSON Schema response format"),
    _GEN + "thinkingConfig": Rule(
        TRANSLATED,
        "as sent (the nested table)",
        "`thinkingLevel` an effort, `thinkingBudget` a budget (0 off, -1 dynamic)",
    ),
    _GEN + "responseModalities": Rule(
        REFUSED, 'refused unless `["TEXT"]`: audio and image answers are not relayed', "the same"
    ),
    _GEN + "responseLogprobs": Rule(
        REFUSED, "refused when true: answers carry no log probabilities", "the same"
    ),
    _GEN + "logprobs": Rule(REFUSED, "refused when set: answers carry no log probabilities", "the same"),
    _GEN + "speechConfig": Rule(REFUSED, "refused: audio answers are not relayed", "the same"),
    _GEN + "imageConfig": Rule(REFUSED, "refused: image answers are not relayed", "the same"),
    _GEN + "audioTimestamp": Rule(REFUSED, "refused when true: audio timestamps are not relayed", "the same"),
    _GEN + "mediaResolution": Rule(PASSED, "as sent", REFUSED_ELSEWHERE),
    _GEN + "routingConfig": Rule(PASSED, "as sent (Vertex AI model routing)", REFUSED_ELSEWHERE),
    _GEN + "modelSelectionConfig": Rule(PASSED, "as sent (Vertex AI model selection)", REFUSED_ELSEWHERE),
    _GEN + "enableEnhancedCivicAnswers": Rule(
        PASSED, "as sent (`false` asks for nothing)", REFUSED_ELSEWHERE
    ),
    _GEN + "enableAffectiveDialog": Rule(PASSED, "as sent (`false` asks for nothing)", REFUSED_ELSEWHERE),
}
"""Gemini ``generateContent`` request fields (https://ai.google.dev/api/generate-content#request-body;
``google.genai.types.GenerateContentConfig`` and ``GenerationConfig``, by their REST keys)."""

GEMINI_NESTED: dict[str, Rule] = {
    "Gemini `inlineData` / `fileData` parts (`mimeType`, `data`, `fileUri`, `displayName`)": Rule(
        CARRIED,
        "as sent: images anywhere, documents (`application/*`, `text/*`) and audio in user turns; "
        "`displayName` a document's filename (refused by name on images and audio); other types "
        "refused by name",
        "each API's image, document and audio parts (the target's media rules)",
    ),
    "Gemini part keys `executableCode`, `codeExecutionResult`, `toolCall`, `toolResponse`, "
    "`videoMetadata`, `partMetadata`, `mediaResolution`": Rule(
        REFUSED,
        "400 naming the key: code execution and server-side tool parts are not relayed; video "
        "offsets, part metadata and per-part media resolution have no place in the schema",
        "the same",
    ),
    "Gemini `functionCall.partialArgs` / `willContinue`, `functionResponse.scheduling` / "
    "`willContinue: true`, `functionCallingConfig.streamFunctionCallArguments: true`": Rule(
        REFUSED,
        "400 naming the key: calls streamed in pieces and live-session scheduling are not relayed "
        "(the gateway hands tool calls over whole); null / `false` asks for nothing",
        "the same",
    ),
    "Gemini `functionDeclarations[]` `response`, `responseJsonSchema`, `behavior`": Rule(
        REFUSED,
        "400 naming the key: a declared response schema and non-blocking calls have no place in "
        "the other APIs' tools",
        "the same",
    ),
    "Gemini built-in tools `googleSearch`, `googleSearchRetrieval`, `urlContext`, `googleMaps`, "
    "`enterpriseWebSearch`, `parallelAiSearch`": Rule(
        PASSED,
        "as sent (the answer's text; its grounding metadata is not relayed yet)",
        REFUSED_ELSEWHERE,
    ),
    "Gemini built-in tools `codeExecution`, `computerUse`, `fileSearch`, `retrieval`, `mcpServers`": Rule(
        REFUSED,
        "400 naming the tool: Gemini answers them with parts the gateway does not relay",
        "the same",
    ),
}
"""Nested fields of the Gemini dialect beyond the rows in :data:`gateway.edges.fidelity.NESTED`."""
