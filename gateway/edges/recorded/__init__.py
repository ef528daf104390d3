"""Readers of recorded agent conversations (corpus part A and users' own agent logs).

Each module reads one recorded format and produces :class:`gateway.replay.records.Conversation`
objects whose messages are client-dialect JSON (OpenAI Chat Completions or Anthropic
Messages), so they enter Turnstile through the normal edges. They live here, beside the
edges, because they spell dialect field names (invariant 1).
"""
