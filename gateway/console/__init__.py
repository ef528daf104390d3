"""The admin console at ``/ui``: server-rendered pages over the gateway's stores (Jinja2
templates, a vendored htmx for partial updates, charts as inline SVG; no build step).

It reads what the gateway already keeps — the transcript, the session store, the routing health
board, the MCP registry and its audit, the access store — and writes nothing but its own log-in
cookie: it is not a turn and adds nothing to one. :mod:`gateway.console.app` lists its routes;
:mod:`gateway.console.auth` says who may open it (the admin key) and how it is protected.
"""
