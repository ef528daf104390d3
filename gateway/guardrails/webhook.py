"""An external guardrail service behind a webhook (``guardrails.webhook``,
:class:`gateway.config.GuardrailWebhook`).

Request: ``POST url`` with JSON ``{"stage": "tool_output" | "input" | "output", "text": ...,
"context": {"server"?, "tool"?, "client"?, "request_id"?}}`` and the configured headers.
Answer: JSON ``{"action": "allow" | "redact" | "block" | "flag", "text"?: the redacted text
(for ``redact``), "reason"?: why}``. No answer within ``timeout_s``, a non-2xx status or an
answer of another shape is a failure: ``fail: open`` allows the text (the verdict says
``webhook_unavailable``, flagged), ``fail: closed`` blocks it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import structlog

from gateway.config import GuardrailWebhook

log = structlog.get_logger("turnstile.guardrails.webhook")

ACTIONS = ("allow", "redact", "block", "flag")


@dataclass(frozen=True)
class WebhookVerdict:
    """What the service said: ``action``, the replacement ``text`` (redact), ``reason``;
    ``failed`` when it did not answer properly (the action is then the configured fail mode's)."""

    action: str
    text: str | None = None
    reason: str = ""
    failed: bool = False


class Webhook:
    """One configured service; ``read_env`` gives header values (None: unset, not sent)."""

    def __init__(self, config: GuardrailWebhook, read_env: Callable[[str], str | None]) -> None:
        self.config = config
        self._headers = {"content-type": "application/json"}
        for name, env in config.headers_env.items():
            value = read_env(env)
            if value:
                self._headers[name] = value
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        """Close the HTTP session (at shutdown)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _failed(self, why: str) -> WebhookVerdict:
        action = "block" if self.config.fail == "closed" else "flag"
        log.warning("guardrail_webhook_failed", url=self.config.url, error=why, fail=self.config.fail)
        return WebhookVerdict(action, reason=f"webhook_unavailable: {why}", failed=True)

    async def check_many(self, stage: str, texts: list[str], context: dict[str, Any]) -> list[WebhookVerdict]:
        """The service's verdicts on ``texts`` (in order): one call each, all at once, under one
        overall deadline of ``timeout_s`` seconds; a call unanswered by then is the fail mode's
        (never raises)."""
        tasks = [asyncio.ensure_future(self.check(stage, t, context)) for t in texts]
        if not tasks:
            return []
        _, pending = await asyncio.wait(tasks, timeout=self.config.timeout_s)
        for task in pending:
            task.cancel()
        late = self._failed(f"no answer within {self.config.timeout_s:g} s") if pending else None
        if pending:
            await asyncio.wait(pending)
        return [late if late is not None and t in pending else t.result() for t in tasks]

    async def check(self, stage: str, text: str, context: dict[str, Any]) -> WebhookVerdict:
        """The service's verdict on ``text`` (never raises: a failure is the fail mode's)."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        body = orjson.dumps({"stage": stage, "text": text, "context": context})
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
        try:
            async with self._session.post(
                self.config.url, data=body, headers=self._headers, timeout=timeout
            ) as r:
                raw = await r.read()
                if not 200 <= r.status < 300:
                    return self._failed(f"HTTP {r.status}")
            answer = orjson.loads(raw)
        except TimeoutError:
            return self._failed(f"no answer within {self.config.timeout_s:g} s")
        except (aiohttp.ClientError, orjson.JSONDecodeError, OSError) as err:
            return self._failed(f"{type(err).__name__}: {err}")
        if not isinstance(answer, dict) or answer.get("action") not in ACTIONS:
            return self._failed("answer is not {action: allow|redact|block|flag}")
        new = answer.get("text")
        if answer["action"] == "redact" and not isinstance(new, str):
            return self._failed("a redact answer without its text")
        reason = answer.get("reason")
        return WebhookVerdict(answer["action"], new if isinstance(new, str) else None, str(reason or ""))
