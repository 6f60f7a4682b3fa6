"""Services layer: the search pipeline, note access, the write service, curation, the graph.

Surfaces call only these (eval and bench code lives in vault_index.tooling, beside the CLI)."""
