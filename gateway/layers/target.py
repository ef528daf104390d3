"""Target layer: the request made fit for the deployment being tried (``turn.deployment``).

The deployment must be able to take what the request carries (tools, images: else
:class:`CapabilityError`, HTTP 400, naming the message); a request without an output limit
gets the deployment's ``max_output_tokens``; the thinking policy adapts thinking parts to the
target's provenance (:mod:`gateway.thinking_fit`: repairs kept on the turn, thinking removed or
turned off named ``thinking`` in ``x-turnstile-dropped``; for a session-bound turn the window
layer applies it to the context it rebuilds);
the client's ``anthropic-beta`` / ``anthropic-version`` headers are admitted for an Anthropic
deployment or dropped for any other (a version the Anthropic edge does not speak is named
toward every target), and the headers ``anthropic.forward`` names sent on to an
Anthropic deployment only (:mod:`gateway.anthropic_headers`); the client's same-wire
fields (``request.native``) reach a deployment of that wire API (less those it refuses for its
model: :func:`gateway.providers.passthrough.split`), and toward any other are refused
(answer-changing ones) or dropped (serving-only ones, and ``cache_control`` marks toward a
non-Anthropic target: :mod:`gateway.edges.fidelity`); a limit of one tool call per turn
(``parallel_tool_calls: false``, Anthropic ``disable_parallel_tool_use``) toward a wire API
with no such setting (Gemini) is dropped, and so is a tool's ``strict: true`` toward an upstream
that cannot enforce it (Gemini; a Claude model without structured outputs); the schema's fields
only some wire APIs have a slot for (message names, image detail, document names, seed,
penalties) are dropped or refused by :mod:`gateway.layers.target_fields`. What is dropped is
noted on the turn: transcript row, ``x-turnstile-dropped`` header, one log line. Keys of
another wire API on messages put back from the session log (a continued Responses chain or
message thread: ``request.logged_own``) are named too (``history.<key>``).
"""

from __future__ import annotations

import structlog

from gateway.anthropic_headers import EDGE_VERSIONS, admit, client_betas, forwarded
from gateway.client_names import client_name
from gateway.config import Deployment
from gateway.layers.target_fields import check_fields
from gateway.layers.target_media import check_capabilities
from gateway.providers import passthrough
from gateway.providers.anthropic_common import API as ANTHROPIC
from gateway.providers.anthropic_output import strict_input_schema
from gateway.providers.gemini_models import model_family
from gateway.providers.wire_common import openai_strict_ok
from gateway.schema import (
    NativeFields,
    NativePart,
    Request,
    Response,
    ResponseFormat,
    TextPart,
    ToolResultMessage,
    evolve,
)
from gateway.sessions.turns import foreign_own_keys, note_foreign_keys
from gateway.thinking_fit import fit_claude_thinking, fit_openai_reasoning, fit_thinking, note_unforced_output
from gateway.turn import Batches, Gateway, Service, Turn

log = structlog.get_logger("turnstile.pipeline")

NO_PARALLEL_LIMIT_APIS = frozenset({"gemini"})
"""Wire APIs with no setting that limits an answer to one tool call (Gemini's
``functionCallingConfig`` has only ``mode`` and ``allowedFunctionNames``)."""
PARALLEL_FIELD = {
    "anthropic_messages": ("tool_choice.disable_parallel_tool_use", True),
    "openai_chat": ("parallel_tool_calls", False),
    "openai_responses": ("parallel_tool_calls", False),
}
"""Per client dialect: the field that asks for one tool call per turn, and its value asking it."""
NO_STRICT_CHECK_APIS = frozenset({"gemini", ANTHROPIC})
"""Wire APIs where a tool's ``strict: true`` may not reach the upstream: Gemini has no such
setting; Anthropic takes it only on models with structured outputs
(:func:`gateway.providers.anthropic_output.strict_input_schema`)."""
STRICT_FIELD = {"openai_chat": "tools[{i}].function.strict"}
"""Per client dialect: where a tool's ``strict`` is (default ``tools[i].strict``)."""


_ASKS_NOTHING: dict[str, tuple[object, ...]] = {"store": (False,), "service_tier": ("auto", "default")}
"""Serving fields whose value asks nothing of an upstream of another wire API (no copy kept, the
default tier): not named dropped there."""


