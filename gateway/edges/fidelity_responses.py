"""The fidelity table of the OpenAI Responses dialect (``POST /v1/responses``, edge
:mod:`gateway.edges.openai_responses_parse`): every top-level field of the ``openai`` SDK's
``ResponseCreateParams`` (``openai.types.responses.response_create_params``, the streaming and
non-streaming variants), each in one class, and the rows of its nested fields; assembled with
the other dialects' tables by :mod:`gateway.edges.fidelity` (``docs/fidelity.md``).

A Responses client's unlisted top-level field is refused by name (unlike Chat's vendor
extensions): the edge reads every field it takes (:data:`gateway.edges.openai_responses_parse.SERVING`,
``PASSED``, ``REFUSED`` are this table's classes, checked by a test).
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

__all__ = ["OPENAI_RESPONSES", "RESPONSES_NESTED", "RESPONSES_NOTE"]

RESPONSES_NOTE = (
    "Fields of the `openai` SDK's `ResponseCreateParams` (streaming and not), plus Codex CLI's "
    "`client_metadata`. A top-level field this table does not list is refused by name (the "
    "Responses edge reads every field it takes); so is a key the SDK types do not define on an "
    "input item, a content part, a tool, `tool_choice`, `text`, `text.format`, `reasoning` or "
    "`stream_options`."
)

_SERVING_SAME = "as sent"

OPENAI_RESPONSES: dict[str, Rule] = {
    "model": Rule(CARRIED, "the deployment's model", "the deployment's model"),
    "input": Rule(
        TRANSLATED,
        "input items rebuilt from the schema in order (`function_call` / `custom_tool_call` with their "
        "outputs, `reasoning` signed by a Responses upstream, `system` and `developer` items in place); "
        "nested fields: the nested table",
        "each API's messages (a string input is one user message); `developer` items are `system` "
        "messages outside the OpenAI APIs",
    ),
    "instructions": Rule(
        TRANSLATED,
        "a leading system message -> `instructions`",
        "OpenAI Chat: a leading `system` message; Anthropic `system`; Gemini `systemInstruction`",
    ),
    "tools": Rule(
        TRANSLATED,
        "`function` tools as sent (`strict: false` unless asked); `custom` tools natively with their "
        "`format`; `namespace` members flattened to `<namespace>.<name>` (sent as `<namespace>__<name>` "
        "to OpenAI and Anthropic, whose tool names refuse the dot; the calls mapped back); "
        "`mcp` naming a registered server -> the gateway's own tool loop (never sent upstream); "
        "hosted tools refused by name",
        "function tools (`custom` tools as a function with one string argument `input`, the grammar in "
        "the description)",
    ),
    "tool_choice": Rule(
        TRANSLATED,
        "`auto` / `none` / `required`, a function or custom tool by name (`namespace` + `name` for a "
        "member), `allowed_tools` (function and custom tools); hosted, `mcp` and other choices refused "
        "by name",
        "each API's tool choice (Anthropic `tool_choice`, Gemini `toolConfig`); `allowed_tools`: OpenAI "
        "Chat natively, elsewhere only the allowed tools offered, with its mode",
    ),
    "parallel_tool_calls": Rule(
        CARRIED,
        "as sent (with tools only)",
        "OpenAI Chat `parallel_tool_calls`, Anthropic `disable_parallel_tool_use`; Gemini has no such "
        "setting: `false` is " + DROPPED,
    ),
    "text": Rule(
        TRANSLATED,
        "`format` -> the schema's response format, sent back as `text.format`; `verbosity` (serving) "
        "as sent; a key the SDK types do not define refused by name",
        "format: native structured output or a forced tool; `text.verbosity`: OpenAI Chat `verbosity`, "
        "elsewhere " + DROPPED,
    ),
    "reasoning": Rule(
        TRANSLATED,
        "`effort` -> the schema's thinking, sent back as `reasoning.effort` (`none` and `xhigh` "
        "verbatim) to a reasoning model (toward another model " + DROPPED + ", as in Chat); `summary`, "
        "`generate_summary`, `context`, `mode` (serving) as sent to a reasoning model, else dropped "
        "and named",
        "effort: OpenAI Chat `reasoning_effort` (`none` and `xhigh` verbatim), Anthropic thinking "
        "budget, Gemini `thinkingConfig`; `reasoning.summary` / `generate_summary` / `context` / "
        "`mode`: " + DROPPED,
    ),
    "max_output_tokens": Rule(
        CARRIED, "as sent", "the deployment's `max_tokens_field` / `max_tokens` / `maxOutputTokens`"
    ),
    "temperature": Rule(CARRIED, "as sent", "as sent"),
    "top_p": Rule(CARRIED, "as sent", "as sent"),
    "metadata": Rule(
        CARRIED,
        "as sent (at most 16 string values, else refused by name; also read for the session id)",
        "OpenAI Chat (which takes `metadata` only with `store: true`, and a Responses client's `store` "
        "is the gateway's log, never the upstream's), Anthropic, Gemini: " + DROPPED,
    ),
    "user": Rule(
        CARRIED,
        "as sent",
        "OpenAI Chat `user`, Anthropic `metadata.user_id`; Gemini (no slot): " + DROPPED,
    ),
    "safety_identifier": Rule(
        TRANSLATED,
        "without `user`: the schema's user, sent as `user`; beside `user`: serving, as sent",
        "without `user`: as `user` above; beside `user`: OpenAI Chat `safety_identifier`, elsewhere "
        + DROPPED,
    ),
    "stream": Rule(CARRIED, "as sent", "each API's streaming"),
    "stream_options": Rule(
        REFUSED,
        "refused when `include_obfuscation` is true: the gateway writes the client's stream without "
        "obfuscation padding (`false` asks for nothing)",
        "the same",
    ),
    "include": Rule(
        CARRIED,
        "`reasoning.encrypted_content`: the answer's reasoning items carry their signed content (any "
        "upstream's thinking, in a Turnstile envelope); any other value refused by name",
        "the same",
    ),
    "store": Rule(
        CARRIED,
        "the answer is kept in the gateway's session log (default true); the upstream is always sent "
        "`store: false` with the whole conversation",
        "the same",
    ),
    "previous_response_id": Rule(
        CARRIED,
        "the session log: the stored chain's messages go before the new input",
        "the same",
    ),
    "truncation": Rule(SERVING, "`auto` as sent (`disabled` is the default: asks for nothing)", DROPPED),
    "prompt_cache_key": Rule(SERVING, _SERVING_SAME, "OpenAI Chat `prompt_cache_key`; elsewhere " + DROPPED),
    "prompt_cache_retention": Rule(
        SERVING, _SERVING_SAME, "OpenAI Chat `prompt_cache_retention`; elsewhere " + DROPPED
    ),
    "prompt_cache_options": Rule(
        SERVING,
        _SERVING_SAME,
        "OpenAI Chat `prompt_cache_options` when it fits Chat's (`mode`, `ttl: 30m`); else " + DROPPED,
    ),
    "service_tier": Rule(
        SERVING,
        _SERVING_SAME,
        "OpenAI Chat `service_tier` (not `ultrafast`, which Chat lacks); else " + DROPPED,
    ),
    "image": Rule(
        SERVING,
        "as sent (image context compression: how the upstream feeds images to the model)",
        DROPPED,
    ),
    "client_metadata": Rule(SERVING, "as sent (Codex CLI's client details)", DROPPED),
    "moderation": Rule(
        PASSED, "as sent", "OpenAI Chat `moderation` (the same type); elsewhere " + REFUSED_ELSEWHERE
    ),
    "access_programs": Rule(
        PASSED,
        "as sent (the access program decides what the model may answer)",
        REFUSED_ELSEWHERE,
    ),
    "top_logprobs": Rule(REFUSED, "refused above 0: answers carry no log probabilities", "refused above 0"),
    "background": Rule(
        REFUSED, "refused when true: answers are streamed or returned whole", "refused when true"
    ),
    "background_options": Rule(
        REFUSED, "refused unless empty: background responses are not run", "refused unless empty"
    ),
    "conversation": Rule(
        REFUSED,
        "refused: the gateway keeps no conversation objects (send the whole conversation, or "
        "`previous_response_id`)",
        "refused",
    ),
    "prompt": Rule(REFUSED, "refused: prompt templates live at OpenAI (send their text)", "refused"),
    "max_tool_calls": Rule(REFUSED, "refused: no hosted tool calls run here", "refused"),
    "context_management": Rule(
        REFUSED, "refused: server-side compaction (the gateway compacts sessions itself)", "refused"
    ),
}
"""OpenAI Responses request fields (https://platform.openai.com/docs/api-reference/responses/create;
``openai.types.responses.response_create_params``), plus Codex CLI's ``client_metadata``."""

