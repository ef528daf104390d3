"""Readers of recorded agent conversations (corpus part A and users' own agent logs).

Each module reads one recorded format and produces :class:`gateway.replay.records.Conversation`
objects whose messages are client-dialect JSON (OpenAI Chat Completions or Anthropic
Messages), so they enter Turnstile through the normal edges. They live here, beside the
edges, because they spell dialect field names (invariant 1).
"""


def default_stop(has_calls: bool) -> str:
    """The internal stop reason of a recorded answer whose format does not record one: a
    tool-use stop when it carries tool calls, else a plain stop."""
    return "tool_use" if has_calls else "stop"
