"""Token counts and cuts for the ``demo`` deployment (:mod:`gateway.providers.demo`): real
``cl100k_base`` tokens (tiktoken), so its usage numbers and its ``max_tokens`` cuts look like a
real model's.

The encoding's ranks are read from the copy litellm bundles
(``litellm/litellm_core_utils/tokenizers/9b5ad71b…``, the file tiktoken caches for
``cl100k_base``; https://github.com/BerriAI/litellm/issues/1071), located without importing
litellm (seconds) and checked against tiktoken's published SHA-256, so nothing is downloaded and
the environment is neither read nor changed. The encoder is built once, on first use (~0.3 s).
When that copy is missing or tiktoken cannot load it, counts fall back to one token per
:data:`CHARS_PER_TOKEN` characters; either way the same text always gives the same count.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "count", "cut"]

CHARS_PER_TOKEN = 4
"""Characters per token of the fallback estimate."""

_RANKS_FILE = "litellm_core_utils/tokenizers/9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
_RANKS_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's split pattern and special tokens, as in tiktoken_ext/openai_public.py.
_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@functools.cache
def _encoding() -> Any:
    """The ``cl100k_base`` encoder, or None when it cannot be built offline."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / _RANKS_FILE
    try:
        import tiktoken

        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != _RANKS_SHA256:
            return None
        ranks = {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
        return tiktoken.Encoding(
            name="cl100k_base", pat_str=_PATTERN, mergeable_ranks=ranks, special_tokens=_SPECIAL
        )
    except (ImportError, OSError, ValueError):
        return None


def count(text: str) -> int:
    """Tokens in ``text`` (0 for the empty string); special-token text counts as plain text."""
    enc = _encoding()
    if enc is None:
        return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
    return len(enc.encode_ordinary(text))


def cut(text: str, budget: int) -> str:
    """The longest prefix of ``text`` that is at most ``budget`` tokens (whole characters: a
    token that ends inside a multi-byte character is left out)."""
    enc = _encoding()
    if enc is None:
        return text[: max(budget, 0) * CHARS_PER_TOKEN]
    tokens = enc.encode_ordinary(text)
    if len(tokens) <= budget:
        return text
    prefix = enc.decode_bytes(tokens[: max(budget, 0)])
    return prefix.decode("utf-8", errors="ignore")
