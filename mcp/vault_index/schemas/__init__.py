"""JSON Schemas shipped with the package: the vault config and note frontmatter (read via importlib.resources)."""
