"""The internal vocabulary of Turnstile.

Every client dialect is parsed into these models at the edge (``gateway/edges``) and every
upstream wire format is converted from and to them in ``gateway/providers``. Nothing above
those two packages uses anything else: what is checked, routed, accounted and stored is
this schema, never raw provider JSON.

Conventions
-----------
* Token counts are integers of tokens; costs are USD floats.
* ``Usage.input_tokens`` counts *uncached* input only. Cache-read and cache-write tokens are
  counted in their own fields and never also as plain input (Anthropic's convention; OpenAI's
  ``prompt_tokens`` includes cached tokens and is split by the adapter).
* ``Usage.reasoning_tokens`` is the part of ``output_tokens`` spent on reasoning.
* Content-part ``index`` in stream events is the position of the part in the assistant
  message being built, counted over all part kinds from 0.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.redaction import redact_secrets

# ---------------------------------------------------------------------------- provenance


class Provenance(BaseModel):
    """Who produced a signed part: the wire API, the provider (vendor) and the model.

    Signed thinking (and Gemini's thought signatures) are only valid for the provider and
    model that produced them, so they travel with this record.
    """

    model_config = ConfigDict(frozen=True)

    api: str
    provider: str = ""
    model: str = ""


# ---------------------------------------------------------------------------- content parts


class TextPart(BaseModel):
    """Plain text. ``cache_control`` is the client's prompt-cache marker, passed through.
    ``citations`` are Anthropic's citations of the text (``web_search_result_location``, ...),
    verbatim: kept for an Anthropic upstream and an Anthropic client only (an edge names them
    dropped toward another wire API)."""

    type: Literal["text"] = "text"
    text: str
    cache_control: dict[str, Any] | None = None
    citations: list[Any] | None = None
    own_keys: dict[str, Any] | None = None
    """The client's keys of this part the schema has no slot for (OpenAI
    ``prompt_cache_breakpoint``, a Responses ``input_file``'s ``detail``): set on the part for an
    upstream of the client's own wire API (``Request.native.api``) only; the edge names them in
    ``NativeFields.serving`` (dropped and named toward another wire API)."""


class ImagePart(BaseModel):
    """An image, either by URL or inline as base64 ``data`` with its ``media_type``.
    ``detail`` is OpenAI's image detail level (``low``, ``high``, ``original``; ``auto`` or
    None ask for nothing), as sent: only the OpenAI adapters (Chat ``image_url.detail``,
    Responses ``input_image.detail``) send it; toward any other wire API it is dropped and
    named (:mod:`gateway.layers.target_fields`). ``transformations`` is an Anthropic client's
    own (``{"oversized_image": "error"}``), sent verbatim to an Anthropic upstream only (toward
    another wire API dropped and named: ``NativeFields.serving``)."""

    type: Literal["image"] = "image"
    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    detail: str | None = None
    cache_control: dict[str, Any] | None = None
    transformations: dict[str, Any] | None = None  # Anthropic's image transformations, verbatim
    file_id: str | None = None
    """An image uploaded to Anthropic's Files API (an Anthropic client's ``file`` source): sent
    to an Anthropic upstream only (the edge names its path in ``NativeFields.paths``: refused
    toward any other wire API)."""
    own_keys: dict[str, Any] | None = None
    """The client's keys of this part the schema has no slot for (OpenAI
    ``prompt_cache_breakpoint``, a Responses ``input_file``'s ``detail``): set on the part for an
    upstream of the client's own wire API (``Request.native.api``) only; the edge names them in
    ``NativeFields.serving`` (dropped and named toward another wire API)."""


class DocumentPart(BaseModel):
    """A document (PDF, plain text, ...) for the model to read, modelled like :class:`ImagePart`.

    Exactly one source is set: ``url``, inline base64 ``data`` (with ``media_type``, e.g.
    ``application/pdf``), plain ``text`` (Anthropic's ``text`` source, ``media_type``
    ``text/plain``), or ``file_id``: a file uploaded to a provider, valid only for the wire API
    named in ``file_api`` (it is refused toward any other). ``filename`` is the client's name
    for it (Anthropic ``title``, OpenAI ``filename``). ``context`` and ``citations`` are
    Anthropic's document options (refused toward APIs without them); ``src`` is the part's
    location in the client's request (``messages[1].content[0]``), for error messages only.
    """

    type: Literal["document"] = "document"
    url: str | None = None
    data: str | None = None
    text: str | None = None
    file_id: str | None = None
    file_api: str | None = None
    media_type: str | None = None
    filename: str | None = None
    context: str | None = None
    citations: dict[str, Any] | None = None
    cache_control: dict[str, Any] | None = None
    content_source: str | list[Any] | None = None
    """Anthropic's ``content`` source (a string, or text and image blocks), verbatim: an
    Anthropic upstream gets it as sent; any other gets ``text`` (its text blocks joined), and a
    request whose ``content`` source holds images is refused toward it."""
    src: str | None = Field(default=None, exclude=True)
    own_keys: dict[str, Any] | None = None
    """The client's keys of this part the schema has no slot for (OpenAI
    ``prompt_cache_breakpoint``, a Responses ``input_file``'s ``detail``): set on the part for an
    upstream of the client's own wire API (``Request.native.api``) only; the edge names them in
    ``NativeFields.serving`` (dropped and named toward another wire API)."""


class AudioPart(BaseModel):
    """Audio input, inline as base64 ``data`` or by ``url`` (Gemini ``fileData``), with its
    ``media_type`` (``audio/wav``, ``audio/mpeg``, ...); ``src`` as on :class:`DocumentPart`."""

    type: Literal["audio"] = "audio"
    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    src: str | None = Field(default=None, exclude=True)


class ThinkingPart(BaseModel):
    """Model reasoning with its opaque ``signature``; valid only for ``provenance``."""

    type: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = None
    provenance: Provenance | None = None


class RedactedThinkingPart(BaseModel):
    """Encrypted reasoning (Anthropic ``redacted_thinking``); ``data`` is opaque."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str
    provenance: Provenance | None = None


