"""Field-by-field comparison of two internal requests: what a conversion kept and lost.

:func:`project` reduces a :class:`Request` to comparable facets (system text, user texts,
tool results, tool calls with parsed arguments, thinking with signatures, tools, options, ...)
in which representational differences that carry no meaning disappear: how consecutive
messages of one role are split or merged, empty text parts, the JSON spelling of arguments.
:func:`diff` lists the facets that differ. :data:`LIMITS` explains the differences a target
API cannot avoid (it has no slot for the field); anything else is a loss, i.e. a bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.providers.gemini_request import read_system_note
from gateway.providers.wire_common import ERROR_PREFIX, openai_strict_ok
from gateway.schema import (
    AssistantMessage,
    AudioPart,
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

LIMITS: dict[tuple[str, str], str] = {
    ("openai_chat", "thinking"): "Chat Completions requests have no slot for reasoning or its signature",
    ("openai_chat", "redacted_thinking"): "Chat Completions requests have no slot for encrypted reasoning",
    ("openai_chat", "result_is_error"): (
        "a role:tool message has no error flag: a failed result's text starts with 'Error: ' instead"
    ),
    (
        "openai_chat",
        "result_images",
    ): "a role:tool message cannot carry images; they follow in a user message",
    ("openai_chat", "top_k"): "Chat Completions has no top_k",
    ("openai_chat", "cache_control"): "Chat Completions has no prompt-cache markers",
    ("openai_chat", "thinking_config"): "Chat Completions takes only a coarse reasoning effort, not a budget",
    ("gemini", "cache_control"): "Gemini caches implicitly; it has no per-block cache markers",
    ("gemini", "tool_parameters"): "Gemini function parameters accept only an OpenAPI subset of JSON Schema",
    ("gemini", "parallel_tool_calls"): "Gemini has no switch for parallel function calls",
    ("gemini", "user"): "Gemini has no end-user field",
    ("gemini", "redacted_thinking"): "Gemini cannot read Anthropic's encrypted reasoning",
    ("gemini", "thinking_config"): (
        "Gemini 2.5 Pro and Gemini 3 cannot turn thinking off, and a budget is brought into the model's range"
    ),
    ("gemini", "result_images"): "Gemini carries tool-result images as parts after the function responses",
    ("anthropic_messages", "response_format"): (
        "output_config.format takes a JSON Schema subset and no name (unsupported keywords go into"
        " descriptions); JSON object mode and older models get a forced output tool instead"
    ),
    ("anthropic_messages", "thinking"): "thinking without a signature cannot be verified by Anthropic",
    ("anthropic_messages", "strict"): "Anthropic tool definitions have no strict flag",
    ("gemini", "strict"): "Gemini function declarations have no strict flag",
    (
        "anthropic_messages",
        "max_output_tokens",
    ): "Anthropic requires max_tokens above the thinking budget; the budget is added to it",
    (
        "gemini",
        "response_format",
    ): "Gemini responseSchema accepts only an OpenAPI subset of JSON Schema, with no name",
}
"""(target API, facet) -> why the target cannot carry it. An empty text is not a limit."""

POLICY = (
    "thinking signed by another provider is stripped before it goes to this target (policy foreign_thinking)"
)


@dataclass
class Difference:
    """One facet that differs: ``facet`` name, ``before`` / ``after`` short renderings of the
    first differing element, and ``limit`` the explanation when the target cannot carry it
    (empty for a loss)."""

    facet: str
    before: str
    after: str
    limit: str = ""


def _args(call: ToolCallPart) -> str:
    try:
        value = orjson.loads(call.raw_arguments)
    except orjson.JSONDecodeError:
        return "raw:" + call.raw_arguments
    if not isinstance(value, dict):
        return "raw:" + call.raw_arguments
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _result_text(msg: ToolResultMessage) -> str:
    """The result's text, less the ``Error: `` a target without an error flag puts before a
    failed result's (:data:`gateway.providers.wire_common.ERROR_PREFIX`: the translation of
    the flag, compared as ``result_is_error``)."""
    return "".join(p.text for p in msg.content if isinstance(p, TextPart)).removeprefix(ERROR_PREFIX)


def _img(p: ImagePart | DocumentPart | AudioPart) -> str:
    return f"{p.media_type}:{(p.data or p.url or '')[:64]}:{len(p.data or p.url or '')}"


def project(req: Request) -> dict[str, Any]:
    """The comparable facets of ``req`` (see module docstring)."""
    f: dict[str, list[Any]] = {
        k: []
        for k in (
            "system",
            "user_text",
            "user_images",
            "user_media",
            "results",
            "result_is_error",
            "result_images",
            "assistant_text",
            "calls",
            "tool_call_signatures",
            "thinking",
            "redacted_thinking",
            "cache_control",
        )
    }
    run_text: list[str] = []
    runs: list[str] = []
    for msg in req.messages:
        if not isinstance(msg, AssistantMessage) and run_text:
            runs.append("".join(run_text))
            run_text = []
        if isinstance(msg, SystemMessage):
            f["system"].extend(p.text for p in msg.content if p.text)
            f["cache_control"].extend(
                orjson.dumps(p.cache_control).decode() for p in msg.content if p.cache_control
            )
        elif isinstance(msg, UserMessage):
            for p in msg.content:
                if isinstance(p, TextPart):
                    if p.text:
                        f["user_text"].append(p.text)
                elif type(p) is ImagePart:
                    f["user_images"].append(_img(p))
                else:
                    f["user_media"].append(f"{p.type}:{_img(p)}")
                cache = getattr(p, "cache_control", None)
                if cache:
                    f["cache_control"].append(orjson.dumps(cache).decode())
        elif isinstance(msg, ToolResultMessage):
            f["results"].append((msg.tool_call_id, _result_text(msg)))
            f["result_is_error"].append((msg.tool_call_id, msg.is_error))
            f["result_images"].extend(
                (msg.tool_call_id, _img(p)) for p in msg.content if isinstance(p, ImagePart)
            )
            if msg.cache_control:
                f["cache_control"].append(orjson.dumps(msg.cache_control).decode())
        elif isinstance(msg, AssistantMessage):
            for ap in msg.content:
                p = ap  # type: ignore[assignment]
                if isinstance(p, TextPart):
                    if p.text:
                        f["assistant_text"].append(p.text)
                        run_text.append(p.text)
                    if p.cache_control:
                        f["cache_control"].append(orjson.dumps(p.cache_control).decode())
                elif isinstance(p, ThinkingPart):
                    if p.text or p.signature:
                        f["thinking"].append((p.text, p.signature))
                elif isinstance(p, RedactedThinkingPart):
                    f["redacted_thinking"].append(p.data)
                elif isinstance(p, ToolCallPart):
                    f["calls"].append((p.id, p.name, _args(p)))
                    if p.signature:
                        f["tool_call_signatures"].append((p.id, p.signature))
    if run_text:
        runs.append("".join(run_text))
    out: dict[str, Any] = dict(f)
    # consecutive assistant messages may be merged by a target: compare each run's text
    out["assistant_text"] = runs
    out["system"] = "\n\n".join(f["system"])
    out["tools"] = [(t.name, t.description or None) for t in req.tools]
    out["tool_parameters"] = [
        orjson.dumps(t.parameters, option=orjson.OPT_SORT_KEYS).decode() for t in req.tools
    ]
    out["strict"] = [t.strict for t in req.tools if t.strict is not None]
    out["cache_control"] += [orjson.dumps(t.cache_control).decode() for t in req.tools if t.cache_control]
    tc = req.tool_choice
    out["tool_choice"] = None if tc is None or not req.tools else (tc.mode, tc.name)
    # parallel calls are allowed unless forbidden: True and unset mean the same
    out["parallel_tool_calls"] = None if tc is None or not req.tools or tc.parallel is not False else False
    for key in ("temperature", "top_p", "top_k", "user", "max_output_tokens"):
        out[key] = getattr(req, key)
    out["stop"] = list(req.stop)
    rf = req.response_format
    out["response_format"] = (
        None if rf is None or rf.type == "text" else rf.model_dump(mode="json", by_alias=True)
    )
    th = req.thinking
    out["thinking_config"] = None if th is None else th.model_dump(mode="json")
    return out


def _effective_strict(fmt: dict[str, Any] | None) -> dict[str, Any] | None:
    """A response format facet with ``dialect_strict`` folded into ``strict`` (what an OpenAI
    upstream is sent: :func:`gateway.providers.wire_common.openai_strict`)."""
    if fmt is None or "dialect_strict" not in fmt:
        return fmt
    out = dict(fmt)
    if out.pop("dialect_strict") and out.get("strict") is None and openai_strict_ok(out.get("schema")):
        out["strict"] = True
    return out


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= 160 else text[:157] + "..."


def _first_difference(a: Any, b: Any) -> tuple[str, str]:
    if isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            if x != y:
                return _short(x), _short(y)
        if len(a) != len(b):
            extra = a[len(b) :] if len(a) > len(b) else b[len(a) :]
            return (f"{len(a)} items", f"{len(b)} items; first extra: {_short(extra[0])}")
    return _short(a), _short(b)


def _no_media(item: Any) -> Any:
    if isinstance(item, tuple | list):
        return tuple(_no_media(x) for x in item)
    return item.split(":", 1)[1] if isinstance(item, str) and ":" in item else item


ANTHROPIC_MIN_BUDGET = (
    "Anthropic's smallest thinking budget is 1,024 tokens; a smaller one is raised to it "
    "(https://docs.claude.com/en/docs/build-with-claude/extended-thinking)"
)


GEMINI_ALWAYS_THINKS = (
    "this Gemini model's thinking cannot be turned off (gateway/providers/gemini_models.py); "
    "the request asking for it off is sent without a thinking setting and `thinking` is named dropped"
)


def _kept_on(value: Any, other: Any) -> bool:
    """Thinking asked off that reached the target with no thinking setting at all."""
    return (
        isinstance(value, dict)
        and value.get("enabled") is False
        and (other is None or (isinstance(other, dict) and other.get("enabled") is None))
    )


def _raised_budget(value: Any, other: Any) -> bool:
    """A thinking budget under Anthropic's minimum that went up to exactly the minimum."""
    if not isinstance(value, dict) or not isinstance(other, dict):
        return False
    before, after = value.get("budget_tokens"), other.get("budget_tokens")
    return isinstance(before, int) and before < 1024 and after == 1024


