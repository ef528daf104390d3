"""Routing policies: pure decisions over a turn's features (issue 5).

* :mod:`routers.base` — :class:`~routers.base.Candidate`, :class:`~routers.base.Decision`, the
  :class:`~routers.base.Router` protocol.
* :mod:`routers.features` — turn features computed once per turn (char-based token estimate).
* :mod:`routers.fit` — candidates filtered by window, capabilities and health.
* :mod:`routers.rules`, :mod:`routers.learned`, :mod:`routers.cascade` — the policies;
  :mod:`routers.sticky` — cache-aware session stickiness (and C16).
* :mod:`routers.health` — cooldown, circuit breaker, retry budget, context-overflow detection.
* :mod:`routers.engine` — per-alias routers and the health board of one gateway process.
* :mod:`routers.train` / :mod:`routers.eval` — ``turnstile route-train`` / ``route-eval``.

The route layer (:mod:`gateway.layers.route`) calls them. Nothing here does I/O on the
request path.
"""
