"""Sessions: append-only entry trees with a leaf pointer (invariant 5).

* :mod:`.model`      — entries, payloads, session rows
* :mod:`.store`      — the store interface and shared SQL logic
* :mod:`.open`       — :func:`open_store` by URL
* :mod:`.sqlite`, :mod:`.postgres` — the two backends
* :mod:`.migrations` — add-only schema migrations and the append-only triggers
* :mod:`.turns`      — a turn bound to a session: which one (:func:`~.turns.session_id_for`) and
  its handle (:class:`~.turns.SessionBinding`: recording, the context rebuilt per target)
* :mod:`.responses`  — stored OpenAI Responses: a response is a session, its previous
  response's a fork
* :mod:`.threads`    — Anthropic message threads: a thread turn's answer is a session, its
  continuation a fork
* :mod:`.api`, :mod:`.cli` — HTTP routes and the ``turnstile sessions`` command
"""

from gateway.sessions.model import CompactionPayload, Entry, SessionInfo
from gateway.sessions.open import open_store
from gateway.sessions.store import LEAF, SessionNotFound, SessionStore

__all__ = [
    "LEAF",
    "CompactionPayload",
    "Entry",
    "SessionInfo",
    "SessionNotFound",
    "SessionStore",
    "open_store",
]
