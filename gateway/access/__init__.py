"""Client identity: virtual keys and teams, their store, and how a caller is judged.

* :mod:`.model` — keys, teams, their limits as data (``Budget``, ``RateLimits``), ``Principal``;
* :mod:`.keygen` — key secrets: made, hashed, recognised;
* :mod:`.store` (over :mod:`.sqlite` / :mod:`.postgres`, opened by :mod:`.open`) — the store,
  with :mod:`.migrations`;
* :mod:`.identity` — a request's key read, looked up (cached <= 1 s) and judged;
* :mod:`.visibility` — a key's MCP tools; :mod:`.middleware` — keys on non-turn endpoints;
* :mod:`.admin_api` and :mod:`.cli` — the admin surface.

The access layer (:mod:`gateway.layers.access`) applies it to every turn.
"""
