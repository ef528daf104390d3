"""Turnstile: an MCP gateway and multi-provider model router."""

__version__ = "0.1.0"
