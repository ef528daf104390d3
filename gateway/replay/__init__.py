"""``turnstile replay``: recorded agent sessions and provider traffic through the whole
pipeline (see :mod:`gateway.replay.runner`; readers live in ``gateway/edges/recorded`` and
``gateway/providers/recorded``)."""
