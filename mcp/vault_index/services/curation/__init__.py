"""Curated-vault work above the write path: lint, review, lessons, ADRs, scaffolding."""
