"""Routing policies: pure decisions over a turn's features (cost-based routing lands with issue 5;
until then a model alias is served by its deployments in order, primary first)."""