RESPONSES_NESTED: dict[str, Rule] = {
    "Responses call items' and call outputs' `caller` (`program`: made by code the upstream ran)": Rule(
        PASSED,
        "as sent on that item (a tool call's `own_keys`, a result's `own`; a `direct` caller asks "
        "for nothing: not sent)",
        REFUSED_ELSEWHERE + " (`input[i].caller`), like Anthropic's `tool_use.caller`",
    ),
    "Responses call items' `async: true` and `status`, call outputs' `status`, messages' `phase` "
    "and `status`": Rule(
        SERVING,
        "as sent on that item (kept on the message in the session log, so a stored chain's later "
        "turns send them too); `async: false` and `status: completed` ask for nothing: not sent",
        DROPPED + " (`input[i].async`, `input[i].phase`, ...); an earlier turn's, from the session log: "
        "`history.<key>`",
    ),
    "answer: a Responses upstream's message `phase` (`commentary` / `final_answer`, gpt-5.x)": Rule(
        CARRIED,
        "on the client's `message` output items, whole and streamed (`output_item.added` / `.done`); "
        "kept on the answer's text in the session log, so a stored chain's later turns send it back",
        "an answer field: another dialect's client has no slot for it (its text is the same); "
        "toward another upstream from the session log: `history.phase` " + DROPPED,
    ),
    "Responses `reasoning` input items (`summary`, `content`, `encrypted_content`)": Rule(
        CARRIED,
        "as sent to any Responses deployment (a raw `encrypted_content` is OpenAI's own, any model: "
        "the upstream verifies it, as Anthropic a raw `signature`), with an empty `summary` too; a "
        "Turnstile envelope's only to the model that signed it",
        "thinking made by OpenAI: the foreign-thinking policy (`guards.foreign_thinking`: removed, "
        "`thinking` " + DROPPED + ")",
    ),
    "Responses call items' `id`, call outputs' `id`, `name` and `namespace`, `reasoning` items' `id` "
    "and `status`, messages' `id`": Rule(
        CARRIED,
        "nothing to carry: echoes of the answer's own items (a call output's name and namespace "
        "are its call's)",
        "the same",
    ),
    "Responses `namespace` members' `defer_loading`, `allowed_callers`, `async`, `output_schema`": Rule(
        REFUSED,
        "refused when set: members are flattened into the request's tools, where no option of a "
        "namespace member is kept",
        "the same",
    ),
    "Responses `mcp` tool keys besides `type`, `server_label`, `require_approval: never`": Rule(
        REFUSED,
        "400 naming the key: a remote server OpenAI would call (`server_url`, `connector_id`, "
        "`tunnel_id`, `headers`, `authorization`, `allowed_tools`, `server_description`) or how it "
        "loads its tools (`defer_loading`, `allowed_callers`); the gateway runs registered servers",
        "the same",
    ),
    "Responses input item types `program`, `program_output`, `compaction_trigger`, "
    "`configuration_update`, `item_reference` and hosted-tool items; tool types "
    "`programmatic_tool_calling` and hosted tools": Rule(
        REFUSED,
        "400 naming `input[i].type` / `tools[i].type`: no upstream here runs them",
        "the same",
    ),
    "Responses client-run tool types `local_shell`, `shell`, `apply_patch` and their items "
    "(`local_shell_call` / `_output`, `shell_call` / `_output`, `apply_patch_call` / `_output`)": Rule(
        REFUSED,
        "400 naming `tools[i].type` / `input[i].type`: the upstream answers them with output items of "
        "their own (and `response.shell_call_command.*` stream events) that the gateway does not relay "
        "yet, so a Responses upstream cannot get them either; Codex declares the same tools as "
        "function / custom tools by default (those are carried)",
        "the same",
    ),
    "Responses `tool_choice.namespace`, `function_call.parsed_arguments`, `output_text.parsed`, "
    "`status` and `namespace` on `custom_tool_call_output`": Rule(
        CARRIED,
        "read beside the SDK's keys: a namespace member chosen by name; the SDK's `parse()` echoes "
        "(read as `arguments` and `text`); Codex CLI's echoes of its output items",
        "the same",
    ),
}
"""Nested fields of the Responses dialect beyond the rows shared with Chat in
:data:`gateway.edges.fidelity.NESTED`."""
