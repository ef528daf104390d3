"""What each Gemini model family takes, as data: which structured-output slot and which thinking
settings (read by :mod:`gateway.providers.gemini_request`).

* **Structured output.** ``generationConfig.responseJsonSchema`` (JSON Schema: ``$ref`` /
  ``$defs``, ``anyOf``, ``additionalProperties``, ``prefixItems`` ...) is taken by Gemini 2.5
  and later; older models (Gemini 2.0, 1.5) take only ``responseSchema``, the OpenAPI 3.0
  subset (Gemini API reference, ``GenerationConfig.responseJsonSchema``: "an alternative to
  responseSchema that accepts JSON Schema"; the structured-output guide, "JSON Schema support"
  for Gemini 2.5). A model that takes it gets the schema as JSON Schema, so nothing is lost in
  a conversion; an older one gets :func:`gateway.providers.gemini_schema.to_gemini_schema`
  (what it cannot state written into descriptions).
* **Thinking** (Gemini API "Thinking" guide, thinking budgets per model): Gemini 3 models take
  a ``thinkingLevel`` (Gemini 3 Pro ``low`` / ``high`` only) and cannot turn thinking off;
  Gemini 2.5 Pro a ``thinkingBudget`` of 128 to 32768 and cannot turn it off; 2.5 Flash 0 to
  24576 (0: off); 2.5 Flash-Lite 512 to 24576 (0: off); -1 (dynamic) on every 2.5 model.
  Gemini 2.0 and 1.5 models do not think. A budget outside the model's range is brought into
  it (:func:`fit_budget`).

A model id is matched by the longest family prefix (``models/`` removed); an id no family
matches (a newer model) is taken as the newest: :data:`NEWEST`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["FAMILIES", "NEWEST", "GeminiModel", "fit_budget", "model_family"]


@dataclass(frozen=True)
class GeminiModel:
    """One Gemini model family: ``prefix`` of its model ids; ``json_schema``: it takes
    ``responseJsonSchema``; ``thinking``: how thinking is set (``level``: ``thinkingLevel``
    from ``levels``; ``budget``: ``thinkingBudget`` from ``budget_min`` to ``budget_max``
    tokens; ``none``: it does not think); ``can_turn_off``: thinking can be turned off
    (``thinkingBudget: 0``)."""

    prefix: str
    json_schema: bool
    thinking: Literal["level", "budget", "none"]
    budget_min: int = 0
    budget_max: int = 0
    can_turn_off: bool = False
    levels: tuple[str, ...] = ()


FAMILIES: tuple[GeminiModel, ...] = (
    GeminiModel("gemini-3-pro", True, "level", levels=("low", "high")),
    GeminiModel("gemini-3.1-pro", True, "level", levels=("low", "high")),
    GeminiModel("gemini-3", True, "level", levels=("minimal", "low", "medium", "high")),
    GeminiModel("gemini-2.5-pro", True, "budget", 128, 32768, can_turn_off=False),
    GeminiModel("gemini-2.5-flash-lite", True, "budget", 512, 24576, can_turn_off=True),
    GeminiModel("gemini-2.5-flash", True, "budget", 1, 24576, can_turn_off=True),
    GeminiModel("gemini-2.0", False, "none"),
    GeminiModel("gemini-1.5", False, "none"),
)
"""The families, each model id matched by the longest prefix (the table's order has the longer
prefixes of a version first)."""

NEWEST = FAMILIES[1]
"""What an id no family matches is taken as (a model newer than this table)."""


def model_family(model: str) -> GeminiModel:
    """The family of Gemini model id ``model`` (``gemini-2.5-flash-001``,
    ``models/gemini-3-pro-preview``), else :data:`NEWEST`."""
    name = model[len("models/") :] if model.startswith("models/") else model
    for family in FAMILIES:
        if name.startswith(family.prefix):
            return family
    return NEWEST


def fit_budget(family: GeminiModel, budget: int) -> int:
    """``budget`` (tokens; -1 dynamic, 0 off) as ``family`` takes it: -1 kept, 0 kept where
    thinking can be turned off, any other value brought into ``budget_min`` .. ``budget_max``.
    For a ``budget`` family only."""
    if budget == -1 or (budget == 0 and family.can_turn_off):
        return budget
    return min(max(budget, family.budget_min), family.budget_max)
