"""The long tail of upstreams (Bedrock, Vertex, Azure, Mistral, Cohere, ...) through litellm.

litellm speaks every vendor's API and returns OpenAI Chat Completions shapes, so this adapter
reuses the OpenAI Chat wire conversion: the request body is
:func:`gateway.providers.openai_chat.to_wire_body`, the answer is read with
:func:`gateway.providers.openai_chat.from_wire_response` (``ModelResponse.model_dump()``) and,
streaming, every chunk's ``model_dump()`` goes through the OpenAI Chat stream parser's
``feed_obj``.

``deployment.model`` is litellm's model string (``bedrock/anthropic.claude-3-5-sonnet...``,
``mistral/mistral-large-latest``...); ``base_url`` becomes ``api_base``. litellm's own
retries are off (``num_retries=0``: the gateway decides about fallbacks) and
``drop_params=True`` lets litellm drop OpenAI parameters a vendor does not take instead of
failing the turn. Timeouts are the gateway's: connect + first byte for the call to start,
``between_chunks`` per stream chunk, ``total`` handed to litellm.

Errors: litellm's exceptions become :class:`gateway.errors.UpstreamError` with the upstream
status and the parsed ``retry-after`` (:func:`map_litellm_error`); timeouts become
:class:`gateway.errors.UpstreamTimeout`.

Tracing: the attempt's ``traceparent`` (:data:`gateway.providers.transport.UPSTREAM_TRACEPARENT`,
set by :mod:`gateway.tracing` while the call is made) goes upstream as an extra header, as the
other wire APIs send it from :func:`gateway.providers.transport._open`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from gateway.config import Deployment, TimeoutConfig, effective_timeouts
from gateway.errors import TurnstileError, UpstreamError, UpstreamTimeout
from gateway.providers.base import Provider
from gateway.providers.naming import NameMap
from gateway.providers.transport import UPSTREAM_TRACEPARENT
from gateway.providers.wire import CallContext
from gateway.schema import Request, Response, StreamError, StreamEvent

API = "litellm"

# Keys of the OpenAI Chat body that are passed to litellm.acompletion as they are.
_PASS_THROUGH = (
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "response_format",
    "reasoning_effort",
    "user",
    "stream_options",
)


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


def _retry_after(err: BaseException) -> float | None:
    from gateway.providers.transport import parse_retry_after

    sources: list[Any] = [
        getattr(err, "headers", None),
        getattr(err, "litellm_response_headers", None),
        getattr(getattr(err, "response", None), "headers", None),
    ]
    for headers in sources:
        if not headers:
            continue
        try:
            ms = headers.get("retry-after-ms")
            if ms is not None:
                return max(0.0, float(ms) / 1000.0)
            value = headers.get("retry-after")
        except (AttributeError, TypeError, ValueError):
            continue
        if value is not None:
            return parse_retry_after(str(value))
    return None


def map_litellm_error(err: BaseException, deployment: Deployment) -> TurnstileError:
    """A litellm (or openai SDK) exception -> the gateway error to raise.

    ``Timeout`` -> :class:`UpstreamTimeout`; ``APIConnectionError`` -> ``UpstreamError(502)``
    (nothing answered); any other exception with a ``status_code`` (``RateLimitError`` 429,
    ``BadRequestError`` 400, ``ContextWindowExceededError`` 400, ``AuthenticationError`` 401,
    ``PermissionDeniedError`` 403, ``NotFoundError`` 404, ``UnprocessableEntityError`` 422,
    ``InternalServerError`` 500, ``BadGatewayError`` 502, ``ServiceUnavailableError`` 503...)
    -> ``UpstreamError(status=that code, retry_after_s=retry-after header)``; an exception
    without one -> ``UpstreamError(502)``. Gateway errors pass through unchanged.
    """
    if isinstance(err, TurnstileError):
        return err
    litellm = _litellm()
    name = deployment.name
    message = str(getattr(err, "message", "") or err) or type(err).__name__
    if isinstance(err, litellm.exceptions.Timeout | asyncio.TimeoutError | TimeoutError):
        return UpstreamTimeout(f"deployment {name!r}: upstream timed out: {message}", deployment=name)
    if isinstance(err, litellm.exceptions.APIConnectionError):
        return UpstreamError(
            f"deployment {name!r}: cannot reach upstream: {message}", status=502, deployment=name
        )
    status = getattr(err, "status_code", None)
    if not isinstance(status, int) or status < 400:
        status = 502
    return UpstreamError(message, status=status, retry_after_s=_retry_after(err), deployment=name)


class LitellmProvider(Provider):
    """:class:`Provider` for ``api: litellm`` deployments (see module docstring)."""

    api = API

    def __init__(self, timeouts: TimeoutConfig | None = None) -> None:
        self.timeouts = timeouts or TimeoutConfig()

    def _timeouts(self, deployment: Deployment) -> TimeoutConfig:
        return effective_timeouts(self.timeouts, deployment)

    def call_kwargs(
        self, request: Request, deployment: Deployment, api_key: str | None, names: NameMap
    ) -> dict[str, Any]:
        """The keyword arguments of ``litellm.acompletion`` for ``request`` (the OpenAI Chat
        body of :func:`gateway.providers.openai_chat.to_wire_body` plus model, key, base URL,
        headers — the deployment's ``quirks.extra_headers`` and, with tracing on, the
        attempt's ``traceparent`` — timeout and ``stream``). Fills ``names`` with the name / id
        rewrites."""
        from gateway.providers.openai_chat import to_wire_body

        body = to_wire_body(request, deployment, names)
        kwargs: dict[str, Any] = {k: body[k] for k in _PASS_THROUGH if k in body}
        kwargs["model"] = deployment.model
        kwargs["stream"] = bool(request.stream)
        kwargs["num_retries"] = 0
        kwargs["drop_params"] = True
        kwargs["timeout"] = self._timeouts(deployment).total
        if api_key:
            kwargs["api_key"] = api_key
        if deployment.base_url:
            kwargs["api_base"] = deployment.base_url
        headers = dict(deployment.quirks.extra_headers)
        parent = UPSTREAM_TRACEPARENT.get()
        if parent is not None:  # tracing on: this attempt's span continues upstream
            headers["traceparent"] = parent
        if headers:
            kwargs["extra_headers"] = headers
        if request.stream:
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def _start(self, kwargs: dict[str, Any], deployment: Deployment) -> Any:
        t = self._timeouts(deployment)
        litellm = _litellm()
        try:
            return await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=t.connect + t.first_byte)
        except TimeoutError as err:
            raise UpstreamTimeout(
                f"deployment {deployment.name!r}: no answer within {t.connect + t.first_byte:.1f}s",
                deployment=deployment.name,
            ) from err
        except Exception as err:  # litellm raises its own hierarchy; mapped, never swallowed
            raise map_litellm_error(err, deployment) from err

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        """One non-streaming call through ``litellm.acompletion``; raises
        :class:`UpstreamError` subclasses (see :func:`map_litellm_error`)."""
        from gateway.providers.openai_chat import from_wire_response

        req = request.model_copy(update={"stream": False})
        ctx = CallContext(deployment=deployment, request=req, names=NameMap())
        result = await self._start(self.call_kwargs(req, deployment, api_key, ctx.names), deployment)
        obj = result.model_dump() if hasattr(result, "model_dump") else dict(result)
        return from_wire_response(obj, ctx)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        """One streaming call: litellm chunks -> internal events. Errors before the first event
        raise; later ones end the stream with a :class:`StreamError` event."""
        from gateway.providers.openai_stream import OpenAIChatStreamParser

        req = request.model_copy(update={"stream": True})
        ctx = CallContext(deployment=deployment, request=req, names=NameMap())
        result = await self._start(self.call_kwargs(req, deployment, api_key, ctx.names), deployment)
        parser = OpenAIChatStreamParser(ctx)
        between = self._timeouts(deployment).between_chunks
        iterator = result.__aiter__()
        emitted = False
        while True:
            try:
                chunk = await asyncio.wait_for(iterator.__anext__(), timeout=between)
            except StopAsyncIteration:
                break
            except Exception as exc:
                err = (
                    UpstreamTimeout(
                        f"deployment {deployment.name!r}: no stream chunk within {between:.1f}s",
                        deployment=deployment.name,
                    )
                    if isinstance(exc, TimeoutError)
                    else map_litellm_error(exc, deployment)
                )
                if not emitted:
                    raise err from exc
                yield StreamError(kind=err.kind, message=err.message, status=err.status)
                return
            obj = chunk.model_dump() if hasattr(chunk, "model_dump") else dict(chunk)
            for ev in parser.feed_obj(obj):
                emitted = True
                yield ev
        for ev in parser.finish():
            yield ev