class ToolCallPart(BaseModel):
    """A tool call issued by the model.

    ``arguments`` is the parsed JSON object; ``raw_arguments`` the string exactly as received
    (byte-exact, used when re-emitting). ``signature``/``provenance`` carry a provider's opaque
    signature attached to the call itself (Gemini ``thoughtSignature`` on ``functionCall``).
    ``src`` is the location in the client's request (e.g. ``messages[1].tool_calls[0]``),
    used in error messages only. ``caller`` is Anthropic's ``tool_use.caller`` verbatim (a call
    made by code the server ran: programmatic tool calling, ``{"type":
    "code_execution_20250825", "tool_id": ...}``): sent only to an Anthropic upstream (an
    Anthropic client's request naming one is refused toward any other wire API through
    ``NativeFields.paths``) and rendered only to an Anthropic client.
    """

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str = "{}"
    signature: str | None = None
    provenance: Provenance | None = None
    caller: dict[str, Any] | None = None
    cache_control: dict[str, Any] | None = None  # Anthropic's mark on a tool_use block, verbatim
    toolset_name: str | None = None  # Anthropic's tool_use toolset_name, verbatim
    own_keys: dict[str, Any] | None = None
    """The client's keys of this call the schema has no slot for (a Responses ``function_call``
    item's ``status``, ``async``, ``caller``): set on the call for an upstream of the wire API of
    its message's ``own`` only (dropped and named, or refused, toward another)."""
    src: str | None = Field(default=None, exclude=True)


