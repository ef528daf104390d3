"""Signed reasoning goes back only to the provider and model that signed it.

A thinking or redacted-thinking part, and a signature attached to a tool call, carry a
:class:`~gateway.schema.Provenance`. Toward a target, a provenance *matches* when the wire
API and the provider are the same and the provenance's model is empty (any model of that
provider) or the target's model. A missing provenance (None) is unknown and matches
nothing: an opaque signature is never sent where it may not belong. A caller that knows
where the client's unmarked thinking came from passes ``assume_provenance``, which is then
used for every part whose provenance is None.

Parts that do not match are handled by ``GuardPolicy.foreign_thinking``:

* ``strip``: thinking and redacted-thinking parts are removed; tool calls lose their
  signature (and provenance);
* ``text``: a thinking part with text becomes a text part ``<thinking>TEXT</thinking>``
  at the same place (its signature is dropped); thinking without text, redacted thinking
  (opaque data) and tool-call signatures are removed;
* ``reject``: :class:`gateway.errors.CapabilityError` naming every location.
"""

from __future__ import annotations

from gateway.config import GuardPolicy
from gateway.errors import CapabilityError
from gateway.guards.common import Repair
from gateway.schema import (
    AssistantMessage,
    AssistantPart,
    NativePart,
    Provenance,
    RedactedThinkingPart,
    Request,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

THINKING_OPEN = "<thinking>"
THINKING_CLOSE = "</thinking>"


def provenance_matches(provenance: Provenance | None, target: Provenance) -> bool:
    """True when a part signed by ``provenance`` may be sent to ``target`` (see module doc)."""
    return (
        provenance is not None
        and provenance.api == target.api
        and provenance.provider == target.provider
        and (provenance.model == "" or provenance.model == target.model)
    )


def _describe(target: Provenance) -> str:
    return "/".join(x for x in (target.provider or target.api, target.model) if x)


def _handle_part(
    part: AssistantPart, loc: str, mode: str, repairs: list[Repair], rejected: list[str], target: str
) -> AssistantPart | None:
    """The part to keep (maybe changed) or None to drop it; ``part`` is foreign."""
    if mode == "reject":
        rejected.append(loc)
        return part
    if type(part) is ToolCallPart:
        repairs.append(
            Repair(
                "foreign_signature_dropped",
                part.id,
                loc,
                f"signature of tool call {part.id} ({loc}) was not made by {target}; dropped",
            )
        )
        return part.model_copy(update={"signature": None, "provenance": None})
    if mode == "text" and type(part) is ThinkingPart and part.text:
        repairs.append(
            Repair(
                "foreign_thinking_as_text",
                None,
                loc,
                f"thinking at {loc} was not signed by {target}; sent as plain text",
            )
        )
        return TextPart(text=f"{THINKING_OPEN}{part.text}{THINKING_CLOSE}")
    repairs.append(
        Repair(
            "foreign_thinking_stripped",
            None,
            loc,
            f"thinking at {loc} was not signed by {target}; removed",
        )
    )
    return None


def apply_thinking_policy(
    request: Request,
    target: Provenance,
    policy: GuardPolicy,
    *,
    assume_provenance: Provenance | None = None,
    leading_thinking: bool = False,
) -> tuple[Request, list[Repair]]:
    """Apply ``policy.foreign_thinking`` to every signed part not made by ``target``.

    ``target`` is the deployment the request goes to (its wire API, provider and model).
    Returns a new Request when a part changed, else the input itself (the input is never
    mutated; untouched messages are shared), and the repairs made; matching parts are kept
    byte-identical. Locations are
    ``<message src or messages[i]>.content[j]``.

    With ``leading_thinking`` (the target requires the last assistant turn of a tool loop to
    start with its own signed thinking: Anthropic, "Extended thinking" docs, "preserving
    thinking blocks"), when the request asks for thinking and the last assistant message holds
    tool calls (an open tool loop) and either lost its thinking here or never had thinking the
    target signed (a client that dropped the reasoning, and the gateway's memory could not
    restore it), thinking is disabled for this request (``ThinkingConfig.enabled = False``,
    repair ``thinking_disabled``): the request would be refused upstream ("a final
    `assistant` message must start with a thinking block"). Without it (OpenAI, Gemini: no
    such rule) the client's thinking request is left as it is.

    Raises :class:`gateway.errors.CapabilityError` (HTTP 400, ``param`` the first location)
    under policy ``reject`` when any foreign part is present, naming every location.
    """
    mode = policy.foreign_thinking
    desc = _describe(target)
    repairs: list[Repair] = []
    rejected: list[str] = []
    changed: dict[int, AssistantMessage] = {}
    lost_thinking: set[int] = set()
    last_assistant: int | None = None
    last_has_calls = False
    messages = request.messages
    for i, msg in enumerate(messages):
        if type(msg) is not AssistantMessage:
            continue
        last_assistant = i
        content: list[AssistantPart] | None = None  # made at the first change only
        for j, part in enumerate(msg.content):
            if (
                type(part) is TextPart
                or type(part) is NativePart  # same-wire content: the target layer refuses it elsewhere
                or (type(part) is ToolCallPart and part.signature is None)
            ):
                if content is not None:
                    content.append(part)
                continue
            provenance = getattr(part, "provenance", None) or assume_provenance
            if provenance_matches(provenance, target):
                if content is not None:
                    content.append(part)
                continue
            loc = f"{msg.src or f'messages[{i}]'}.content[{j}]"
            kept = _handle_part(part, loc, mode, repairs, rejected, desc)
            if kept is part:
                if content is not None:
                    content.append(part)
                continue
            if content is None:
                content = list(msg.content[:j])
            if type(part) is not ToolCallPart:
                lost_thinking.add(i)
            if kept is not None:
                content.append(kept)
        if content is not None:
            changed[i] = msg.model_copy(update={"content": content})
    if last_assistant is not None:
        last_has_calls = any(type(p) is ToolCallPart for p in messages[last_assistant].content)
    if rejected:
        raise CapabilityError(
            f"thinking or signatures made by another model cannot be sent to {desc}: " + ", ".join(rejected),
            param=rejected[0],
        )
    thinking = request.thinking
    reason = None
    if (
        thinking is not None
        and thinking.enabled
        and leading_thinking
        and last_assistant is not None
        and last_has_calls
    ):
        if last_assistant in lost_thinking:
            reason = f"lost its thinking, which was not signed by {desc}"
        else:
            last_msg = changed.get(last_assistant) or messages[last_assistant]
            head = last_msg.content[0] if last_msg.content else None  # type: ignore[union-attr]
            if type(head) is not ThinkingPart and type(head) is not RedactedThinkingPart:
                reason = f"carries no thinking signed by {desc}, which {desc} requires there"
    if not changed and reason is None:
        return request, repairs  # models are never changed: sharing is safe
    update: dict[str, object] = {}
    if changed:
        update["messages"] = [changed.get(i, m) for i, m in enumerate(messages)]
    if reason is not None and thinking is not None and last_assistant is not None:
        update["thinking"] = thinking.model_copy(update={"enabled": False})
        last = request.messages[last_assistant]
        loc = last.src or f"messages[{last_assistant}]"
        repairs.append(
            Repair(
                "thinking_disabled",
                None,
                loc,
                f"thinking disabled for this request: the assistant turn of the open tool loop "
                f"({loc}) {reason}",
            )
        )
    return request.model_copy(update=update), repairs
