"""The frontmatter fields every curated note may carry, in the order they are written.

Below both the vault config (which refuses a custom field of the same name) and the frontmatter
rules (which order and check them).
"""

CORE_FIELDS = ("title", "collection", "status", "confidence", "created", "updated", "updated_by", "sources",
               "superseded_by", "deprecation_reason", "ttl_days", "tags", "questions_answered", "questions_raised")
