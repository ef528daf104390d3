"""The limits tests' fixtures (defined in :mod:`limits_support`)."""

from limits_support import clock, make_limits

__all__ = ["clock", "make_limits"]
