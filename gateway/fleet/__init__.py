"""What gateway instances share through Redis besides the limit counters (``redis.url``):
deployment health (:mod:`.health`), the thinking and signer memories (:mod:`.memory`), the MCP
servers added through the admin API (:mod:`.mcp`) and the change notifications that put a
change made on one instance in force on every other (:mod:`.bus`). :mod:`.open` wires them into
a gateway; without ``redis.url`` none of this exists and every instance keeps its own state.
"""
