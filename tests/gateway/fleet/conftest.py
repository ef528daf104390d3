"""The fleet tests' fixture: links to the test Redis under a prefix of their own."""

from fleet_support import links

__all__ = ["links"]
