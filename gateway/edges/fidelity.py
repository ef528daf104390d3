"""The fidelity rule: every request field of a client dialect is in exactly one class, and the
class decides what each upstream wire API gets (issue 14; written out in ``docs/fidelity.md``,
which :func:`markdown` generates and a test keeps equal to this table).

Classes (:data:`CLASSES`):

* ``carried``: in :mod:`gateway.schema`; every adapter maps it.
* ``translated``: read into the schema in another shape (a stated mapping per target).
* ``passed through``: no place in the schema; sent verbatim to an upstream of the client's own
  wire API (:class:`gateway.schema.NativeFields` ``paths``), and toward any other the request is
  refused (HTTP 400 naming the field and the model): the field changes the answer.
* ``serving``: passed through the same way, but it only steers how the upstream serves the turn
  (tier, speed, prompt-cache keys, storage, attribution) and does not change the answer's
  meaning: toward another wire API it is dropped, named in the ``x-turnstile-dropped`` response
  header and a transcript note (``NativeFields.serving``; :mod:`gateway.layers.target`).
* ``refused``: a 400 naming the field whatever the target: the gateway cannot relay what it
  asks for (log probabilities, audio, several choices). A field refused only for some values
  says which (a default value such as ``n: 1`` asks for nothing and is accepted).
* ``header``: an SDK parameter that travels as an HTTP header, not in the body.

A top-level body field the OpenAI Chat or Anthropic table does not list (a vendor extension)
is ``passed through``; the Responses and Gemini edges refuse one by name. The Chat and Anthropic
edges read these tables (:func:`serving_fields`, :func:`passed_fields`); the Responses and
Gemini tables (:mod:`gateway.edges.fidelity_responses`, :mod:`gateway.edges.fidelity_gemini`)
are checked against their edges' field sets by the tests.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

from gateway.edges.fidelity_gemini import GEMINI, GEMINI_NESTED, GEMINI_NOTE
from gateway.edges.fidelity_responses import OPENAI_RESPONSES, RESPONSES_NESTED, RESPONSES_NOTE
from gateway.edges.fidelity_rule import (
    CARRIED,
    CLASSES,
    HEADER,
    PASSED,
    REFUSED,
    SERVING,
    TRANSLATED,
    Rule,
)
from gateway.edges.fidelity_rule import DROPPED as _DROPPED
from gateway.edges.fidelity_rule import REFUSED_ELSEWHERE as _REFUSED_ELSEWHERE

__all__ = [
    "ANTHROPIC_MESSAGES",
    "CARRIED",
    "CLASSES",
    "GEMINI",
    "HEADER",
    "NESTED",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "PASSED",
    "REFUSED",
    "SERVING",
    "TRANSLATED",
    "Rule",
    "markdown",
    "native_fields",
    "passed_fields",
    "serving_fields",
]

OPENAI_CHAT: dict[str, Rule] = {
    "model": Rule(CARRIED, "the deployment's model", "the deployment's model"),
    "messages": Rule(
        CARRIED,
        "messages in order; `system` and `developer` stay in place with their role; nested fields: "
        "the nested table",
        "Anthropic: leading system messages -> `system`, later ones stay in place as `role: system`; "
        "Gemini: leading ones -> `systemInstruction`, later ones in place as a user system note; "
        "`developer` is `system` there",
    ),
    "tools": Rule(
        CARRIED,
        "`function` tools; `custom` tools (free-form input, `text` or a `lark` / `regex` grammar) "
        "natively, their calls returned as `custom` tool calls (whole and streamed)",
        "each API's tool definitions; `function.strict` to Anthropic on a model with structured outputs, "
        "else (Gemini, older Claude) " + _DROPPED + "; `custom` tools: Responses natively (`custom` "
        "with its `format`), elsewhere a function with one string argument `input` (the grammar in the "
        "description, a regex as the argument's `pattern`)",
    ),
    "tool_choice": Rule(
        CARRIED,
        "as sent (a `function` or `custom` tool by name, `allowed_tools`)",
        "Anthropic `tool_choice`, Gemini `toolConfig`; `allowed_tools`: Responses natively, elsewhere "
        "only the allowed tools are offered, with its mode (`auto` / `required`: the same calls are "
        "possible; only the upstream's cached tool-list prefix differs)",
    ),
    "parallel_tool_calls": Rule(
        CARRIED,
        "as sent",
        "Anthropic `disable_parallel_tool_use`; Gemini has no such setting: `false` is " + _DROPPED,
    ),
    "functions": Rule(TRANSLATED, "legacy functions -> `tools`", "-> tools"),
    "function_call": Rule(TRANSLATED, "legacy -> `tool_choice`", "-> tool choice"),
    "max_completion_tokens": Rule(
        CARRIED, "the deployment's `max_tokens_field`", "`max_tokens` / `maxOutputTokens`"
    ),
    "max_tokens": Rule(CARRIED, "the deployment's `max_tokens_field`", "`max_tokens` / `maxOutputTokens`"),
    "temperature": Rule(CARRIED, "as sent", "as sent"),
    "top_p": Rule(CARRIED, "as sent", "as sent"),
    "stop": Rule(CARRIED, "as sent", "`stop_sequences` / `stopSequences`"),
    "response_format": Rule(
        CARRIED,
        "as sent",
        "native structured output or a forced tool (Gemini: `responseJsonSchema` as sent on Gemini 2.5 "
        "and later, the converted `responseSchema` on older models: `gateway/providers/gemini_models.py`); "
        "a Claude model without the native slot with thinking on: the output tool offered, not forced "
        "(Claude takes no forced tool use with thinking), `response_format` " + _DROPPED,
    ),
    "reasoning_effort": Rule(
        CARRIED,
        "as sent (`none` and `xhigh` verbatim); toward a model without reasoning " + _DROPPED,
        "Responses `reasoning.effort` (`none` and `xhigh` verbatim; a model without reasoning: "
        + _DROPPED
        + "), Anthropic thinking budget "
        "(`xhigh` as `high`; fitted to Claude's rules: the nested table), Gemini `thinkingConfig`",
    ),
    "stream": Rule(CARRIED, "as sent", "each API's streaming"),
    "stream_options": Rule(
        CARRIED,
        "`include_usage`; `include_obfuscation: true` refused by name (the gateway writes the client's "
        "stream without obfuscation padding; as the Responses edge)",
        "usage is always read; `include_obfuscation: true` refused",
    ),
    "user": Rule(
        CARRIED, "as sent", "Responses `user`, Anthropic `metadata.user_id`; Gemini (no slot): " + _DROPPED
    ),
    "n": Rule(
        REFUSED,
        "refused above 1 (`n: 1` accepted): a turn is one answer in the schema (`Response.message`: the "
        "guards, the tool loop, the session log and the transcript row each keep one message), so "
        "several choices cannot be carried even to an OpenAI Chat upstream; send n requests",
        "refused above 1",
    ),
    "logprobs": Rule(REFUSED, "refused when true: answers carry no log probabilities", "refused when true"),
    "top_logprobs": Rule(REFUSED, "refused above 0", "refused above 0"),
    "audio": Rule(REFUSED, "refused: audio output is not relayed", "refused"),
    "modalities": Rule(REFUSED, 'refused unless `["text"]`', 'refused unless `["text"]`'),
    "frequency_penalty": Rule(
        CARRIED,
        "as sent (0 asks for nothing)",
        "Gemini `generationConfig.frequencyPenalty`; elsewhere " + _REFUSED_ELSEWHERE,
    ),
    "presence_penalty": Rule(
        CARRIED,
        "as sent (0 asks for nothing)",
        "Gemini `generationConfig.presencePenalty`; elsewhere " + _REFUSED_ELSEWHERE,
    ),
    "logit_bias": Rule(PASSED, "as sent (`{}` asks for nothing)", _REFUSED_ELSEWHERE),
    "verbosity": Rule(PASSED, "as sent", "Responses `text.verbosity`; elsewhere " + _REFUSED_ELSEWHERE),
    "web_search_options": Rule(
        PASSED, "as sent (citations in `annotations` not relayed)", _REFUSED_ELSEWHERE
    ),
    "moderation": Rule(
        PASSED, "as sent", "Responses `moderation` (the same type); elsewhere " + _REFUSED_ELSEWHERE
    ),
    "service_tier": Rule(SERVING, "as sent", "Responses `service_tier`; elsewhere " + _DROPPED),
    "store": Rule(
        SERVING,
        "as sent",
        "Responses `store` (`true`: the upstream keeps its copy, as asked; the gateway still sends the "
        "whole conversation); elsewhere " + _DROPPED,
    ),
    "metadata": Rule(
        CARRIED,
        "as sent (also read for the session id)",
        "Responses `metadata` (a value that is not a string or more than 16 keys: 400 naming "
        "`metadata.<key>` / `metadata` and the model, never trimmed); Anthropic, Gemini: " + _DROPPED,
    ),
    "prompt_cache_key": Rule(SERVING, "as sent", "Responses `prompt_cache_key`; elsewhere " + _DROPPED),
    "prompt_cache_options": Rule(
        SERVING, "as sent", "Responses `prompt_cache_options` (Chat's are a subset); elsewhere " + _DROPPED
    ),
    "prompt_cache_retention": Rule(
        SERVING, "as sent", "Responses `prompt_cache_retention`; elsewhere " + _DROPPED
    ),
    "safety_identifier": Rule(SERVING, "as sent", "Responses `safety_identifier`; elsewhere " + _DROPPED),
    "seed": Rule(
        CARRIED,
        "as sent (best-effort determinism, no guarantee per OpenAI)",
        "Gemini `generationConfig.seed`; elsewhere " + _DROPPED,
    ),
    "prediction": Rule(SERVING, "as sent (a latency hint: the answer is the model's either way)", _DROPPED),
    "top_k": Rule(
        CARRIED,
        "no such field: " + _DROPPED + " (`top_k`)",
        "Anthropic `top_k`, Gemini `topK`; Responses (no such field): " + _DROPPED,
    ),
}
"""OpenAI Chat Completions request fields (https://platform.openai.com/docs/api-reference/chat/create;
``openai.types.chat.completion_create_params``), plus the ``top_k`` extension."""

ANTHROPIC_MESSAGES: dict[str, Rule] = {
    "model": Rule(CARRIED, "the deployment's model", "the deployment's model"),
    "max_tokens": Rule(CARRIED, "as sent", "the API's output limit"),
    "messages": Rule(
        CARRIED,
        "in order; `role: system` messages stay in place; a message's own keys besides `role` and "
        "`content` (a system message's per-turn `output_config`) on it; server tool calls and results "
        "(`server_tool_use`, `*_tool_result`, `mcp_tool_use`) and `tool_reference` blocks as sent",
        "OpenAI: `system` messages in place; Gemini: leading ones -> `systemInstruction`, later ones "
        "in place as a user system note; `messages[i].output_config` dropped; a message's other own "
        "keys and server tool blocks refused; `tool_reference` the text `Tool loaded: <name>`",
    ),
    "system": Rule(CARRIED, "as sent (`cache_control` kept)", "a leading system message"),
    "tools": Rule(
        CARRIED,
        "custom tools, per-tool extra keys on the tool, server tools (`web_search_*`, "
        "`tool_search_tool_*`, ...) as sent",
        "function tools (`strict` where the API can enforce it, else dropped and named); "
        "`defer_loading` dropped, other per-tool extra keys and server tools refused",
    ),
    "tool_choice": Rule(
        CARRIED,
        "as sent (a key its `type` does not have refused by name)",
        "each API's tool choice; `disable_parallel_tool_use` -> OpenAI `parallel_tool_calls: false`, "
        "Gemini has no such setting: " + _DROPPED,
    ),
    "temperature": Rule(CARRIED, "as sent", "as sent"),
    "top_p": Rule(CARRIED, "as sent", "as sent"),
    "top_k": Rule(
        CARRIED,
        "as sent",
        "Gemini `topK`; OpenAI Chat and Responses (no such field): " + _DROPPED + " (`top_k`)",
    ),
    "stop_sequences": Rule(CARRIED, "as sent", "`stop`"),
    "stream": Rule(CARRIED, "as sent", "each API's streaming"),
    "metadata": Rule(
        TRANSLATED,
        "`user_id` as sent (any other key refused by name)",
        "`user_id` -> OpenAI `user`",
    ),
    "thinking": Rule(
        CARRIED,
        "as sent (`adaptive`, `between_tools`, `display`, `block_binding`, `budget_tokens` verbatim; "
        "a key the SDK types do not define refused by name)",
        "OpenAI `reasoning_effort` / `reasoning.effort` (a budget as an effort, `disabled` as `none`, "
        "or the least effort a model without `none` takes: gpt-5 `minimal`, o-series `low`; "
        "the nested table), Gemini `thinkingConfig`; `thinking.display` and "
        "`thinking.block_binding`: " + _DROPPED,
    ),
    "output_config": Rule(
        CARRIED,
        "`format` (structured output), `effort` and the beta `task_budget` as sent (any other key "
        "refused by name); a model without the native slot gets `format` as a forced output tool, "
        "offered unforced with thinking on (`output_config.format` " + _DROPPED + ")",
        "format: native structured output or a forced tool (OpenAI: `strict: true`, as Anthropic's are "
        "always strict, where the schema meets OpenAI's strict rules; else sent loose and "
        "`output_config.format.strict` " + _DROPPED + "); effort: `reasoning_effort` / `thinkingConfig`; "
        "`output_config.task_budget`: " + _DROPPED,
    ),
    "output_format": Rule(TRANSLATED, "beta form -> `output_config.format`", "structured output"),
    "cache_control": Rule(
        SERVING,
        "as sent (automatic prompt caching)",
        _DROPPED + " (OpenAI and Gemini cache prefixes themselves)",
    ),
    "service_tier": Rule(SERVING, "as sent", _DROPPED),
    "speed": Rule(SERVING, "as sent", _DROPPED),
    "inference_geo": Rule(SERVING, "as sent", _DROPPED),
    "context_management": Rule(
        SERVING, "as sent", _DROPPED + " (the target sees the whole conversation the client sent)"
    ),
    "fallback_credit_token": Rule(SERVING, "as sent", _DROPPED),
    "container": Rule(PASSED, "as sent", _REFUSED_ELSEWHERE),
    "mcp_servers": Rule(PASSED, "as sent (the MCP connector)", _REFUSED_ELSEWHERE),
    "fallbacks": Rule(PASSED, "as sent", _REFUSED_ELSEWHERE),
    "diagnostics": Rule(REFUSED, "refused: the answer's `diagnostics` is not relayed", "refused"),
    "compaction": Rule(REFUSED, "refused: `compaction` answers are not relayed", "refused"),
    "billing_policy": Rule(REFUSED, "refused: the gateway calls with the deployment's credential", "refused"),
    "thread": Rule(
        CARRIED,
        "the session log (message threads: create / continue)",
        "the same: the context is rebuilt from the log",
    ),
    "betas": Rule(
        HEADER,
        "`anthropic-beta`, admitted by `anthropic.betas` (in a JSON body: 400 naming it)",
        "dropped, reported",
    ),
    "workspace_id": Rule(
        HEADER,
        "`anthropic-workspace-id`: the deployment's credential picks the workspace (in a JSON body: "
        "400 naming it)",
        "n/a",
    ),
    "user_profile_id": Rule(
        HEADER, "`anthropic-user-profile-id`: not forwarded (in a JSON body: 400 naming it)", "n/a"
    ),
}
"""Anthropic Messages request fields (https://docs.anthropic.com/en/api/messages;
``anthropic.types.message_create_params`` and the beta ``anthropic.types.beta.message_create_params``)."""

NESTED: dict[str, Rule] = {
    "OpenAI Chat `messages[].name` (user, assistant, system, developer)": Rule(
        CARRIED,
        "as sent (consecutive assistant messages of different names are not merged)",
        "no other API has a participant name: " + _DROPPED + " (`name`); the text is not changed",
    ),
    "OpenAI Chat `role: developer`, Responses `role: developer` items": Rule(
        CARRIED,
        "OpenAI Chat and Responses upstreams: `role: developer` in place (never hoisted into `instructions`)",
        "a system message (Anthropic, Gemini: the rules of `system` messages)",
    ),
    "mid-conversation `system` messages (every dialect that has them)": Rule(
        CARRIED,
        "in place",
        "OpenAI Chat and Anthropic: in place as `role: system`; Responses: in place as a `system` "
        "item; Gemini (no system role in `contents`): in place as a user text part "
        "`<system_note>...</system_note>` (the leading ones are `systemInstruction`)",
    ),
    "OpenAI Chat `image_url.detail`, Responses `input_image.detail`": Rule(
        CARRIED,
        "as sent (`auto` asks for nothing)",
        "the other OpenAI API: as sent; Anthropic, Gemini: " + _DROPPED + " (`detail`; Gemini's "
        "per-part `mediaResolution` is Gemini 3 only and another scale, not a translation)",
    ),
    "OpenAI `file.filename` / `input_file.filename`, Anthropic `document.title`": Rule(
        CARRIED,
        "as sent",
        "OpenAI `filename`, Anthropic `title`; Gemini (its `Blob` / `FileData` have no name): "
        + _DROPPED
        + " (`filename`)",
    ),
    "Anthropic `document` blocks with a `text` source or a `content` source (a string, or text and "
    "image blocks)": Rule(
        CARRIED,
        "as sent (a `content` source verbatim: `DocumentPart.content_source`)",
        "Gemini: a `text/plain` `inlineData` document; OpenAI Chat and Responses (files are PDFs "
        "there): a text part `<document title=...>` with its text; a `content` source's text blocks "
        "joined, one holding images: 400 naming `...source.content`",
    ),
    "Anthropic image `file` source (Files API)": Rule(
        PASSED,
        "as sent (`ImagePart.file_id`)",
        _REFUSED_ELSEWHERE + " (`messages[i].content[j].source`: a file uploaded to Anthropic)",
    ),
    "Responses `input_audio` parts": Rule(
        REFUSED,
        "400 naming the part: no input of the Responses API takes audio (the SDK type is unused)",
        "the same (send audio through Chat Completions `input_audio`, carried to audio targets)",
    ),
    "Anthropic `tool_result.content[]` `document` blocks": Rule(
        PASSED,
        "as sent (`NativePart`)",
        _REFUSED_ELSEWHERE + " (OpenAI Chat tool messages and Responses `function_call_output` "
        "`input_file` parts are refused by name on every target)",
    ),
    "Anthropic `tool_result.content[]` `search_result` blocks (search results with citations)": Rule(
        TRANSLATED,
        "as sent (`NativePart`)",
        "their text: `Search result: <title>`, `Source: <source>`, then the content's text (the "
        "citations Claude would give of them are not made there); `search_result` and `container_upload` "
        "blocks in a user turn: refused by name on every target (no schema part holds them yet)",
    ),
    "Anthropic `tool_use.caller` (programmatic tool calling)": Rule(
        PASSED,
        "as sent, and read back from the answer (whole and streamed) for the client",
        _REFUSED_ELSEWHERE,
    ),
    "Anthropic image `transformations`, `toolset_name` on `tool_use` and `tool_result`": Rule(
        SERVING,
        "as sent (on the part: `ImagePart.transformations`, `ToolCallPart.toolset_name`, "
        "`ToolResultMessage.toolset_name`); an answer's `tool_use.toolset_name` read back for the client",
        _DROPPED + " (`messages[i].content[j].transformations`, `...toolset_name`)",
    ),
    "Anthropic block and nested-object keys the SDK types do not define (text, system, image, "
    "image `source`, document, thinking, `tool_use`, `tool_result` blocks)": Rule(
        REFUSED,
        "400 naming the key (`messages[0].content[1].source.colour`), as the Anthropic API refuses it",
        "the same",
    ),
    "OpenAI Chat and Responses: a key the SDK types do not define on a content part, image_url, "
    "tool call, tool function, `tool_choice`, `response_format.json_schema`, `stream_options`, "
    "Responses input item or function/custom tool": Rule(
        REFUSED,
        "400 naming the path (`messages[1].content[0].colour`); a null value asks for nothing",
        "the same",
    ),
    "A message's own keys: the keys of the client's wire API a message carries beside those the "
    "schema reads (OpenAI Chat vendor keys, `audio`, `reasoning_content`; an Anthropic message's "
    "keys besides `role` and `content`; Responses item keys; a Gemini `functionResponse.response` "
    "object)": Rule(
        CARRIED,
        "on the message (`Message.own`: `OwnKeys`), so the session log keeps them: a context rebuilt "
        "from it (`x-turnstile-session`, a stored Responses chain, a message thread) sends them again",
        "by their class below; an earlier turn's, rebuilt from the session log toward another wire "
        "API: " + _DROPPED + " (`history.<key>`)",
    ),
    "OpenAI Chat: a message's keys besides the SDK's and the read extensions (Mistral `prefix`: "
    "the prefill row), "
    "a `tools[]` entry's keys besides `type`, `function`, `cache_control`": Rule(
        PASSED,
        "as sent on that message / tool (`own`, `tool_fields`)",
        _REFUSED_ELSEWHERE + "; a tool's `defer_loading` / `eager_input_streaming` " + _DROPPED,
    ),
    "Assistant prefill: an Anthropic client's last assistant message, an OpenAI Chat client's "
    "`prefix: true` (Mistral, DeepSeek) on its last assistant message": Rule(
        TRANSLATED,
        "Anthropic: continued as sent; OpenAI Chat: `prefix` as sent on that message",
        "Anthropic: the last assistant message, which Claude continues (`prefix` not sent); OpenAI, "
        "Gemini (no continuation: an ordinary assistant message, answered after): `messages[i]` / "
        "`messages[i].prefix` " + _DROPPED + "; `prefix` on an earlier message: 400 naming it",
    ),
    'An empty assistant turn in the history (OpenAI Chat `content: ""` or null, without tool calls)': Rule(
        CARRIED,
        'OpenAI Chat: `{role: assistant, content: ""}` in place',
        "no message of the other APIs holds an empty turn (Anthropic refuses empty content): removed, "
        "the turns around it kept, `messages[i]` " + _DROPPED,
    ),
    "OpenAI Chat and Responses tool-call `arguments` in the history (a string)": Rule(
        CARRIED,
        "as sent (the string, whatever it holds)",
        "the other OpenAI API: as sent; Anthropic `tool_use.input`, Gemini `functionCall.args` (an "
        'object only): the parsed object, `""` as `{}`; arguments that are not a JSON object '
        '(`[1,2]`, `"str"`, text, trailing bytes): 400 naming '
        "`messages[i].tool_calls[j].function.arguments` / `input[i].arguments` and the model",
    ),
    "OpenAI Chat user message `content: null` (or missing)": Rule(
        REFUSED,
        "400 naming `messages[i].content`: the SDK type requires it and OpenAI refuses null",
        "the same (never a request that lost the message)",
    ),
    "OpenAI Chat assistant `refusal`": Rule(
        CARRIED,
        "the message's `refusal` as sent (beside its `content`, or alone)",
        "a text part after the message's content: nothing of the refusal is lost",
    ),
    "OpenAI Chat assistant `audio` (`{id}`) and `annotations`": Rule(
        SERVING, "as sent on that message", _DROPPED + " (`messages[i].audio`)"
    ),
    "OpenAI Chat message-level `cache_control` (user, system, assistant, tool)": Rule(
        TRANSLATED,
        "the mark of the message's last part (an assistant's last text or tool call; a tool "
        "message's on the result)",
        "Anthropic: on that block; else " + _DROPPED,
    ),
    "OpenAI Chat `prompt_cache_breakpoint` on user, system, assistant and tool-result parts; "
    "Responses `prompt_cache_breakpoint` on user, system and call-output parts, `input_file.detail`, "
    "assistant `output_text.annotations` / `logprobs`": Rule(
        SERVING,
        "as sent on that part (`own_keys`; also from the session log)",
        _DROPPED + " (the part's path)",
    ),
    "Anthropic `tool_reference` blocks in a tool result (Claude Code's tool search)": Rule(
        TRANSLATED,
        "as sent (`NativePart`)",
        "the text `Tool loaded: <name>` (the `defer_loading` tool is a plain function there: "
        "`tools[i].defer_loading` " + _DROPPED + ")",
    ),
    'a tool result\'s error flag (Anthropic `is_error`, Gemini `{"error": ...}`)': Rule(
        CARRIED,
        'Anthropic `is_error`, Gemini `{"error": text}`',
        "OpenAI Chat and Responses (no such flag): the result's text starts with `Error: `",
    ),
    "Responses function and custom tool `defer_loading`, `output_schema`, `allowed_callers`, `async`": Rule(
        SERVING, "as sent on that tool (`tool_fields`)", _DROPPED + " (`tools[i].defer_loading`, ...)"
    ),
    "OpenAI Chat `tool_calls[].cache_control`": Rule(
        CARRIED,
        "not sent (OpenAI has no cache marks)",
        "Anthropic: on the `tool_use` block; else " + _DROPPED,
    ),
    "answer `stop_reason: pause_turn` (Anthropic server tools)": Rule(
        CARRIED,
        "an Anthropic client gets `pause_turn` (it sends the answer back to continue)",
        "OpenAI Chat `stop`, Responses `completed`, Gemini `STOP`: only an Anthropic client can "
        "ask for server tools, so another dialect never meets it",
    ),
    "Gemini `generationConfig.thinkingConfig` (`thinkingLevel`, `thinkingBudget`, `includeThoughts`)": Rule(
        TRANSLATED,
        "as sent (`thinkingLevel: LOW` stays a level, `thinkingBudget: -1` and `includeThoughts: false` "
        "are kept)",
        "`thinkingLevel` an effort, `thinkingBudget` a budget (0 off, -1 dynamic: thinking on); without "
        "`includeThoughts: true` the answer shows no thought text. Toward Gemini from another dialect: "
        "a budget is brought into the model's range (2.5 Pro 128-32768 and never off, 2.5 Flash "
        "0-24576, 2.5 Flash-Lite 512-24576; Gemini 3 a `thinkingLevel`, Gemini 3 Pro `low` / `high`; "
        "the table `gateway/providers/gemini_models.py`)",
    ),
    "Gemini `generationConfig.responseJsonSchema`, `responseSchema`": Rule(
        TRANSLATED,
        "as sent, each in its own slot (`responseJsonSchema` with its JSON Schema constructs; "
        "`responseSchema` with its `propertyOrdering`); toward a model that takes only `responseSchema` "
        "(Gemini 2.0, 1.5: `gateway/providers/gemini_models.py`) a `responseJsonSchema` is sent converted "
        "as `responseSchema`",
        "a JSON Schema response format (`propertyOrdering` the order of `properties`)",
    ),
    "Gemini `functionResponse.response`": Rule(
        TRANSLATED,
        "the object as sent",
        'a tool result: the text of `{"output": text}` / `{"error": text}` (an error result), any '
        "other object its JSON",
    ),
    "Gemini `thought: true` parts in `model` turns": Rule(
        CARRIED,
        "as sent (with their `thoughtSignature`, or without one)",
        "thinking made by Gemini: the foreign-thinking policy (`guards.foreign_thinking`)",
    ),
    "Gemini `toolConfig.functionCallingConfig.mode: VALIDATED`": Rule(
        TRANSLATED,
        "as sent (nothing named dropped)",
        "tool choice `auto` with every declared tool `strict` (Anthropic models without structured "
        "outputs: `tools[i].strict` " + _DROPPED + ")",
    ),
    "Thinking asked for by a client of another dialect toward OpenAI (Anthropic `thinking` and "
    "`output_config.effort`, Gemini `thinkingConfig`, the other OpenAI API's effort)": Rule(
        TRANSLATED,
        "an OpenAI client's own effort as sent (`none` and `xhigh` verbatim)",
        "Chat `reasoning_effort`, Responses `reasoning.effort` alike: an effort as it is; a budget "
        "alone < 4096 tokens `low`, < 16384 `medium`, else `high`; adaptive or a dynamic budget "
        "(`-1`) `medium`; `disabled` / `thinkingBudget: 0` `none` "
        "(`gateway/providers/wire_common.py` `openai_effort`). Toward a model without reasoning "
        "(`supports_thinking: false`, or litellm's table knows it as one) neither API gets it: "
        "the client's field " + _DROPPED + " (thinking off asks for nothing there). Reasoning "
        "another provider signed is removed, but the request's effort stands: OpenAI has no rule "
        "that a tool round starts with signed thinking",
    ),
    "Thinking asked for by a client of another dialect toward Claude (OpenAI Chat `reasoning_effort`, "
    "Responses `reasoning.effort`, Gemini `thinkingConfig`)": Rule(
        TRANSLATED,
        "an Anthropic client's own `thinking` and `output_config.effort` go as sent, never fitted",
        "Claude extended thinking `{type: enabled, budget_tokens}`: effort `minimal` 1024, `low` 2048, "
        "`medium` 8192, `high` and `xhigh` 16384 tokens, a Gemini `thinkingBudget` as sent (at least "
        "1024); `none` / `thinkingBudget: 0`: no thinking. Fitted to Claude's rules "
        "(`gateway/thinking_fit.py`; Anthropic's extended-thinking docs): forced tool use "
        "(`required` or a named tool) or an output limit of 1024 tokens or less turns thinking off "
        "for the request (`thinking` " + _DROPPED + "); `temperature` other than 1, `top_p` below "
        "0.95 and `top_k` are not sent (each " + _DROPPED + ", by the client's name: "
        "`generationConfig.temperature` for a Gemini client); the client's output limit is kept, "
        "never raised: a budget at or above it becomes half of it (at least 1024)",
    ),
    "Thinking parts another provider or model signed, toward any deployment": Rule(
        CARRIED,
        "sent back to the provider and model that signed them",
        "the foreign-thinking policy (`guards.foreign_thinking`): removed (`thinking` " + _DROPPED + "), "
        "or thinking turned off for a tool round Claude would refuse without its own signed thinking "
        "first (`thinking` " + _DROPPED + "; only an Anthropic target has that rule: toward OpenAI and "
        "Gemini the client's reasoning request stands), or 400 naming every such part under policy "
        "`reject`; an OpenAI Chat message's own `reasoning_content` / `reasoning` still reaches an "
        "OpenAI Chat upstream as sent (nothing named)",
    ),
    **RESPONSES_NESTED,
    **GEMINI_NESTED,
}
"""Fields inside messages and parts (and one answer value), across the dialects (the Responses
and Gemini rows of :mod:`gateway.edges.fidelity_responses` and
:mod:`gateway.edges.fidelity_gemini` last); which targets get the schema's nested fields:
:mod:`gateway.layers.target_fields`."""

_TABLES = {
    "openai_chat": OPENAI_CHAT,
    "anthropic_messages": ANTHROPIC_MESSAGES,
    "openai_responses": OPENAI_RESPONSES,
    "gemini": GEMINI,
}
_TITLES = {
    "openai_chat": "OpenAI Chat Completions",
    "anthropic_messages": "Anthropic Messages",
    "openai_responses": "OpenAI Responses",
    "gemini": "Gemini generateContent",
}
_NOTES = {"openai_responses": RESPONSES_NOTE, "gemini": GEMINI_NOTE}


def serving_fields(table: dict[str, Rule]) -> frozenset[str]:
    """The fields of ``table`` in class ``serving``."""
    return frozenset(k for k, r in table.items() if r.cls == SERVING)


def passed_fields(table: dict[str, Rule]) -> frozenset[str]:
    """The fields of ``table`` in class ``passed through``."""
    return frozenset(k for k, r in table.items() if r.cls == PASSED)


_NOTHING_ASKED: tuple[Any, ...] = (None, 0, False, {}, [])
"""Values of a passed-through field that ask for nothing (``frequency_penalty: 0``,
``logit_bias: {}``): not carried, so they never stop a request to another wire API."""


def native_fields(
    api: str, body: dict[str, Any], extra: Iterable[str], table: dict[str, Rule]
) -> dict[str, Any] | None:
    """The :class:`gateway.schema.NativeFields` dict for the client's top-level fields
    ``extra`` of ``body`` (fields the edge does not read itself) in dialect ``api``, by their
    class in ``table``: ``serving`` ones go to ``serving``, ``passed through`` ones and fields
    the table does not list to ``paths`` (both into ``fields``, verbatim); a null value, or a
    passed-through value that asks for nothing, is left out. None when nothing is carried.
    Fields of class ``refused`` must have been checked by the edge before."""
    fields: dict[str, Any] = {}
    paths: list[str] = []
    serving: list[str] = []
    for key in extra:
        value = body[key]
        if value is None:
            continue
        rule = table.get(key)
        if rule is not None and rule.cls == SERVING:
            serving.append(key)
        elif rule is None or rule.cls == PASSED:
            if value in _NOTHING_ASKED and type(value) is not bool:
                continue
            paths.append(key)
        else:
            continue
        fields[key] = value
    if not fields:
        return None
    return {"api": api, "fields": fields, "paths": paths, "serving": serving}


_CLASS_ROWS = (
    ("class", "to an upstream of the client's own wire API", "to an upstream of another wire API"),
    ("---", "---", "---"),
    (CARRIED, "in the internal schema (`gateway/schema.py`); every adapter maps it", "the adapter's mapping"),
    (TRANSLATED, "read into the schema in another shape", "the stated mapping"),
    (
        PASSED,
        "verbatim (`Request.native`, `NativeFields.paths`)",
        "refused: 400 naming the field and the model",
    ),
    (
        SERVING,
        "verbatim (`Request.native`, `NativeFields.serving`)",
        "dropped: named in `x-turnstile-dropped` and a transcript note",
    ),
    (REFUSED, "400 naming the field (the gateway cannot relay what it asks for)", "the same"),
    (HEADER, "an SDK parameter sent as an HTTP header, not a body field", ""),
)

_INTRO = """\
# Fidelity: every request field has a class

