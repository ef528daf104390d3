"""Agent logs whose messages are (nearly) OpenAI Chat Completions messages -> conversations.

* SWE-agent trajectories (``*.traj``; corpus ``swe-agent/``, SWE-agent/SWE-agent): ``history[]``
  of ``{role, content, tool_calls?, tool_call_ids?}``; ``tool_calls`` and ``tool_call_ids``
  may be Python ``repr`` strings (``"[{'function': ...}]"``) and are read with
  ``ast.literal_eval``; ``info.model_stats`` gives the whole run's cost
  (``instance_cost`` USD) and tokens (``tokens_sent``/``tokens_received``).
* τ-bench trajectories (corpus ``tau-bench/``, sierra-research/tau-bench): a JSON array of
  ``{task_id, trial, traj[]}`` with plain Chat Completions messages; each is a conversation.
* ToolBench answers (corpus ``toolbench/``, OpenBMB/ToolBench):
  ``answer_generation.train_messages[-1]`` is the final chain in the legacy ``function_call`` /
  ``role: "function"`` shape and ``answer_generation.function`` the tool schemas (sent as the
  legacy ``functions`` field). The edge gives the id-less calls deterministic ids.
* A plain Chat Completions request body (``{"model", "messages", ...}``).

Every assistant message is a turn; the request of the turn is the messages before it.
"""

from __future__ import annotations

import ast
from typing import Any

from gateway.replay.records import Conversation, Issue, RecordedTurn


def _literal(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return None
    return value


def _turns(messages: list[dict[str, Any]], model: str | None = None) -> list[RecordedTurn]:
    return [
        RecordedTurn(index=i, model=model) for i, m in enumerate(messages) if m.get("role") == "assistant"
    ]


def looks_like_swe_agent(data: Any) -> bool:
    """A SWE-agent trajectory: an object with a ``history`` list of role messages."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("history"), list)
        and ("trajectory" in data or any(isinstance(m, dict) and "agent" in m for m in data["history"][:3]))
    )


def read_swe_agent(data: dict[str, Any], source: str) -> tuple[list[Conversation], list[Issue]]:
    """One SWE-agent trajectory -> one conversation (model ``gpt-4o`` when the history uses
    native function calling, else ``gpt-4``, per corpus README A2)."""
    issues: list[Issue] = []
    messages: list[dict[str, Any]] = []
    native = False
    for i, m in enumerate(data["history"]):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            issues.append(Issue(source, None, f"history[{i}]: not a chat message; skipped"))
            continue
        out: dict[str, Any] = {"role": m["role"], "content": m.get("content")}
        if m["role"] == "assistant":
            calls = _literal(m.get("tool_calls"))
            if calls:
                native = True
                out["tool_calls"] = [
                    {
                        "id": c.get("id"),
                        "type": "function",
                        "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
                    }
                    for c in calls
                ]
        elif m["role"] == "tool":
            ids = _literal(m.get("tool_call_ids")) or []
            if len(ids) != 1:
                issues.append(
                    Issue(source, None, f"history[{i}]: tool message with {len(ids)} ids; using the first")
                )
            out["tool_call_id"] = ids[0] if ids else ""
        messages.append(out)
    model = "gpt-4o" if native else "gpt-4"
    stats = (data.get("info") or {}).get("model_stats") or {}
    conv = Conversation(
        source=source,
        name=source.rsplit("/", 1)[-1],
        dialect="openai_chat",
        head={"model": model},
        messages=messages,
        turns=_turns(messages, model),
    )
    cost = stats.get("instance_cost")
    if isinstance(cost, int | float) and (stats.get("tokens_sent") or stats.get("tokens_received")):
        conv.total_cost_usd = float(cost)
        conv.total_usage = {
            "input_tokens": int(stats.get("tokens_sent") or 0),
            "output_tokens": int(stats.get("tokens_received") or 0),
        }
    return [conv], issues


def looks_like_tau_bench(data: Any) -> bool:
    """A τ-bench results file: a JSON array of objects with ``traj`` lists."""
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], dict)
        and isinstance(data[0].get("traj"), list)
    )


def read_tau_bench(data: list[Any], source: str) -> tuple[list[Conversation], list[Issue]]:
    """Every ``{task_id, trial, traj}`` item -> one conversation named ``task<id>-trial<n>``
    (model ``gpt-4o``, corpus README A4)."""
    convs: list[Conversation] = []
    issues: list[Issue] = []
    for k, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("traj"), list):
            issues.append(Issue(source, None, f"[{k}]: not a trajectory; skipped"))
            continue
        msgs = [m for m in item["traj"] if isinstance(m, dict)]
        name = f"task{item.get('task_id')}-trial{item.get('trial')}"
        convs.append(
            Conversation(
                source=source,
                name=name,
                dialect="openai_chat",
                head={"model": "gpt-4o"},
                messages=msgs,
                turns=_turns(msgs, "gpt-4o"),
            )
        )
    return convs, issues


def looks_like_toolbench(data: Any) -> bool:
    """A ToolBench answer file: ``answer_generation.train_messages``."""
    return isinstance(data, dict) and isinstance(data.get("answer_generation"), dict)


def read_toolbench(data: dict[str, Any], source: str) -> tuple[list[Conversation], list[Issue]]:
    """The final chain (``train_messages[-1]``) -> one legacy-functions conversation (model
    ``gpt-3.5-turbo-16k``, the ChatGPT DFS runs)."""
    gen = data["answer_generation"]
    chains = gen.get("train_messages") or []
    if not chains or not isinstance(chains[-1], list):
        why = "" if gen.get("valid_data", True) else " (valid_data is false: the run produced no answer)"
        return [], [Issue(source, None, f"answer_generation.train_messages has no chain{why}; skipped")]
    msgs = [m for m in chains[-1] if isinstance(m, dict)]
    head: dict[str, Any] = {"model": "gpt-3.5-turbo-16k"}
    if gen.get("function"):
        head["functions"] = gen["function"]
    return [
        Conversation(
            source=source,
            name=source.rsplit("/", 1)[-1],
            dialect="openai_chat",
            head=head,
            messages=msgs,
            turns=_turns(msgs),
        )
    ], []


def looks_like_chat_body(data: Any) -> bool:
    """A plain request body: an object with a ``messages`` list of role messages."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("messages"), list)
        and all(isinstance(m, dict) and "role" in m for m in data["messages"])
    )


def is_anthropic_body(data: dict[str, Any]) -> bool:
    """True when a plain body is Anthropic Messages rather than OpenAI Chat: a top-level
    ``system``, or content blocks only Anthropic has (``tool_use``, ``tool_result``)."""
    if "system" in data or "stop_sequences" in data:
        return True
    for m in data["messages"]:
        if m.get("role") in ("tool", "function", "system", "developer") or m.get("tool_calls"):
            return False
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result", "thinking") for b in content
        ):
            return True
    return False


def read_chat_body(data: dict[str, Any], source: str) -> tuple[list[Conversation], list[Issue]]:
    """A plain OpenAI Chat or Anthropic Messages body: its messages are the conversation,
    every other field the request head; each assistant message is a turn."""
    dialect = "anthropic_messages" if is_anthropic_body(data) else "openai_chat"
    head = {k: v for k, v in data.items() if k not in ("messages", "stream", "stream_options")}
    head.setdefault("model", "unknown")
    if dialect == "anthropic_messages":
        head.setdefault("max_tokens", 4096)
    msgs = data["messages"]
    return [
        Conversation(
            source=source,
            name=source.rsplit("/", 1)[-1],
            dialect=dialect,
            head=head,
            messages=msgs,
            turns=_turns(msgs),
        )
    ], []