def diff(before: Request, after: Request, target: str) -> list[Difference]:
    """The facets in which ``after`` (read back from what was sent to ``target``) differs from
    ``before``. ``max_output_tokens`` unset before is not compared (targets that require it
    fill a default); thinking budgets are compared only when the target carries them."""
    a, b = project(before), project(after)
    if target == "gemini":  # a mid-conversation system message travels in place as a user note
        notes = [n for n in map(read_system_note, b["user_text"]) if n is not None]
        if notes:
            b["user_text"] = [t for t in b["user_text"] if read_system_note(t) is None]
            b["system"] = "\n\n".join([b["system"], *notes] if b["system"] else notes)
    out: list[Difference] = []
    for facet, value in a.items():
        other = b.get(facet)
        if facet == "max_output_tokens" and value is None:
            continue
        # Anthropic and Gemini 2.5 take a budget; an effort alone becomes the documented budget.
        if (
            facet == "thinking_config"
            and target in ("anthropic_messages", "gemini")
            and value is not None
            and (
                value.get("budget_tokens") is None
                or (value.get("enabled"), value.get("budget_tokens"))
                == ((other or {}).get("enabled"), (other or {}).get("budget_tokens"))
            )
        ):
            continue
        if facet == "thinking_config" and value is not None and value.get("enabled") is False:
            value = {"enabled": False}  # a budget of disabled thinking means nothing
            other = {"enabled": (other or {}).get("enabled")}
        if facet in ("user_text", "assistant_text") and target == "anthropic_messages":
            value = [t for t in value if t.strip()]  # Anthropic rejects whitespace-only text blocks
            other = [t for t in other or [] if t.strip()]
        if facet == "response_format" and value is not None and value.get("name") is None and other:
            other = {**other, "name": None}  # a target that requires a name gets a default one
        if facet == "response_format":
            # A dialect whose structured output is always strict reaches OpenAI as strict: true
            # where the schema allows: the same strictness, spelled once.
            value, other = _effective_strict(value), _effective_strict(other)
        if facet in ("user_images", "result_images") and target == "gemini":
            # Gemini requires a media type: one guessed from the URL fills an unknown one
            value = [_no_media(x) for x in value]
            other = [_no_media(x) for x in other or []]
        if value != other:
            x, y = _first_difference(value, other)
            limit = LIMITS.get((target, facet), "")
            if facet == "thinking_config" and target == "anthropic_messages" and _raised_budget(value, other):
                limit = ANTHROPIC_MIN_BUDGET
            if facet == "thinking_config" and target == "gemini" and _kept_on(value, other):
                limit = GEMINI_ALWAYS_THINKS
            out.append(Difference(facet, x, y, limit))
    if target == "openai_chat" and any(d.facet == "result_images" for d in out):
        for d in out:
            if d.facet in ("user_text", "user_images") and not d.limit:
                d.limit = LIMITS[("openai_chat", "result_images")]
    return out
