"""Guardrails: checks on text entering or leaving a model (secrets, PII, prompt-injection
markers, an external webhook) and the engine that turns their findings into actions
(:mod:`gateway.guardrails.engine`). The chain runs them in :mod:`gateway.layers.guardrails`;
``/mcp`` runs them on relayed tool results through :mod:`gateway.guardrails.mcp`."""
