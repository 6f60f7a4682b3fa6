"""A hit's snippet: the lines of its chunk that hold the query's words, within SNIPPET_CHARS.

Trigger: the snippet was the chunk's opening text whenever the chunk fit the budget. Why: a
decision record's chunk opens with `Status: accepted`, a note's with its metadata lines, and the
lines that matched came after them or not at all (issue 39). Outcome: the snippet starts at the
matched line whose window holds the most of the query's words (the earliest on a tie), and a
chunk with no query word in its text (a hit on its title or heading, or by meaning) keeps its
opening text.
"""

from __future__ import annotations

from vault_index.engine.parsing.parse import HTML_ANCHOR as _ANCHOR  # stripped from every snippet
from vault_index.engine.parsing.parse import without_html_comments
from vault_index.engine.parsing.status_block import no_prose
from vault_index.services.search.query import word_starts

SNIPPET_CHARS = 480  # about 120 tokens: enough to judge a hit, small enough for ten in a reply
# How far before the first query word a window into one long line starts (a quarter of the budget).
LEAD_IN_SHARE = 4
WORD_START_SLACK = 40  # a window moves forward this far at most to begin on a word


def snippet(text: str, terms: list[str], budget: int = SNIPPET_CHARS) -> str:
    """The chunk's text from its best matching line, cut to `budget` characters ('…' marks a cut)."""
    text = without_html_comments(text)  # a note to the writer, never shown: a comment-only chunk shows ""
    text = _ANCHOR.sub("", text).strip() if "<a" in text or "<A" in text else text.strip()
    found = _matches(text, terms)
    if not found:  # a hit on its title or by meaning: its opening, after a record's status lines
        text = _after_status(text)
        return text if len(text) <= budget else _window(text, 0, budget)
    start = _best_start(text, found, budget)
    if start == 0 and len(text) <= budget:
        return text
    return _window(text, start, budget)


def _after_status(text: str) -> str:
    """`text` from its first paragraph that is not a status block (`Date: ...`, `Status: Accepted`;
    chunking carries them into the record's first prose), or whole when it is nothing else."""
    paragraphs = text.split("\n\n")
    lead = next((i for i, part in enumerate(paragraphs) if not no_prose(part)), 0)
    return "\n\n".join(paragraphs[lead:]) if lead else text


def _matches(text: str, terms: list[str]) -> list[tuple[int, str]]:
    """(offset, term) of every place a query word begins a word of `text`, in text order."""
    lower = text.lower()
    return sorted((at, term) for term in dict.fromkeys(terms) for at in word_starts(lower, term))


def _best_start(text: str, found: list[tuple[int, str]], budget: int) -> int:
    """Where the window with the most distinct query words starts (the earliest on a tie)."""
    best, best_count, tried = 0, -1, set()
    every = len({term for _at, term in found})
    for offset, _term in found:
        start = _lead_in(text, offset, budget)
        if start in tried:  # matches on one line mostly share a window
            continue
        tried.add(start)
        count = len({term for at, term in found if start <= at < start + budget})
        if count > best_count:
            best, best_count = start, count
            if count == every:  # no later window can hold more; the earliest wins a tie
                break
    return best


def _lead_in(text: str, offset: int, budget: int) -> int:
    """A quarter of the budget before the word at `offset`, never before its line's beginning (so
    the lines above a match stay out), back far enough to fill the budget, and on a word."""
    line_start = text.rfind("\n", 0, offset) + 1
    start = max(line_start, min(offset - budget // LEAD_IN_SHARE, len(text) - budget))
    if start > line_start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < min(start + WORD_START_SLACK, offset) else start
    return start


def _window(text: str, start: int, budget: int) -> str:
    piece = text[start : start + budget].strip()
    return ("…" if start > 0 else "") + piece + ("…" if start + budget < len(text) else "")
