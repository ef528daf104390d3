"""The guardrails engine: runs the configured checks over one text and decides the action.

:meth:`Guardrails.check` takes a text, its ``stage`` (``tool_output``, ``input``, ``output``)
and context (server, tool, client, request id) and returns a :class:`Checked`: the text to use
(redacted when a ``redact`` finding was made), the action taken (``allow``, ``redact``,
``block``, ``flag``; the strongest of the findings': block > redact > flag) and the findings.
Each action other than ``allow`` is logged (``guardrail_action``), counted
(``turnstile_guardrail_actions_total{stage,check,action}`` through ``metrics``) and written to
the audit (``audit``: an async callable taking one dict), once per check and action.

Which checks run where: secrets and PII on every enabled stage, injection markers on tool
results only, the webhook on the stages it names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from gateway.config import GuardrailsConfig
from gateway.guardrails.findings import Finding, without_overlaps
from gateway.guardrails.injection import MARKERS, find_injection
from gateway.guardrails.pii import find_pii
from gateway.guardrails.secrets import find_secrets
from gateway.guardrails.webhook import Webhook, WebhookVerdict

log = structlog.get_logger("turnstile.guardrails")

Audit = Callable[[dict[str, Any]], Awaitable[None]]
Count = Callable[[str, str, str], None]
"""``(stage, check, action)``: one action counted (:meth:`gateway.metrics.Metrics.guardrail`)."""

_RANK = {"allow": 0, "flag": 1, "redact": 2, "block": 3}


@dataclass
class Checked:
    """The outcome for one text: ``text`` to use, ``action``, ``findings``, and ``reason`` (the
    kinds found, for an error result or a refusal)."""

    text: str
    action: str = "allow"
    findings: list[Finding] = field(default_factory=list)
    reason: str = ""


class Guardrails:
    """The checks of one gateway (``config``: the ``guardrails`` section)."""

    def __init__(
        self,
        config: GuardrailsConfig,
        *,
        read_env: Callable[[str], str | None] = lambda _: None,
        audit: Audit | None = None,
        count: Count | None = None,
    ) -> None:
        self.config = config
        self.audit = audit
        self.count = count
        self.markers = tuple(config.injection_markers) if config.injection_markers is not None else MARKERS
        self.pii_kinds = frozenset(config.pii_kinds)
        self.webhook = Webhook(config.webhook, read_env) if config.webhook is not None else None

    def stage_on(self, stage: str) -> bool:
        """Whether ``stage`` is checked at all."""
        c = self.config
        return c.enabled and (
            c.tool_results if stage == "tool_output" else c.input if stage == "input" else c.output
        )

    def _local(self, stage: str, text: str) -> list[tuple[Finding, str]]:
        c = self.config
        out: list[tuple[Finding, str]] = []
        if c.secrets != "off":
            out += [(f, c.secrets) for f in find_secrets(text)]
        if c.pii != "off" and self.pii_kinds:
            out += [(f, c.pii) for f in find_pii(text, self.pii_kinds)]
        if stage == "tool_output" and c.injection != "off":
            out += [(f, c.injection) for f in find_injection(text, self.markers)]
        return out

    def _local_outcome(self, stage: str, text: str) -> tuple[str, str, list[tuple[Finding, str]]]:
        """The local checks' ``(text to use, action, (finding, action) pairs)`` for ``text``."""
        found = self._local(stage, text)
        action = max((a for _, a in found), key=_RANK.__getitem__, default="allow")
        out = text
        if action == "redact":
            spans = without_overlaps([f for f, a in found if a == "redact"])
            for f in reversed(spans):
                out = f"{out[: f.start]}[REDACTED:{f.kind}]{out[f.end :]}"
        return out, action, found

    def _webhook_on(self, stage: str) -> Webhook | None:
        hook = self.webhook
        return hook if hook is not None and stage in hook.config.stages else None

    @staticmethod
    def _apply(
        verdict: WebhookVerdict, out: str, action: str, found: list[tuple[Finding, str]]
    ) -> tuple[str, str]:
        """The webhook's ``verdict`` merged into one text's outcome (``found`` appended to)."""
        if verdict.action != "allow":
            found.append((Finding("webhook", verdict.reason or verdict.action), verdict.action))
            if _RANK[verdict.action] > _RANK[action]:
                action = verdict.action
            if verdict.action == "redact" and verdict.text is not None:
                out = verdict.text
        return out, action

    @staticmethod
    def _checked(out: str, action: str, found: list[tuple[Finding, str]]) -> Checked:
        kinds = sorted({f"{f.check}:{f.kind}" for f, _ in found})
        return Checked(out if action != "block" else "", action, [f for f, _ in found], ", ".join(kinds))

    async def check(
        self, stage: str, text: str, context: dict[str, Any] | None = None, *, record: bool = True
    ) -> Checked:
        """The outcome for ``text`` at ``stage`` (see the module docstring); ``record`` False
        for a second look at data already checked and recorded (a result's structured copy).
        Never raises for a check's fault: a webhook failure is its fail mode's action."""
        context = context or {}
        out, action, found = self._local_outcome(stage, text)
        hook = self._webhook_on(stage)
        if hook is not None and action != "block":
            out, action = self._apply(await hook.check(stage, out, context), out, action, found)
        if found and record:
            await self._record(stage, found, context)
        return self._checked(out, action, found)

    async def check_all(
        self, stage: str, texts: list[str], context: dict[str, Any] | None = None
    ) -> tuple[list[str], str | None]:
        """Each of ``texts`` checked as one unit: the local checks on each, then the webhook on
        all of them concurrently under one overall deadline of its ``timeout_s``
        (:meth:`Webhook.check_many`; skipped when a local check already blocks). The actions
        are recorded once for the unit, each (check, action) with all the kinds found. Returns
        the texts to use and, when one is blocked, the reason (the kinds found, of the
        blocked texts), else None (``texts`` unchanged when blocked)."""
        context = context or {}
        outcomes = [self._local_outcome(stage, t) for t in texts]
        hook = self._webhook_on(stage)
        if hook is not None and outcomes and all(a != "block" for _, a, _ in outcomes):
            verdicts = await hook.check_many(stage, [o for o, _, _ in outcomes], context)
            outcomes = [
                (*self._apply(v, out, action, found), found)
                for v, (out, action, found) in zip(verdicts, outcomes, strict=True)
            ]
        found_all = [pair for _, _, found in outcomes for pair in found]
        if found_all:
            await self._record(stage, found_all, context)
        checked = [self._checked(*o) for o in outcomes]
        blocked = [c.reason for c in checked if c.action == "block"]
        if blocked:
            return texts, ", ".join(sorted({k for r in blocked for k in r.split(", ")}))
        return [c.text for c in checked], None

    async def _record(self, stage: str, found: list[tuple[Finding, str]], context: dict[str, Any]) -> None:
        """Log, count and audit each (check, action) once, with the kinds found."""
        by: dict[tuple[str, str], set[str]] = {}
        for f, a in found:
            by.setdefault((f.check, a), set()).add(f.kind)
        for (check, action), kinds in sorted(by.items()):
            entry = {"stage": stage, "check": check, "action": action, "kinds": sorted(kinds), **context}
            log.info("guardrail_action", **entry)
            if self.count is not None:
                self.count(stage, check, action)
            if self.audit is not None:
                try:
                    await self.audit(entry)
                except Exception:
                    log.exception("guardrail_audit_failed", **entry)

    async def close(self) -> None:
        """Close the webhook's HTTP session."""
        if self.webhook is not None:
            await self.webhook.close()