Nothing a client sends is accepted and lost. Every request field of each client dialect is in
exactly one class, and the class decides what each upstream wire API gets:

{classes}

*Serving* fields only steer how the upstream serves the turn (tier, speed, prompt-cache keys and
automatic caching, storage, attribution) and do not change the answer's meaning;
*passed-through* fields change the answer (logit bias,
verbosity, web search, code containers, MCP connector), so toward an API that cannot carry them
the request is refused rather than answered differently. A value that asks for nothing
(`n: 1`, `logprobs: false`, `frequency_penalty: 0`, `logit_bias: {}`, `modalities: ["text"]`,
null; toward another wire API `store: false` and `service_tier: "auto"`) is accepted and carries
nothing (nothing named). A top-level field the OpenAI Chat or Anthropic table
does not list (a vendor extension such as vLLM's `repetition_penalty`) is passed through; the
Responses and Gemini edges refuse an unknown top-level field by name (their notes below).

The two OpenAI wire APIs share many same-wire fields, so between them such a field is
translated, not dropped or refused (`gateway/providers/passthrough.py` `SIBLINGS`): a Chat
client's `prompt_cache_key`, `prompt_cache_retention`, `prompt_cache_options`,
`safety_identifier`, `service_tier`, `store`, `moderation` and `verbosity` (as `text.verbosity`)
reach a Responses upstream; a Responses client's `prompt_cache_*`, `safety_identifier`,
`service_tier`, `moderation` and `text.verbosity` (as `verbosity`) reach a Chat upstream when
the value fits Chat's type. The other shared fields are in the schema (`user`, `metadata`,
`parallel_tool_calls`, the output limit, the reasoning effort); log probabilities are refused
on both, whatever the target (the gateway's answers carry none).

Per-tool keys of the Anthropic dialect besides `name`, `description`, `input_schema`, `strict`
and `cache_control` are carried to an Anthropic upstream on that tool: `defer_loading` and
`eager_input_streaming` are serving (dropped elsewhere as `tools[i].defer_loading`), any other
(`input_examples`, `allowed_callers`) is passed through.

`cache_control` marks on blocks, tools and tool results (both dialects) reach an Anthropic
upstream as sent; toward any other wire API they are dropped and named (`cache_control` in
`x-turnstile-dropped`, the first location in the transcript note): OpenAI and Gemini cache
prompt prefixes by themselves.

Mid-conversation system messages stay in place: an OpenAI Chat upstream gets them as `system`
messages where they were; an Anthropic upstream gets the leading ones as the top-level `system`
and later ones as `role: system` messages in place (the Messages API's `SystemMessageParam`),
so the cached prefix before them does not change; a Gemini upstream (no system role in
`contents`) gets a later one in place as a user text part `<system_note>...</system_note>`.
`developer` messages reach both OpenAI APIs as `developer` and every other API as `system`.

`seed` and the sampling penalties are in the schema (read from an OpenAI Chat client's fields
and from a Gemini client's `generationConfig`): an OpenAI Chat and a Gemini upstream
(`generationConfig.seed` / `presencePenalty` / `frequencyPenalty`) get them; toward any other
the seed (best-effort determinism) is dropped and named, a penalty refused by name. Fields
inside messages and parts have their own table below; the dropped ones are named once per
field (`name`, `detail`, `filename`), the transcript note listing where they were. A refusal
or a dropped note names a schema field as the client's dialect does (a Gemini client's
`generationConfig.stopSequences`, `generationConfig.presencePenalty`, `generationConfig.seed`,
`generationConfig.topK`; an Anthropic client's `stop_sequences`, `metadata.user_id`):
`gateway/client_names.py`.

This file is generated by `markdown()` of `gateway/edges/fidelity.py` (print it to this path;
the Responses and Gemini tables live in `fidelity_responses.py` and `fidelity_gemini.py`);
`tests/gateway/edges/test_fidelity.py` fails when a field of the official SDKs' request types
(`openai` Chat Completions and Responses, `anthropic` and its beta, `google-genai`) has no class
here, when a key of their nested types is neither read nor refused by name by the edge, or when
this file differs from the table.
"""


def markdown() -> str:
    """``docs/fidelity.md``: the rule and one table per dialect (field, class, same API, other APIs)."""
    lines = [_INTRO.replace("{classes}", "\n".join(f"| {' | '.join(row)} |" for row in _CLASS_ROWS)).rstrip()]
    for api, table in _TABLES.items():
        lines += [
            "",
            f"## {_TITLES[api]} (`{api}`)",
            "",
            *([textwrap.fill(_NOTES[api], 96), ""] if api in _NOTES else []),
            f"| field | class | to {api} | to other wire APIs |",
            "|---|---|---|---|",
        ]
        for name in sorted(table):
            r = table[name]
            lines.append(f"| `{name}` | {r.cls} | {r.same} | {r.other} |")
    lines += [
        "",
        "## Nested fields (all dialects)",
        "",
        "| field | class | to the client's own wire API | to other wire APIs |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {r.cls} | {r.same} | {r.other} |" for name, r in NESTED.items()]
    return "\n".join(lines) + "\n"
