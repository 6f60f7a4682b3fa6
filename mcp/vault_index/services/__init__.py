"""Services layer: the search pipeline, note access, eval and bench. Surfaces call only these."""