class NativePart(BaseModel):
    """A content block of wire API ``api`` that this schema has no place for, kept verbatim
    (``block``, the JSON object as sent): Anthropic server tool calls and their results
    (``server_tool_use``, ``web_search_tool_result``, ``mcp_tool_use``, ...) in an assistant
    turn, ``tool_reference`` blocks (tool search) in a tool result. Sent only to an upstream of
    ``api``: an edge names its ``src`` in ``NativeFields.paths``, so a request holding one is
    refused toward any other wire API. In an answer it is rendered verbatim by the edge of
    ``api``; other edges leave it out (an answer holds one only when the request asked for server
    tools, which only a client of ``api`` can send). Not a tool call: the pairing guard never
    sees it."""

    type: Literal["native"] = "native"
    api: str
    block: dict[str, Any]
    text: str | None = None
    """What an upstream of another wire API gets instead, as a text part (a translation: a
    ``tool_reference`` is ``Tool loaded: <name>``, that tool being declared there like any
    other); None: another wire API cannot take the block (the edge names its path in
    ``NativeFields.paths``: refused there)."""
    src: str | None = Field(default=None, exclude=True)


UserPart = Annotated[TextPart | ImagePart | DocumentPart | AudioPart, Field(discriminator="type")]
AssistantPart = Annotated[
    TextPart | ThinkingPart | RedactedThinkingPart | ToolCallPart | NativePart, Field(discriminator="type")
]
ResultPart = Annotated[TextPart | ImagePart | NativePart, Field(discriminator="type")]
AnyPart = (
    TextPart
    | ImagePart
    | DocumentPart
    | AudioPart
    | ThinkingPart
    | RedactedThinkingPart
    | ToolCallPart
    | NativePart
)


# ---------------------------------------------------------------------------- messages


class OwnKeys(BaseModel):
    """A message's keys of the client's own wire API (``api``) that the schema has no slot for,
    kept on the message so that they survive the session log (a context rebuilt from it still
    has them): an OpenAI Chat message's vendor keys, an assistant's ``audio`` reference or
    ``reasoning_content``; an Anthropic message's keys besides ``role`` and ``content`` (a
    system message's per-turn ``output_config``); a Responses item's ``phase`` / ``status``; a
    Gemini client's ``functionResponse.response`` object (``{"response": {...}}``). ``keys``
    may be empty: the message's parts then carry keys of ``api`` (``own_keys``).

    Only the adapter of ``api`` reads them (on that message and its parts); toward any other
    wire API an edge names the client's paths in ``NativeFields`` (refused or dropped and
    named), and a context rebuilt from the log names them dropped
    (:func:`foreign_own_keys`)."""

    model_config = ConfigDict(frozen=True)

    api: str
    keys: dict[str, Any] = Field(default_factory=dict)


def own_for(msg: Any, api: str) -> OwnKeys | None:
    """``msg.own`` when it holds keys of wire API ``api`` (the adapter of ``api`` then sets them
    on the message and its parts' ``own_keys`` on the parts), else None."""
    own = msg.own
    return own if own is not None and own.api == api else None


class SystemMessage(BaseModel):
    """System instructions. Several may appear, anywhere in the conversation: each adapter
    keeps a mid-conversation one in place (its module says how). ``developer`` is True for an
    OpenAI ``developer`` message: the OpenAI adapters send it as ``role: developer`` (reasoning
    models weigh it differently from ``system``); every other adapter sends it as a system
    message. ``name`` is the OpenAI Chat participant name (user, assistant and system
    messages alike): sent only by the OpenAI Chat adapter, dropped and named elsewhere
    (:mod:`gateway.layers.target_fields`)."""

    role: Literal["system"] = "system"
    content: list[TextPart]
    developer: bool = False
    name: str | None = None
    own: OwnKeys | None = None  # the client's own keys of this message (OwnKeys)
    src: str | None = Field(default=None, exclude=True)


class UserMessage(BaseModel):
    """A user turn: text, images, documents and audio; ``name`` as on :class:`SystemMessage`."""

    role: Literal["user"] = "user"
    content: list[UserPart]
    name: str | None = None
    own: OwnKeys | None = None  # the client's own keys of this message (OwnKeys)
    src: str | None = Field(default=None, exclude=True)


