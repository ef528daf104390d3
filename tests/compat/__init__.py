"""The real-client compatibility suite (see ``matrix.py`` and ``docs/compat.md``)."""
