"""The search pipeline: query parsing, date filters and rank fusion."""
