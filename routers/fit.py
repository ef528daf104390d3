"""Which candidates can serve a turn: context window, capabilities and health.

Pure functions over :class:`routers.base.Candidate` and :class:`routers.features.TurnFeatures`.
A candidate that cannot fit is excluded with a reason; an unhealthy one (cooling down,
circuit open) is excluded too. When nothing is left, capability and window exclusions are
**kept** (the pipeline's own checks then give the client a precise error) and unhealthy
deployments are tried anyway (better a probe than a certain failure).
"""

from __future__ import annotations

from collections.abc import Callable

from routers.base import Candidate
from routers.features import TurnFeatures


def misfit(features: TurnFeatures, cand: Candidate) -> str | None:
    """Why ``cand`` cannot serve a turn with ``features`` (window with the reserved output,
    tools, images, JSON mode), or None when it can. Thinking is not a reason: the thinking
    policy downgrades it per target."""
    dep = cand.deployment
    reserved = features.reserved_output_tokens or dep.max_output_tokens or 0
    if cand.window is not None and features.input_tokens + reserved > cand.window:
        return f"context {features.input_tokens}+{reserved} > window {cand.window}"
    if features.tools and not dep.supports_tools:
        return "no tool support"
    if features.images and not dep.supports_images:
        return "no image input"
    if features.json_mode and not dep.supports_json_mode:
        return "no JSON mode"
    return None


def filter_candidates(
    features: TurnFeatures, candidates: list[Candidate], unavailable: Callable[[str], str | None]
) -> tuple[list[Candidate], dict[str, str]]:
    """The candidates that fit and are healthy, in input order, and the excluded ones with
    their reasons (deployment name -> reason). ``unavailable(name)`` is the health check
    (:meth:`routers.health.HealthBoard.unavailable`)."""
    excluded: dict[str, str] = {}
    fitting: list[Candidate] = []
    for c in candidates:
        why = misfit(features, c)
        if why is not None:
            excluded[c.name] = why
        else:
            fitting.append(c)
    if not fitting:
        return list(candidates), excluded
    healthy: list[Candidate] = []
    for c in fitting:
        why = unavailable(c.name)
        if why is not None:
            excluded[c.name] = why
        else:
            healthy.append(c)
    if not healthy:
        return fitting, excluded
    return healthy, excluded


def larger_windows(candidates: list[Candidate], than: Candidate) -> list[Candidate]:
    """Candidates whose context window is known and larger than ``than``'s (a context overflow
    fallback), largest last, in input order otherwise."""
    base = than.window or 0
    return [c for c in candidates if c.window is not None and c.window > base]
