"""Readers of recorded provider traffic (corpus part B: vcrpy / go-vcr cassettes, vercel-ai
fixtures, anthropic-sdk-python recordings) and an independent reader of what a response
*means* (text, tool calls, thinking, stop reason, usage), used by ``turnstile replay`` to check
that Turnstile's adapters and edges keep that meaning. They spell wire field names, so they
live beside the wire modules (invariant 1).
"""
