"""Session ids a client may not bind a turn to or fork into: the gateway's own.

A stored OpenAI response is the session of its id (``resp_…``, :mod:`gateway.sessions.responses`)
and an Anthropic message thread's message is the session of its id (``msg_…``,
:mod:`gateway.sessions.threads`); each is read back from its session's leaf. A client naming one
as its own session (``x-turnstile-session``, ``metadata.turnstile_session``, ``user:
"session:…"``, or ``POST /v1/sessions/{id}/fork`` with ``session_id``) would append its turn
there, or make an id that reads back as a response it never got, so such ids are refused; a
stored response is continued with ``previous_response_id``, a thread with ``thread``.
"""

from __future__ import annotations

from gateway.errors import InvalidRequest
from gateway.sessions import responses, threads
from gateway.sessions.store import check_session_id

_OWN = {
    responses.PREFIX: "a stored OpenAI response (continue it with previous_response_id)",
    threads.PREFIX: "an Anthropic message thread (continue it with thread)",
}


def check_client_session_id(session_id: object, param: str) -> str:
    """``session_id`` if a client may name it as its own session, else raises
    :class:`InvalidRequest` naming ``param``: an id outside
    :data:`gateway.sessions.store.SESSION_ID_PATTERN`, or one with the prefix of the gateway's
    own sessions (``resp_``, ``msg_``)."""
    sid = check_session_id(session_id, param)
    for prefix, what in _OWN.items():
        if sid.startswith(prefix):
            raise InvalidRequest(
                f"{param}: session ids starting with {prefix!r} are the gateway's own ({what}); "
                "name another session id",
                param=param,
            )
    return sid