class TargetLayer:
    """Hands the layer below the request for ``turn.deployment``."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.inner = inner
        self.policy = gw.config.guards
        self.anthropic = gw.config.anthropic

    def for_target(self, turn: Turn, request: Request) -> Request:
        """``request`` for ``turn.deployment`` (see the module docstring). Raises
        :class:`CapabilityError`."""
        dep = turn.deployment
        assert dep is not None, "the route layer sets the deployment"
        check_capabilities(request, dep)
        for note in check_fields(request, dep, turn.dialect):
            turn.note_dropped(note)
            log.info(
                "fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=[note["field"]]
            )
        native = request.native
        if native is not None and native.api != dep.api:
            if native.serving:
                self.drop_serving(turn, native, dep)
            if native.translated:
                request = translate_native_parts(request)
        if request.logged_own:
            note_foreign_keys(
                turn, foreign_own_keys([m for m in request.messages if m.src is None], dep.api), dep
            )
        if request.cache_marks and dep.api != ANTHROPIC:
            where = cache_mark(request)
            if where is not None:
                self.drop_cache_marks(turn, where, dep)
        choice = request.tool_choice
        if choice is not None and choice.parallel is False and dep.api in NO_PARALLEL_LIMIT_APIS:
            note_parallel_limit(turn, dep)
        if choice is not None and choice.allowed is not None and dep.api not in OPENAI_APIS:
            request = allowed_only(request)
        if request.tools and dep.api in NO_STRICT_CHECK_APIS:
            note_strict_tools(turn, request, dep)
        rf = request.response_format
        if rf is not None and rf.dialect_strict and dep.api in OPENAI_APIS and rf.strict is None:
            note_loose_format(turn, rf, dep)
        if request.thinking is not None and dep.api == ANTHROPIC:
            request = fit_claude_thinking(turn, request, dep)
            if rf is not None:
                note_unforced_output(turn, request, dep)
        elif request.thinking is not None and dep.api in OPENAI_APIS:
            request = fit_openai_reasoning(turn, request, dep)
        elif (
            request.thinking is not None
            and not request.thinking.enabled
            and dep.api == "gemini"
            and (native is None or native.api != dep.api)  # a Gemini client's own form is sent as is
        ):
            note_thinking_always_on(turn, dep)
        if request.max_output_tokens is None and dep.max_output_tokens is not None:
            request = request.model_copy(update={"max_output_tokens": dep.max_output_tokens})
        headers = turn.headers_in
        if headers is not None:
            request = self.client_headers(turn, request, dep)
        if native is not None and native.api == dep.api and native.api in passthrough.MODEL_BOUND:
            note_passthrough(turn, request, dep)
        if turn.session is not None:
            return request  # the window layer fits the context it rebuilds from the session log
        return fit_thinking(turn, request, dep, self.policy)

    def client_headers(self, turn: Turn, request: Request, dep: Deployment) -> Request:
        """``request`` carrying the client's Anthropic headers that ``dep`` may get (none for
        a target of another wire API); what is dropped is noted on ``turn`` and logged."""
        to_anthropic = dep.api == "anthropic_messages"
        betas, version = client_betas(turn.headers_in, True)  # any target: an unknown version is named
        sent_on = forwarded(turn.headers_in, self.anthropic.forward) if to_anthropic else {}
        if not betas and not sent_on and (version is None or (not to_anthropic and version in EDGE_VERSIONS)):
            return request
        admitted = admit(betas, version, dep, self.anthropic)
        for d in admitted.dropped:
            turn.note_dropped(d.note())
            log.info(
                "header_dropped",
                request_id=turn.request_id,
                deployment=dep.name,
                field=d.field,
                values=list(d.values),
                reason=d.reason,
            )
        if not to_anthropic:
            return request
        return evolve(
            request,
            anthropic_betas=list(admitted.betas),
            anthropic_version=admitted.version,
            anthropic_headers=sent_on,
        )

    @staticmethod
    def drop_serving(turn: Turn, native: NativeFields, dep: Deployment) -> None:
        """Note on ``turn`` (transcript row, ``x-turnstile-dropped``, with the value where the
        field name finds one in ``native.fields``) and log the client's serving-only fields of
        wire API ``native.api`` that ``dep`` (another wire API) does not get."""
        api = native.api
        reason = f"steers serving on the {api} wire API only; model {dep.name!r} is served by {dep.api}"
        names = native.serving
        if (api, dep.api) in passthrough.SIBLINGS:  # the other OpenAI API: some are translated
            kept = passthrough.translated_names(native.fields, api, dep.api)
            names = [n for n in names if n not in kept]
            if not names:
                return
        names = [n for n in names if passthrough.value_of(native.fields, n) not in _ASKS_NOTHING.get(n, ())]
        if not names:
            return
        for name in names:
            found = passthrough.value_of(native.fields, name)
            turn.note_dropped(
                {
                    "kind": "dropped",
                    "field": name,
                    "values": [] if found is passthrough.MISSING else [found],
                    "deployment": dep.name,
                    "reason": reason,
                }
            )
        log.info("fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=names)

    @staticmethod
    def drop_cache_marks(turn: Turn, where: str, dep: Deployment) -> None:
        """Note on ``turn`` and log that the request's ``cache_control`` marks (first at
        ``where``) do not reach ``dep``: only the Anthropic Messages adapter sends them; other
        APIs cache prompt prefixes by themselves."""
        reason = f"prompt-cache marks (first at {where}) are sent only to an {ANTHROPIC} upstream"
        note = {"kind": "dropped", "field": "cache_control", "values": [], "deployment": dep.name}
        turn.note_dropped({**note, "reason": reason})
        log.info("fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=["cache_control"])

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer to the target's request."""
        return await self.inner.complete(turn, self.for_target(turn, request))

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream of the target's request."""
        return await self.inner.stream(turn, self.for_target(turn, request))


