"""The ``cascade`` policy: cheapest tier first; escalate when the answer fails validation.

Validation of a non-streaming answer (:func:`validate`), in order:

* truncation: the answer stopped for length, or tool calls were withheld;
* tool-call arguments: a call naming a tool that was not offered, or arguments that are not
  valid JSON or not valid against that tool's JSON Schema (``jsonschema``, the schema's own
  draft);
* an empty answer (no text and no tool call) or a refusal (content filter, or a short answer
  opening with a refusal phrase).

Each failed attempt's cost is kept and added to the turn's usage by the pipeline ("wasted
cost" in the route record). Streaming requests are not cascaded: they go to the configured
default tier (the strongest unless set), because nothing may be retried after the first byte.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import orjson

from gateway.config import RoutingConfig
from gateway.schema import Request, Response
from routers.base import Candidate, Decision
from routers.features import TurnFeatures
from routers.rules import compile_rules, decide_tier, decision_for_tier, strongest

_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry, (but )?i|i can(no|')t (help|assist|do|comply)|"
    r"i'?m (not able|unable) to|i am (not able|unable) to|as an ai\b)",
    re.IGNORECASE,
)


@lru_cache(maxsize=256)
def _validator(schema_json: bytes) -> Any:
    import jsonschema

    schema = orjson.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def validate(request: Request, response: Response) -> str | None:
    """Why ``response`` should be escalated (a short reason), or None when it passes."""
    if response.stop_reason == "length" or response.withheld_tool_calls:
        return "truncated"
    if response.stop_reason == "content_filter":
        return "refused (content filter)"
    tools = {t.name: t for t in request.tools}
    calls = response.message.tool_calls
    for call in calls:
        tool = tools.get(call.name)
        if tool is None:
            return f"tool call {call.id} names unknown tool {call.name!r}"
        try:
            args = orjson.loads(call.raw_arguments or "{}")
        except orjson.JSONDecodeError:
            return f"tool call {call.id} arguments are not valid JSON"
        try:
            err = next(
                iter(
                    _validator(orjson.dumps(tool.parameters, option=orjson.OPT_SORT_KEYS)).iter_errors(args)
                ),
                None,
            )
        except Exception as exc:  # an invalid schema from the client: cannot judge, let it pass
            del exc
            err = None
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "(root)"
            return f"tool call {call.id} arguments invalid at {where}: {err.message[:120]}"
    text = response.message.text.strip()
    if not calls and not text:
        return "empty answer"
    if not calls and len(text) < 400 and _REFUSAL.search(text):
        return "refused"
    return None


class CascadeRouter:
    """The ``cascade`` policy for one alias: cheapest first, escalation by the pipeline."""

    name = "cascade"

    def __init__(self, cfg: RoutingConfig) -> None:
        self.cfg = cfg
        self.rules = compile_rules(cfg.rules)

    def decide(
        self, features: TurnFeatures, candidates: list[Candidate], *, stream: bool = False
    ) -> Decision:
        """Rules first; else the cheapest tier with ``cascade=True`` (non-streaming) or the
        default tier (streaming)."""
        hit = decide_tier(self.cfg, self.rules, features)
        if hit is not None:
            return decision_for_tier(self.name, hit[0], f"cascade: {hit[1]}", self.cfg, candidates, features)
        if stream:
            tier = strongest(self.cfg)
            return decision_for_tier(
                self.name, tier, f"cascade: streaming, no cascade -> {tier}", self.cfg, candidates, features
            )
        tier = next(iter(self.cfg.tiers))
        return decision_for_tier(
            self.name,
            tier,
            f"cascade: {tier} first, escalate on failed validation",
            self.cfg,
            candidates,
            features,
            cascade=True,
        )
