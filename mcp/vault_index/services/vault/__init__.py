"""A curated vault's rules: its config, note types, frontmatter schema and safe patterns."""
