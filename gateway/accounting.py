"""Cost accounting: token usage priced in USD, and usage summed over attempts.

Prices are :class:`gateway.config.Price` in USD per million tokens. Token fields follow the
:class:`gateway.schema.Usage` convention: ``input_tokens`` excludes cache reads and cache
writes, and ``reasoning_tokens`` is part of ``output_tokens``; so each token is priced
exactly once, at its own rate.
"""

from __future__ import annotations

from gateway.config import Price
from gateway.schema import Usage, evolve

COST_DECIMALS = 9
"""Costs are rounded to 1e-9 USD so that equal usage always prints the same cost."""


def compute_cost(usage: Usage, price: Price) -> float | None:
    """The cost of ``usage`` at ``price``, in USD, rounded to :data:`COST_DECIMALS`.

    ``(input * p.input + cache_read * p.cache_read + cache_write * p.cache_write
    + (output - reasoning) * p.output + reasoning * p.reasoning) / 1e6``.

    Fallbacks (only when the price is unset, i.e. None; an explicit 0.0 is a price):
    ``cache_read`` and ``cache_write`` fall back to ``p.input`` (an upstream without a
    cache discount bills cached tokens as input), ``reasoning`` to ``p.output``.
    Returns None when ``p.input`` or ``p.output`` is unknown. Never raises; a reasoning count
    above the output count (inconsistent upstream data) prices the reasoning tokens only.
    """
    if price.input is None or price.output is None:
        return None
    cache_read = price.cache_read if price.cache_read is not None else price.input
    cache_write = price.cache_write if price.cache_write is not None else price.input
    reasoning = price.reasoning if price.reasoning is not None else price.output
    plain_output = max(usage.output_tokens - usage.reasoning_tokens, 0)
    per_million = (
        usage.input_tokens * price.input
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
        + plain_output * price.output
        + usage.reasoning_tokens * reasoning
    )
    return round(per_million / 1e6, COST_DECIMALS)


def priced(usage: Usage, price: Price | None) -> Usage:
    """``usage`` with ``cost_usd`` set by :func:`compute_cost` (None when ``price`` is None
    or incomplete). Returns a new Usage; the input is not changed."""
    cost = compute_cost(usage, price) if price is not None else None
    return evolve(usage, cost_usd=cost)


def _has_tokens(u: Usage) -> bool:
    return bool(u.input_tokens or u.output_tokens or u.cache_read_tokens or u.cache_write_tokens)


def merge_usage(a: Usage, b: Usage) -> Usage:
    """The usage of two attempts of one turn (a retry or a fallback) added together.

    Token counts add; ``estimated`` is True if either was estimated. ``cost_usd`` adds when
    both are known; an unknown cost on an attempt that used no tokens counts as 0; otherwise
    the total is unknown (None) — a partial sum would understate the spend.
    """
    if a.cost_usd is not None and b.cost_usd is not None:
        cost: float | None = round(a.cost_usd + b.cost_usd, COST_DECIMALS)
    elif a.cost_usd is None and b.cost_usd is None:
        cost = None
    else:
        known, unknown = (a, b) if a.cost_usd is not None else (b, a)
        cost = known.cost_usd if not _has_tokens(unknown) else None
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
        estimated=a.estimated or b.estimated,
        cost_usd=cost,
    )
