"""The layers of a turn, one concern each; :mod:`gateway.pipeline` puts them in order.
No layer imports another (import-linter: ``independence``); what they share is in
:mod:`gateway.turn`."""