def note_parallel_limit(turn: Turn, dep: Deployment) -> None:
    """Note on ``turn`` (and log) that the client's limit of one tool call per turn does not
    reach ``dep``, whose wire API has no such setting: the model may answer with several calls.
    Named by the client's own field (:data:`PARALLEL_FIELD`)."""
    field, value = PARALLEL_FIELD.get(turn.dialect, ("parallel_tool_calls", False))
    turn.note_dropped(
        {
            "kind": "dropped",
            "field": field,
            "values": [value],
            "deployment": dep.name,
            "reason": f"the {dep.api} wire API has no setting that limits an answer to one tool call",
        }
    )
    log.info("fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=[field])


OPENAI_APIS = frozenset({"openai_chat", "openai_responses"})
"""Wire APIs whose structured output is strict only when asked (``strict: true``)."""


def allowed_only(request: Request) -> Request:
    """``request`` for a wire API without ``allowed_tools`` (Anthropic, Gemini, litellm): only
    the allowed tools are offered, with the choice's mode (``auto`` / ``required``). The model
    may call the same tools either way; only the upstream's cached tool-list prefix differs."""
    choice = request.tool_choice
    assert choice is not None and choice.allowed is not None
    allowed = set(choice.allowed)
    return evolve(
        request,
        tools=[t for t in request.tools if t.name in allowed],
        tool_choice=evolve(choice, allowed=None),
    )


def note_loose_format(turn: Turn, rf: ResponseFormat, dep: Deployment) -> None:
    """Note on ``turn`` (and log) that a structured output the client's dialect always enforces
    (Anthropic's) reaches OpenAI ``dep`` without ``strict: true``: its schema does not meet
    OpenAI's strict rules (:func:`gateway.providers.wire_common.openai_strict_ok`), so the
    answer is asked for, not enforced. Nothing is noted when the schema meets them (sent strict)."""
    if openai_strict_ok(rf.schema_):
        return
    turn.note_dropped(
        {
            "kind": "dropped",
            "field": "output_config.format.strict",
            "values": [True],
            "deployment": dep.name,
            "reason": "the schema does not meet OpenAI's strict rules (each object additionalProperties: "
            "false, every property required), so the answer is not constrained to it",
        }
    )
    log.info(
        "fields_dropped",
        request_id=turn.request_id,
        deployment=dep.name,
        fields=["output_config.format.strict"],
    )


def note_thinking_always_on(turn: Turn, dep: Deployment) -> None:
    """Note on ``turn`` (and log) that thinking the client turned off stays on: ``dep``'s Gemini
    model cannot turn it off (Gemini 2.5 Pro, Gemini 3: :mod:`gateway.providers.gemini_models`),
    so nothing is sent for it. Named by the client's own field
    (:func:`gateway.client_names.client_name`). Nothing for a model that can, or does not think."""
    family = model_family(dep.model)
    if family.can_turn_off or family.thinking == "none":
        return
    field = client_name(turn.dialect, "thinking")
    turn.note_dropped(
        {
            "kind": "dropped",
            "field": field,
            "values": [],
            "deployment": dep.name,
            "reason": f"model {dep.model!r} always thinks: thinking cannot be turned off",
        }
    )
    log.info("fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=[field])


def validated_mode(request: Request, dep: Deployment) -> bool:
    """Whether ``dep`` is a Gemini upstream getting a Gemini client's
    ``toolConfig.functionCallingConfig.mode: VALIDATED`` as sent (the edge made its tools
    strict for the other wire APIs: :func:`gateway.edges.gemini_options.tool_choice`)."""
    native = request.native
    if native is None or native.api != dep.api or dep.api != "gemini":
        return False
    fcc = (native.fields.get("toolConfig") or {}).get("functionCallingConfig") or {}
    return type(fcc) is dict and fcc.get("mode") == "VALIDATED"


def note_strict_tools(turn: Turn, request: Request, dep: Deployment) -> None:
    """Note on ``turn`` (and log) each tool whose ``strict: true`` does not reach ``dep``: a
    Gemini deployment, or an Anthropic one whose model has no structured outputs (or cannot
    state the tool's schema). Named by the client's own field (:data:`STRICT_FIELD`)."""
    if validated_mode(request, dep):
        return  # a Gemini client's mode VALIDATED (what its strict tools stand for) reaches Gemini
    form = STRICT_FIELD.get(turn.dialect, "tools[{i}].strict")
    fields = []
    for i, tool in enumerate(request.tools):
        if not tool.strict:
            continue
        if dep.api == ANTHROPIC and strict_input_schema(tool.parameters, dep) is not None:
            continue
        field = form.format(i=i)
        fields.append(field)
        turn.note_dropped(
            {
                "kind": "dropped",
                "field": field,
                "values": [True],
                "deployment": dep.name,
                "reason": f"model {dep.name!r} ({dep.api}) cannot enforce a strict tool schema",
            }
        )
    if fields:
        log.info("fields_dropped", request_id=turn.request_id, deployment=dep.name, fields=fields)


def note_passthrough(turn: Turn, request: Request, dep: Deployment) -> None:
    """Note on ``turn`` (and log once) the same-wire fields ``dep`` refuses for its model
    (:func:`gateway.providers.passthrough.split`)."""
    dropped = passthrough.split(request, dep)[1]
    for note in dropped:
        turn.note_dropped(note)
    if dropped:
        fields = [d["field"] for d in dropped]
        log.info("passthrough_dropped", request_id=turn.request_id, deployment=dep.name, fields=fields)


def translate_native_parts(request: Request) -> Request:
    """``request`` with each tool result's :class:`NativePart` that has a ``text`` (a
    ``tool_reference``) replaced by that text, for an upstream of another wire API than the
    blocks'."""
    messages = []
    for msg in request.messages:
        if type(msg) is ToolResultMessage and any(
            type(p) is NativePart and p.text is not None for p in msg.content
        ):
            content = [
                TextPart(text=p.text) if type(p) is NativePart and p.text is not None else p
                for p in msg.content
            ]
            msg = msg.model_copy(update={"content": content})
        messages.append(msg)
    return request.model_copy(update={"messages": messages})


def cache_mark(request: Request) -> str | None:
    """The client location of the first ``cache_control`` mark on a tool, a message part or a
    tool result of ``request`` (``tools[i]``, the message's ``src``), or None when there is none."""
    for i, tool in enumerate(request.tools):
        if tool.cache_control is not None:
            return f"tools[{i}]"
    for i, msg in enumerate(request.messages):
        if (type(msg) is ToolResultMessage and msg.cache_control is not None) or any(
            getattr(p, "cache_control", None) is not None for p in msg.content
        ):
            return msg.src or f"messages[{i}]"
    return None
