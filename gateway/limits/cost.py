"""The worst-case cost of a turn, reserved against budgets before it goes upstream."""

from __future__ import annotations

from gateway.config import Price


def worst_case_usd(input_tokens: int, max_output_tokens: int, price: Price | None) -> float | None:
    """USD a turn can cost at most: ``input_tokens`` at the input price plus
    ``max_output_tokens`` at the dearer of the output and reasoning prices.

    ``price`` is :class:`gateway.config.Price` (USD per million tokens, as
    :func:`gateway.accounting.compute_cost` reads it). Input is priced at the highest of the
    input, cache-write and cache-read prices that are set, since the split of the input into
    cached and uncached tokens is known only from the answer. Returns None when the price or
    its input or output rate is unknown: such a turn's cost cannot be bounded, and the caller
    decides (the limits layer refuses it under a hard budget). Negative counts count as 0.
    """
    if price is None or price.input is None or price.output is None:
        return None
    per_input = price.input
    if price.cache_write is not None and price.cache_write > per_input:
        per_input = price.cache_write
    if price.cache_read is not None and price.cache_read > per_input:
        per_input = price.cache_read
    per_output = price.output
    if price.reasoning is not None and price.reasoning > per_output:
        per_output = price.reasoning
    return (max(input_tokens, 0) * per_input + max(max_output_tokens, 0) * per_output) / 1e6
