"""OpenHands (CodeAct agent) event histories -> OpenAI Chat conversations.

Format (corpus README A3, All-Hands-AI/OpenHands): a JSON list of events, or JSON Lines of
``{instance_id, history[], metrics, ...}``. Each event has ``id``, ``source``
(``user``/``agent``/``environment``), ``action`` or ``observation``, ``message``, ``args``,
``cause``. An action the model issued carries ``tool_call_metadata`` with the raw LiteLLM
``model_response`` (``choices[0].message`` with ``tool_calls``, ``usage``); several actions of
one response share it (``total_calls_in_response``). Rebuilding the messages (what OpenHands'
``ConversationMemory`` does):

* ``system`` action -> system message; user ``message`` action -> user message;
* the first action of each ``model_response`` -> that response's assistant message (a turn,
  with its recorded usage and model); an agent ``message`` action with no metadata -> an
  assistant text message (a turn);
* an observation with ``tool_call_metadata`` -> a ``role: tool`` result for its
  ``tool_call_id``; a ``recall`` observation or an observation without metadata (errors) ->
  a user message with its content; ``recall`` actions and ``agent_state_changed`` are not
  sent to the model.
"""

from __future__ import annotations

from typing import Any

from gateway.replay.records import Conversation, Issue, RecordedTurn


def looks_like(data: Any) -> bool:
    """A list of OpenHands events (objects with ``source`` and ``action``/``observation``)."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(e, dict) and "source" in e and ("action" in e or "observation" in e) for e in data[:5]
        )
    )


def looks_like_output_line(data: Any) -> bool:
    """One line of an OpenHands evaluation ``output.jsonl``: ``instance_id`` and ``history``."""
    return isinstance(data, dict) and "instance_id" in data and isinstance(data.get("history"), list)


def _text(ev: dict[str, Any]) -> str:
    args = ev.get("args") or {}
    if ev.get("observation") is not None:
        return str(ev.get("content") or ev.get("message") or "")
    return str(args.get("content") or ev.get("message") or "")


def _usage(u: Any) -> dict[str, int] | None:
    if not isinstance(u, dict):
        return None
    prompt = int(u.get("prompt_tokens") or 0)
    details = u.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return {
        "input_tokens": prompt - cached,
        "cache_read_tokens": cached,
        "output_tokens": int(u.get("completion_tokens") or 0),
    }


def read_history(
    events: list[Any], source: str, name: str, model: str | None = None, metrics: dict[str, Any] | None = None
) -> tuple[Conversation, list[Issue]]:
    """One event history -> one conversation (``name`` locates it in the file)."""
    issues: list[Issue] = []
    messages: list[dict[str, Any]] = []
    turns: list[RecordedTurn] = []
    seen_responses: set[str] = set()
    for k, ev in enumerate(events):
        if not isinstance(ev, dict):
            issues.append(Issue(source, None, f"{name} event {k}: not an object; skipped"))
            continue
        tcm = ev.get("tool_call_metadata")
        action = ev.get("action")
        if action is not None:
            if isinstance(tcm, dict) and isinstance(tcm.get("model_response"), dict):
                resp = tcm["model_response"]
                rid = str(resp.get("id"))
                if rid in seen_responses:
                    continue
                seen_responses.add(rid)
                choice = (resp.get("choices") or [{}])[0]
                msg = dict(choice.get("message") or {})
                out: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
                calls = [
                    {"id": c.get("id"), "type": "function", "function": c.get("function") or {}}
                    for c in msg.get("tool_calls") or []
                ]
                if calls:
                    out["tool_calls"] = calls
                turns.append(
                    RecordedTurn(
                        index=len(messages), model=resp.get("model") or model, usage=_usage(resp.get("usage"))
                    )
                )
                messages.append(out)
            elif action == "system":
                messages.append({"role": "system", "content": _text(ev)})
            elif action == "message" and ev.get("source") == "user":
                messages.append({"role": "user", "content": _text(ev)})
            elif action == "message" and ev.get("source") == "agent":
                turns.append(RecordedTurn(index=len(messages), model=model))
                messages.append({"role": "assistant", "content": _text(ev)})
            elif action in ("recall", "change_agent_state"):
                continue
            else:
                issues.append(
                    Issue(
                        source,
                        None,
                        f"{name} event {ev.get('id')}: action {action!r} without model response; skipped",
                    )
                )
            continue
        obs = ev.get("observation")
        if isinstance(tcm, dict) and tcm.get("tool_call_id"):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": tcm["tool_call_id"],
                    "name": tcm.get("function_name"),
                    "content": _text(ev),
                }
            )
        elif obs == "agent_state_changed":
            continue
        else:
            text = _text(ev)
            if text:
                messages.append({"role": "user", "content": text})
    conv = Conversation(
        source=source,
        name=name,
        dialect="openai_chat",
        head={"model": model or "unknown"},
        messages=messages,
        turns=turns,
    )
    if (
        metrics
        and isinstance(metrics.get("accumulated_cost"), int | float)
        and metrics["accumulated_cost"] > 0
    ):
        conv.total_cost_usd = float(metrics["accumulated_cost"])
    return conv, issues


def model_of(events: list[Any], fallback: str | None = None) -> str | None:
    """The model named by the first recorded model response, else ``fallback``."""
    for ev in events:
        tcm = ev.get("tool_call_metadata") if isinstance(ev, dict) else None
        if isinstance(tcm, dict) and isinstance(tcm.get("model_response"), dict):
            return str(tcm["model_response"].get("model") or fallback)
    return fallback
