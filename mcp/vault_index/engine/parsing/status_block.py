"""A decision record's status block: the lines that say a record's state, not what it decides.

Nygard, adr-tools and MADR records open with `Status: accepted`, `- **Date:** 2026-04-02` lines or
a `## Status` section holding one word. Alone, such a block made a chunk of its own that ranked
first (the title's words are its context) and was shown as the answer (issue 39 item 8).
"""

from __future__ import annotations

import re

# Only a record's own keys: a note's own "Range: 300 m" lines are its content, never a status block.
_FIELD = re.compile(r"^(?:[-*]\s+)?(?:\*\*|__)?(?:status|date|deciders?|authors?|owners?|reviewers?|consulted|informed"
                    r"|supersedes|superseded by|technical story|tags|created|updated|last updated)(?:\*\*|__)?\s*:"
                    r"(?:\*\*|__)?(?:\s.{0,160})?$", re.IGNORECASE)
# "Accepted", "Superseded by 0005": a runbook's long Status section is content.
STATUS_SECTION_WORDS = 6
MAX_FIELD_LINES = 12


def no_prose(text: str, heading: str = "") -> bool:
    """Whether a chunk or section is only a status block: field lines, nothing at all (a heading
    right above another), or a short `## Status` section."""
    if heading.rsplit(">", 1)[-1].strip().lower() == "status" and len(text.split()) <= STATUS_SECTION_WORDS:
        return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return len(lines) <= MAX_FIELD_LINES and all(_FIELD.match(line) for line in lines)
