"""The write service and what a write runs through: hooks, edits, moves, provenance, conflicts."""
