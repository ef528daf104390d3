"""Implementation modules of the invariant guards.

The public face is :mod:`gateway.invariants`; import from there. The modules here are split
by concept: :mod:`.common` (repair records, locations), :mod:`.pairing` (pairing and
ordering of tool calls and results), :mod:`.truncation` (withholding incomplete tool
calls, streaming and not), :mod:`.collect` (building a response from stream events) and
:mod:`.thinking` (signed reasoning sent to another model).
"""
