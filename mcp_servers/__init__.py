"""Registry of upstream MCP servers, aggregation and trust tiers (issue 6)."""
