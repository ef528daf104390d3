"""Record layer (outermost): every turn, whatever its outcome, is one transcript row.

The row is committed before the answer is released (the server sends the whole answer, or a
stream's last bytes, after this layer returns): a turn a client received is on disk even
after kill -9; the wait is bounded (:class:`gateway.transcript.TranscriptWriter`). The rows of
the tool loop's steps (``turn.steps``) are written just before the turn's own. Exceptions are
mapped to the row's error: a :class:`TurnstileError` as it is, any other exception as an
internal error (the server answers 500 and logs it), a cancellation before the answer began
as :class:`TurnCutByShutdown`; each is re-raised. The row's usage and cost are the answer's (a
stream cut short: the part delivered, priced), or for a turn that failed after tool-loop steps
answered, theirs (``turn.spent``): the spend ledger and the limits layer's settle charge the
same number.

With tracing on (``gw.tracing``) the turn's span starts here, before any other layer runs
(``turn.trace``: the inner layers parent their spans on it explicitly), and ends with the row
(:mod:`gateway.tracing`).
"""

from __future__ import annotations

import asyncio
import time

from gateway.errors import TurnCutByShutdown, TurnstileError
from gateway.redaction import redact_secrets
from gateway.schema import AssistantMessage, Request, Response, SystemMessage, Usage
from gateway.transcript import TranscriptWriter, TurnRecord
from gateway.turn import Batches, Gateway, Service, Turn

HISTORY_OMITTED_KEY = "turnstile.history_omitted"
"""Metadata key, in a stored request, of how many earlier messages were left out."""