class AssistantMessage(BaseModel):
    """A model turn: text, thinking and tool calls, in the order the model produced them;
    ``name`` as on :class:`SystemMessage`."""

    role: Literal["assistant"] = "assistant"
    content: list[AssistantPart] = Field(default_factory=list)
    name: str | None = None
    own: OwnKeys | None = None  # the client's own keys of this message (OwnKeys)
    src: str | None = Field(default=None, exclude=True)

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The tool-call parts, in issue order."""
        return [p for p in self.content if isinstance(p, ToolCallPart)]

    @property
    def text(self) -> str:
        """All text parts joined."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class ToolResultMessage(BaseModel):
    """The result of one tool call, paired to it by ``tool_call_id``.

    ``name`` is the tool's name when the client dialect carries it (some upstreams, such as
    Gemini, pair results by name and need it).
    """

    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: list[ResultPart] = Field(default_factory=list)
    is_error: bool = False
    name: str | None = None
    cache_control: dict[str, Any] | None = None
    toolset_name: str | None = None  # Anthropic's tool_result toolset_name, verbatim
    own: OwnKeys | None = None  # the client's own keys of this message (OwnKeys)
    src: str | None = Field(default=None, exclude=True)


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")
]


# ---------------------------------------------------------------------------- tools and options


class ToolDefinition(BaseModel):
    """A tool offered to the model; ``parameters`` is a JSON Schema object.

    ``freeform`` is set when the client declared a free-form tool (an OpenAI Responses
    ``custom`` tool): its ``format`` verbatim (``{"type": "text"}`` or a grammar). Its
    ``parameters`` are then the emulation every other upstream gets: one required string
    argument ``input`` (the grammar described in ``description``); an upstream of the
    Responses API can send the tool as ``custom`` with this format instead. Either way a call
    of it carries ``{"input": <text>}`` as its arguments."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None
    cache_control: dict[str, Any] | None = None
    freeform: dict[str, Any] | None = None


def freeform_note(freeform: dict[str, Any] | None) -> str | None:
    """What an emulated free-form tool's description says of its grammar (appended after a
    blank line to the client's description): ``"The input must match this <syntax>
    grammar:\n<definition>"`` for a ``grammar`` format, None for ``text`` or no format. A
    Responses upstream sending the tool natively removes it again."""
    if not freeform or freeform.get("type") != "grammar":
        return None
    return f"The input must match this {freeform.get('syntax')} grammar:\n{freeform.get('definition')}"


class ToolChoice(BaseModel):
    """How the model may use tools: ``auto``, ``none``, ``required`` (any tool) or ``tool``
    (the one named); ``parallel`` False forbids several calls in one turn; ``allowed`` limits
    ``auto`` / ``required`` to the tools named."""

    mode: Literal["auto", "none", "required", "tool"] = "auto"
    name: str | None = None
    parallel: bool | None = None
    allowed: list[str] | None = None
    """The names of the only tools the model may call (OpenAI ``allowed_tools``, mode ``auto`` or
    ``required``; the tool list itself stays whole, for the upstream's prompt cache): both OpenAI
    adapters send an ``allowed_tools`` choice; toward any other wire API the target layer sends
    only those tools (:func:`gateway.layers.target.allowed_only`)."""


class ResponseFormat(BaseModel):
    """Structured output: ``text``, ``json_object`` or ``json_schema`` with ``schema``, its
    ``name`` and ``description`` (what the answer is, for the model: OpenAI's
    ``json_schema.description``; a target without that slot gets it as the root schema's
    ``description`` when the schema has none)."""

    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None
    dialect_strict: bool = False
    """True when the client's dialect has only strict structured output (Anthropic
    ``output_config.format``: the answer always matches the schema) and ``strict`` was not
    asked for by name: an OpenAI upstream is sent ``strict: true`` where the schema meets
    OpenAI's strict rules (:func:`gateway.providers.wire_common.openai_strict_ok`), else the
    strictness is dropped and named (:mod:`gateway.layers.target`)."""

    model_config = ConfigDict(populate_by_name=True)


class ThinkingConfig(BaseModel):
    """Extended reasoning: ``budget_tokens`` (tokens) or a coarse ``effort``."""

    enabled: bool = True
    budget_tokens: int | None = None
    effort: Literal["minimal", "low", "medium", "high"] | None = None


class NativeFields(BaseModel):
    """Fields of the client's own wire API that this schema has no place for, carried as the
    client sent them to an upstream of that same wire API (``api``, e.g. ``gemini``: its
    ``safetySettings``, built-in tools, ``generationConfig.seed``) and to no other. ``fields``
    is shaped like the upstream body: top-level keys to set, ``tools`` entries to append (Gemini),
    ``generationConfig`` / ``toolConfig`` keys to add (Gemini), ``tool_fields`` (tool name ->
    keys set on that tool's entry: Anthropic ``defer_loading``). Filled by an edge; read by the
    target layer and by the provider of ``api`` (the merge).

    Toward an upstream of any other wire API each of the client's field paths is handled by its
    class (the table of :mod:`gateway.edges.fidelity`, written out in ``docs/fidelity.md``):

    * ``paths``: fields that change the answer: the request is refused (HTTP 400) naming them;
    * ``serving``: fields that only steer how the upstream serves the turn (service tier, prompt
      cache keys, storage; dotted names: ``text.verbosity``): dropped, each named in
      ``x-turnstile-dropped`` and a transcript note (:mod:`gateway.providers.passthrough` also
      drops the ones an upstream of the same API refuses for its model);
    * any other key of ``fields`` is the same-wire verbatim form of a field the schema also
      carries (Anthropic ``thinking``): the other upstream gets the schema's translation."""

    model_config = ConfigDict(frozen=True)

    api: str
    fields: dict[str, Any]
    paths: list[str] = Field(default_factory=list)
    serving: list[str] = Field(default_factory=list)
    translated: list[str] = Field(default_factory=list)
    """Paths of :class:`NativePart` blocks that another wire API gets as their ``text``
    (``tool_reference`` blocks): the target layer swaps them for text parts toward it."""


class Request(BaseModel):
    """One turn as the client asked for it, in the internal schema.

    ``model`` is the name the client used (an alias or a deployment); ``max_output_tokens``
    is in tokens; ``seed`` (best-effort determinism), ``presence_penalty`` and
    ``frequency_penalty`` (OpenAI's range, -2.0 to 2.0; 0 is never set) reach the APIs that
    have them (OpenAI Chat, Gemini ``generationConfig``): toward any other the seed is dropped
    and named, a penalty refused (:mod:`gateway.layers.target_fields`); ``metadata`` is
    free-form client metadata (never sent upstream unless the API has a slot for it).
    """

    model: str
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: list[str] = Field(default_factory=list)
    response_format: ResponseFormat | None = None
    thinking: ThinkingConfig | None = None
    stream: bool = False
    include_usage: bool = False
    user: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    mcp_servers: list[str] = Field(default_factory=list)
    """Ids of registered MCP servers whose tools the gateway runs itself for this turn (the
    server-side tool loop, :mod:`gateway.tool_loop`), in the order the client named them. Edges
    fill it from a dialect's MCP tool entry (``{"type": "mcp", "server": "<id>"}`` in
    ``tools``); a model alias may add more (``ModelAlias.mcp_servers``). Never sent upstream:
    the loop turns it into :class:`ToolDefinition` entries of the servers' exposed tools."""
    native: NativeFields | None = None
    """Same-wire fields with no place in this schema (:class:`NativeFields`); None for most
    requests."""
    logged_own: bool = False
    """True when messages put back from the session log (a stored Responses chain continued, a
    message thread) carry :class:`OwnKeys`: the target layer names those of another wire API
    than the deployment's dropped (``history.<key>``), since no client path names them."""
    cache_marks: bool = False
    """True when the client's body may hold ``cache_control`` marks (on blocks, tools, tool
    results: carried on the parts): set by the edges from a cheap look at the body, so that the
    target layer looks for the marks only then (it names them dropped toward a non-Anthropic
    upstream, :func:`gateway.layers.target.cache_mark`)."""
    anthropic_betas: list[str] = Field(default_factory=list)
    """Passed through to an Anthropic Messages upstream only: the client's ``anthropic-beta``
    header values that the config's allow/deny list admits (``gateway.config.AnthropicHeaders``).
    Filled by the target layer for an ``anthropic_messages`` deployment, read only by that
    adapter (merged with the deployment's own betas); empty for every other target."""
    anthropic_version: str | None = None
    """Passed through like :attr:`anthropic_betas`: the client's ``anthropic-version`` when the
    config allows it (else the deployment's own is sent)."""
    anthropic_headers: dict[str, str] = Field(default_factory=dict)
    """Passed through like :attr:`anthropic_betas`: the client's other headers that the config
    forwards (``anthropic.forward``: Claude Code's ``x-claude-code-session-id``, ``x-app``), by
    lower-case name."""


# ---------------------------------------------------------------------------- response


StopReason = Literal["stop", "length", "tool_use", "content_filter", "error", "aborted", "pause"]
"""Why an answer ended. ``pause``: the upstream paused a long server-side tool loop (Anthropic
``pause_turn``, server tools); the client sends the answer back as it is to let it continue.
An Anthropic client sees ``pause_turn``; every other edge renders its plain end (such answers
come only from requests an Anthropic client made, since only it can ask for server tools)."""


class Usage(BaseModel):
    """Token usage of one upstream call (tokens) and its cost (USD).

    ``input_tokens`` excludes cache reads and writes; ``reasoning_tokens`` is included in
    ``output_tokens``. ``estimated`` is True when the upstream reported nothing and Turnstile
    counted tokens itself.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False
    cost_usd: float | None = None

    @property
    def total_input_tokens(self) -> int:
        """Uncached input + cache reads + cache writes (tokens)."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


class WithheldToolCall(BaseModel):
    """A tool call that was not handed to the client because its arguments were not fully
    received (upstream stopped for length) or are not complete JSON."""

    id: str
    name: str
    raw_arguments: str
    reason: str


class ReplacedCallId(BaseModel):
    """A tool-call id an upstream sent that no client could send back (``reason``: the phrase of
    :func:`gateway.call_id_rule.unusable_call_id`), and the safe ``id`` that replaced it in the
    answer (:mod:`gateway.guards.upstream_ids`). ``upstream_id`` is kept exactly as sent."""

    id: str
    upstream_id: str
    reason: str


class Response(BaseModel):
    """A complete model answer in the internal schema. ``replaced_call_ids`` lists the
    upstream's tool-call ids that were replaced (kept for the transcript, never rendered)."""

    id: str
    model: str
    message: AssistantMessage
    stop_reason: StopReason
    usage: Usage = Field(default_factory=Usage)
    withheld_tool_calls: list[WithheldToolCall] = Field(default_factory=list)
    replaced_call_ids: list[ReplacedCallId] = Field(default_factory=list)


# ---------------------------------------------------------------------------- stream events


class MessageStart(BaseModel):
    """First event of a stream: the upstream message id and model, and any usage known
    at start (Anthropic reports input tokens here)."""

    type: Literal["message_start"] = "message_start"
    id: str
    model: str
    usage: Usage | None = None


class PartStart(BaseModel):
    """A content part begins at ``index``. For ``kind == "tool_call"`` the id and name are
    known; for ``thinking`` the provenance; ``signature`` may already be known. For ``native``
    (a :class:`NativePart`), ``data`` is the block's JSON as it started (``api`` its wire API)
    and deltas carry its ``arguments`` (Anthropic ``input_json_delta``) fragments. ``caller``:
    a tool call's :attr:`ToolCallPart.caller`; ``toolset_name`` its
    :attr:`ToolCallPart.toolset_name`."""

    type: Literal["part_start"] = "part_start"
    index: int
    kind: Literal["text", "thinking", "redacted_thinking", "tool_call", "native"]
    id: str | None = None
    name: str | None = None
    data: str | None = None
    signature: str | None = None
    provenance: Provenance | None = None
    api: str | None = None
    caller: dict[str, Any] | None = None
    toolset_name: str | None = None
    own_keys: dict[str, Any] | None = None
    """A text part's keys of wire API ``api`` the schema has no slot for (a Responses upstream's
    ``phase`` of the message item the text is in): :attr:`TextPart.own_keys` of the part built."""


class PartDelta(BaseModel):
    """More of the part at ``index``: ``text`` for text and thinking, ``arguments`` (a raw
    JSON fragment) for tool calls, ``signature`` for a thinking signature."""

    type: Literal["part_delta"] = "part_delta"
    index: int
    text: str | None = None
    arguments: str | None = None
    signature: str | None = None
    citation: dict[str, Any] | None = None
    """One more citation of a text part (Anthropic ``citations_delta``), verbatim."""


class PartEnd(BaseModel):
    """The part at ``index`` is complete."""

    type: Literal["part_end"] = "part_end"
    index: int


class MessageEnd(BaseModel):
    """Last event: the stop reason and the final usage (cumulative for the whole call);
    ``withheld_tool_calls`` and ``replaced_call_ids`` as in :class:`Response`."""

    type: Literal["message_end"] = "message_end"
    stop_reason: StopReason
    usage: Usage = Field(default_factory=Usage)
    withheld_tool_calls: list[WithheldToolCall] = Field(default_factory=list)
    replaced_call_ids: list[ReplacedCallId] = Field(default_factory=list)


class StreamError(BaseModel):
    """The stream failed after it started; ``kind`` is an error type of ``gateway.errors``.
    ``message`` (an upstream's text) is kept with every credential cut out
    (:func:`gateway.redaction.redact_secrets`)."""

    type: Literal["error"] = "error"
    kind: str
    message: str
    status: int = 502

    @field_validator("message")
    @classmethod
    def _redacted(cls, message: str) -> str:
        return redact_secrets(message)


StreamEvent = MessageStart | PartStart | PartDelta | PartEnd | MessageEnd | StreamError


class ToolProgress(BaseModel):
    """Progress of the server-side tool loop inside a stream (not part of the answer): the
    call ``id`` of tool ``name`` finished (``is_error`` when its result is an error result).
    Emitted in completion order; edges render it as a comment or keep-alive event that SDKs
    ignore. ``done`` False: no call finished, the calls still run (a keep-alive, ``id`` and
    ``name`` empty). Deliberately not a member of :data:`StreamEvent`."""

    type: Literal["tool_progress"] = "tool_progress"
    id: str
    name: str
    is_error: bool = False
    done: bool = True


_M = TypeVar("_M", bound=BaseModel)


def evolve(model: _M, **changes: Any) -> _M:
    """A shallow copy of ``model`` with the fields in ``changes`` replaced, not validated: what
    ``model.model_copy(update=changes)`` returns, at about two thirds of its cost (it is called
    several times per turn). The changed fields count as set. Models are never changed after
    they are made, so the copy may share every unchanged field with ``model``."""
    cls = type(model)
    new = cls.__new__(cls)
    fields = model.__dict__.copy()
    fields.update(changes)
    object.__setattr__(new, "__dict__", fields)
    object.__setattr__(new, "__pydantic_fields_set__", model.__pydantic_fields_set__ | changes.keys())
    object.__setattr__(new, "__pydantic_extra__", model.__pydantic_extra__)
    object.__setattr__(new, "__pydantic_private__", model.__pydantic_private__)
    return new
