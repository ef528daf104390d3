"""Benchmarks: Turnstile side by side with LiteLLM's proxy and a bare pass-through floor
(``python -m bench.run``), and in-process micro benchmarks (``bench/micro``)."""