class RecordLayer:
    """Writes the turn's transcript row (and its tool-loop steps' rows) when it ends."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer, recorded (see the module docstring for the error mapping)."""
        if self.gw.tracing is not None:
            turn.trace = self.gw.tracing.start_turn(turn)
        response: Response | None = None
        error: TurnstileError | None = None
        try:
            response = await self.inner.complete(turn, request)
            return response
        except TurnstileError as err:
            error = err
            raise
        except Exception as exc:
            error = internal_error(exc)
            raise
        except asyncio.CancelledError:  # no client watch on whole answers: the server cut it
            error = TurnCutByShutdown()
            response = aborted(turn)  # nothing was delivered: stop reason aborted, no tokens known
            raise
        finally:
            await self.record(turn, response, error, stream=False)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream; recorded once it ends however it ends (``turn.outcome``), or at
        once when it could not start."""
        if self.gw.tracing is not None:
            turn.trace = self.gw.tracing.start_turn(turn)
        try:
            batches = await self.inner.stream(turn, request)
            turn.first_byte_s = time.perf_counter() - turn.started
        except TurnstileError as err:
            await self.record(turn, None, err, stream=True)
            raise
        except asyncio.CancelledError:  # before the first byte no client watch runs: the server cut it
            await self.record(turn, aborted(turn), TurnCutByShutdown(), stream=True)
            raise
        except Exception as exc:  # the gateway's bug: still one row (the server answers a 500 and logs it)
            await self.record(turn, None, internal_error(exc), stream=True)
            raise
        return self._recorded(turn, batches)

    async def _recorded(self, turn: Turn, batches: Batches) -> Batches:
        try:
            async for batch in batches:
                yield batch
        finally:
            outcome = turn.outcome
            if outcome is None:  # closed before the stream's producer could say how it ended
                await self.record(turn, None, None, stream=True, status=499)
            else:
                await self.record(turn, outcome.response, outcome.error, stream=True, status=outcome.status)

    async def record(
        self,
        turn: Turn,
        resp: Response | None,
        error: TurnstileError | None,
        *,
        stream: bool,
        status: int | None = None,
    ) -> None:
        """Write the rows of ``turn``: its steps' (appended), then its own (committed; returns
        once it is, or once the commit bound passed); the turn is counted once in the metrics,
        each step as a step."""
        transcript = self.gw.transcript
        if turn.steps:
            await _record_steps(self.gw, transcript, turn)
        # no answer: what the tool loop's steps that answered cost (turn.spent), if any
        usage = resp.usage if resp is not None else (turn.spent or Usage())
        dep = turn.deployment
        record = TurnRecord(
            request_id=turn.request_id,
            ts=turn.wall,
            client_dialect=turn.dialect,
            requested_model=turn.request.model,
            stream=stream,
            status=status if status is not None else (error.status if error is not None else 200),
            deployment=dep.name if dep else None,
            api=dep.api if dep else None,
            stop_reason=resp.stop_reason if resp is not None else None,
            usage=usage,  # models, dumped by the transcript writer thread (off the request path)
            cost_usd=usage.cost_usd,
            latency_ms=round((time.perf_counter() - turn.started) * 1000, 3),
            guard_outcome=turn.guard_outcome,
            repairs=[*turn.repairs, *turn.dropped] if turn.dropped else turn.repairs,
            withheld=list(resp.withheld_tool_calls) if resp is not None else [],
            attempts=turn.attempts,
            error=error.message if error is not None else None,
            request=turn_part(turn.request),
            response=resp,
            principal=turn.principal,
            session_id=turn.session_id,
        )
        self.gw.metrics.turn(record, turn.first_byte_s)
        if turn.trace is not None:
            turn.trace.end(turn, record, error)
        if transcript is None:
            return
        committed = transcript.try_commit(record)
        await (committed if committed is not None else transcript.commit(record))


async def _record_steps(gw: Gateway, transcript: TranscriptWriter | None, turn: Turn) -> None:
    """The rows ``<request id>.step<n>`` of the tool loop's model requests (appended, written
    with the turn's own row; counted in the metrics as steps, not turns: the turn's row holds
    their usage, cost and attempts)."""
    for step in turn.steps:
        dep = step.deployment
        resp = step.response
        record = TurnRecord(
            request_id=f"{turn.request_id}.step{step.step}",
            ts=time.time(),
            client_dialect=turn.dialect,
            requested_model=turn.request.model,
            stream=step.request.stream,
            status=200,
            deployment=dep.name if dep else None,
            api=dep.api if dep else None,
            stop_reason=resp.stop_reason,
            usage=resp.usage.model_dump(),
            cost_usd=resp.usage.cost_usd,
            withheld=[w.model_dump() for w in resp.withheld_tool_calls],
            request=step.request.model_dump(mode="json", exclude_none=True),
            response=resp.model_dump(mode="json"),
            principal=turn.principal,
            session_id=turn.session_id,
        )
        gw.metrics.step(record)
        if transcript is not None:
            await transcript.append(record)
    turn.steps = []


async def record_refused(gw: Gateway, request_id: str, dialect: str, error: TurnstileError) -> None:
    """One transcript row for a request refused before it became a turn (malformed body, a
    missing field, a body over the size limit, a bad session id): status and error, no request
    (it could not be read). Returns once the row is committed (bounded, as every turn's row:
    the error answer is released after it)."""
    record = TurnRecord(
        request_id=request_id,
        ts=time.time(),
        client_dialect=dialect,
        requested_model=None,
        stream=False,
        status=error.status,
        guard_outcome="invalid_request",
        error=error.message,
    )
    gw.metrics.turn(record)
    if gw.tracing is not None:
        gw.tracing.refused(record, error)
    if gw.transcript is not None:
        await gw.transcript.commit(record)


def aborted(turn: Turn) -> Response:
    """The answer recorded for a whole turn cut before it had one: empty, stop reason
    ``aborted``, with the usage of the tool-loop steps that answered before the cut
    (``turn.spent``; what the limits layer settles too), else none (what an upstream may have
    spent on the call that was cut is not known)."""
    return Response(
        id="aborted",
        model=turn.request.model,
        message=AssistantMessage(),
        stop_reason="aborted",
        usage=turn.spent or Usage(),
    )


def internal_error(exc: Exception) -> TurnstileError:
    """The row's error for an exception that is not a :class:`TurnstileError` (a bug); its text
    redacted (:func:`gateway.redaction.redact_secrets`: an SDK's exception may quote a key)."""
    return TurnstileError(redact_secrets(f"internal error: {type(exc).__name__}: {exc}"))


def turn_part(request: Request) -> Request:
    """The part of ``request`` that is new in this turn, for the transcript: the system
    messages and every message after the last assistant message (the user's new input or the
    tool results it sends back). Storing the whole history on every turn would grow the
    transcript quadratically with conversation length; the earlier messages are already in
    the rows of the earlier turns (and, when a session is bound, once in its log). The count of
    left-out messages is kept under ``metadata[HISTORY_OMITTED_KEY]``."""
    messages = request.messages
    last = -1
    for i in range(len(messages) - 1, -1, -1):
        if type(messages[i]) is AssistantMessage:
            last = i
            break
    if last < 0:
        return request
    kept = [m for m in messages[: last + 1] if type(m) is SystemMessage] + list(messages[last + 1 :])
    omitted = len(messages) - len(kept)
    return request.model_copy(
        update={"messages": kept, "metadata": {**request.metadata, HISTORY_OMITTED_KEY: omitted}}
    )
