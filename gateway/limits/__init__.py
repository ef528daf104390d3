"""Budgets and rate limits: the arithmetic and the counters (docs/limits.md).

One module per concept:

* :mod:`~gateway.limits.periods` — budget periods (day, ISO week, month, total) in a time zone.
* :mod:`~gateway.limits.model` — budgets, rate limits and the scopes (key, team, deployment)
  that carry them; money in integer nano-dollars.
* :mod:`~gateway.limits.cost` — a turn's worst-case cost at a deployment's price.
* :mod:`~gateway.limits.window` — sliding 60 s windows in one-second buckets (accuracy bound).
* :mod:`~gateway.limits.decisions` — reservations, soft-budget alerts, refusals, headers.
* :mod:`~gateway.limits.backend` — the one interface (:class:`Limits`) and the spend source.
* :mod:`~gateway.limits.memory` — in-process counters (the embedded default).
* :mod:`~gateway.limits.sqlite_backend` — the counters the worker processes of one machine
  share (``turnstile serve --workers N`` without Redis), one transaction per admission.
* :mod:`~gateway.limits.redis_backend`, :mod:`~gateway.limits.redis_scripts` — shared
  counters in Redis, one atomic script per admission and one per settle.
* :mod:`~gateway.limits.open` — the backend the configuration asks for.
"""
