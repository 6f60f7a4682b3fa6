"""The link graph: neighbours, rules and the graph tools' data."""
