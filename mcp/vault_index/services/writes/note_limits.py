"""How much text one write may carry, and how much structure an edit may parse: the bounds of a request.

Trigger: one replace_section on a note with 60,000 headings held the server's lock for 19-35 s,
and every read waited behind it; an agent could make such a note itself (issue 36).
Why: a write runs under the lock every tool shares (one index connection), so its cost is every
reader's wait. The cost grows with the note's structure, not only its size: the markdown parser
takes about 0.1 ms a heading and 0.07 ms a list line here, and the index makes a chunk per section.
Outcome: every write refuses a body over MAX_BODY_CHARS or with more than MAX_NOTE_HEADINGS
headings (the index keeps 2,000 chunks of a note at most anyway); replace_section, the one edit
that parses the whole note, refuses a note over MAX_SECTION_LINES lines before parsing it. Each
refusal says what to do instead.
"""

from __future__ import annotations

import re

from vault_index.services.vault import frontmatter as fm

MAX_BODY_CHARS = 2_000_000
# 2,000 headings parse in ~0.2 s and index in ~0.4 s here (60,000 took 12 s each); the index
# embeds the first 2,000 chunks of a note only (engine/indexer.MAX_CHUNKS_PER_NOTE)
MAX_NOTE_HEADINGS = 2_000
# replace_section parses the note: 10,000 lines of a list take ~0.7 s here, 150,000 took 10-15 s
MAX_SECTION_LINES = 10_000
# ATX headings and setext underlines, counted without parsing: an upper bound (a `#` line in a
# fence, a `---` rule count too), cheap enough to run before anything else
_HEADING_LINE = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)", re.MULTILINE)


def heading_count(body: str) -> int:
    """Lines that may be headings (an upper bound on what the markdown parser finds)."""
    return len(_HEADING_LINE.findall(body))


def body_problems(body: str) -> list[dict]:
    """The checks every note's new text meets, in a vault or a plain folder."""
    problems = []
    if "\x00" in body:
        problems.append(fm.problem("body", "text", "the body holds a NUL character"))
    if len(body) > MAX_BODY_CHARS:
        problems.append(fm.problem("body", "size", f"the body is over {MAX_BODY_CHARS:,} characters"))
    elif (found := heading_count(body)) > MAX_NOTE_HEADINGS:
        problems.append(fm.problem("body", "headings", f"the body has {found:,} heading lines, over the "
                                   f"{MAX_NOTE_HEADINGS:,} a note may have; split it into several notes"))
    return problems


def section_edit_problem(body: str) -> str | None:
    """Why replace_section will not parse this note (too long or too many headings), or None."""
    lines = body.count("\n") + 1
    if lines > MAX_SECTION_LINES:
        return (f"the note has {lines:,} lines, over the {MAX_SECTION_LINES:,} replace_section works on; "
                "replace the note whole (op replace), or split it into several notes")
    if (found := heading_count(body)) > MAX_NOTE_HEADINGS:
        return (f"the note has {found:,} heading lines, over the {MAX_NOTE_HEADINGS:,} replace_section works on; "
                "replace the note whole (op replace), or split it into several notes")
    return None
