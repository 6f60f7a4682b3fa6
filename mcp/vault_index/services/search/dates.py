"""The daily-note rule: a question that names an exact date ranks that day's note first.

Obsidian keeps one note per day (`2025-11-07.md`, `Daily/2025-11-07.md`, or a frontmatter
`date:`). Keyword and vector search read "2025-11-07" as three numbers, so a note that merely
links to the day outranked the day's own note. This rule runs after fusion and rerank, as a
pure function (ranked list in, ranked list out), separate from the fusion formula.

Measured on the example vault eval (`vault-index eval --by-kind`, VAULT_EMBED_MODEL=
shipped:minilm, 93 questions, chunk nDCG@5 / MRR):
- before the rule: keyword 0.650 / 0.623, vector 0.777 / 0.746, hybrid 0.828 / 0.804;
- this rule (exact dates, with a year): keyword 0.651 / 0.625, vector and hybrid unchanged
  (one golden question names a full date, "14 March 2026"; its day's note now leads);
- a looser variant that also read "26 February" (no year) as a date: vector 0.781 / 0.751,
  hybrid unchanged. Not taken: in a vault of several years a day without a year names several
  notes, and the golden set's "29 January" (q042) is discussed in the 3 February note.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import PurePath

DATE_RULE_VERSION = "date-1"  # shown in --explain: a change of the rule is visible in results
# How many chunks of a matching note move to the head of the list. One would hide the day's
# other sections; more than a few would push every other note off a short result list.
DATE_PROMOTED_CHUNKS_PER_NOTE = 2
MAX_QUERY_DATES = 3  # dates of one question looked up (a pasted log line can hold dozens)
MAX_DAY_CHUNKS = 200  # chunks of one day's notes read from the index as extra candidates

_MONTHS = {name: number for number, names in enumerate((
    ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
    ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
    ("oct", "october"), ("nov", "november"), ("dec", "december")), start=1) for name in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_DAY_MONTH_YEAR = re.compile(rf"(?<!\w)(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})(?!\d)", re.I)
_MONTH_DAY_YEAR = re.compile(rf"(?<!\w)({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.I)
_NAME_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?!\d)")  # daily-note file names begin with the day


def _day(year: str, month: str | int, day: str) -> date | None:
    try:
        return date(int(year), int(month), int(day))
    except ValueError:
        return None


def query_dates(query: str) -> frozenset[date]:
    """Exact calendar dates the query names: 2025-11-07, 2025/11/07, 7 November 2025, Nov 7, 2025."""
    found = [_day(y, m, d) for y, m, d in _ISO.findall(query)]
    found += [_day(y, _MONTHS[m.lower()], d) for d, m, y in _DAY_MONTH_YEAR.findall(query)]
    found += [_day(y, _MONTHS[m.lower()], d) for m, d, y in _MONTH_DAY_YEAR.findall(query)]
    return frozenset(d for d in found if d is not None)


def note_date(path: str, frontmatter_date: object = None) -> date | None:
    """The day a note is about: its file name's leading YYYY-MM-DD, else its frontmatter `date`."""
    match = _NAME_DATE.match(PurePath(path).name)
    if match:
        return _day(*match.groups())
    if isinstance(frontmatter_date, date):  # YAML reads `date: 2025-11-07` as a date already
        return frontmatter_date
    if isinstance(frontmatter_date, str):
        match = _NAME_DATE.match(frontmatter_date.strip())
        return _day(*match.groups()) if match else None
    return None


def promote_dated(order: list[tuple[int, float]], dated: dict[int, tuple[str, date | None]],
                  wanted: frozenset[date]) -> tuple[list[tuple[int, float]], set[int]]:
    """(new order, promoted ids). `dated`: chunk id -> (note path, the note's day).

    Up to DATE_PROMOTED_CHUNKS_PER_NOTE chunks of each note whose day is in `wanted` move to the
    head, keeping their relative order, scored as the head was (scores stay descending).
    """
    if not wanted or not order:
        return order, set()
    head_score = order[0][1]
    promoted: list[tuple[int, float]] = []
    per_note: dict[str, int] = {}
    for cid, score in order:
        path, day = dated.get(cid, ("", None))
        if day in wanted and per_note.get(path, 0) < DATE_PROMOTED_CHUNKS_PER_NOTE:
            per_note[path] = per_note.get(path, 0) + 1
            promoted.append((cid, max(score, head_score)))
    if not promoted:
        return order, set()
    ids = {cid for cid, _ in promoted}
    return promoted + [(cid, score) for cid, score in order if cid not in ids], ids
