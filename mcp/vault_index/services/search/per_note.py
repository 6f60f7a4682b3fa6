"""One hit per note: each note's best chunk, with where its other matched sections lie.

The default of every surface (CLI `search`, MCP `search_notes`, `recall`; issue 39 item 7): a long
note with several matching sections fills one slot, and the hit says where the others are, so an
agent reads them with one get_note instead of losing the other notes off a short list. Chunks stay
on request (`--chunks`, `per_note: false`) and in the eval, which scores chunk ranks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TypeVar

from vault_index.engine.parsing.status_block import no_prose
from vault_index.types import Hit, SectionRef

# Trigger: a hit lists its note's other matched sections. Why: a section is one line of a reply
# (heading path and lines); a note matching in twenty places would crowd the answer, and `more`
# counts the rest. Outcome: the best few, in rank order.
MAX_ALSO = 3
# The default of every surface; the Searcher's own default stays chunks (the eval and the bench
# call it, and their baselines were measured on chunks).
PER_NOTE_DEFAULT = True

T = TypeVar("T")


def group_by_note(items: Iterable[T], path_of: Callable[[T], str]) -> list[tuple[T, list[T]]]:
    """Each note's first item in the given (rank) order, with the note's other items after it."""
    groups: dict[str, tuple[T, list[T]]] = {}
    for item in items:
        path = path_of(item)
        if path in groups:
            groups[path][1].append(item)
        else:
            groups[path] = (item, [])
    return list(groups.values())


def best_per_note(order: list[tuple[int, float]], rows: dict) -> tuple[list[tuple[int, float]], dict[int, list]]:
    """The best chunk of each note in `order`, and the rows of its other matched chunks, best first."""
    groups = group_by_note((pair for pair in order if pair[0] in rows), lambda pair: rows[pair[0]].path)
    return [first for first, _ in groups], {first[0]: [rows[cid] for cid, _ in rest] for first, rest in groups}


def prefer_prose(order: list[tuple[int, float]], others: dict[int, list], rows: dict):
    """Trigger: a decision record's best chunk is often its status block (the title holds the
    query's words), and its snippet was `Status: accepted Date: ... Deciders: ...` (issue 39 item 8).
    Outcome: such a note is shown by its best matched chunk with prose, at the same rank and score;
    the status block joins its other sections. A note with no such chunk keeps its best."""
    shown, kept = [], dict(others)
    for cid, score in order:
        if cid not in rows:
            shown.append((cid, score))
            continue
        row, rest = _prose_first(rows[cid], kept.pop(cid, []), lambda r: no_prose(r.text, r.heading))
        kept[row.id] = rest
        shown.append((row.id, score))
    return shown, kept


def _prose_first(first: T, rest: list[T], bare: Callable[[T], bool]) -> tuple[T, list[T]]:
    """(the item a note is shown by, its other items): `first`, unless it is a status block and a
    later item has prose; then that item, with `first` leading the others."""
    prose = next((item for item in rest if not bare(item)), None) if bare(first) else None
    return (first, rest) if prose is None else (prose, [first] + [item for item in rest if item is not prose])


def section_of(found) -> SectionRef:
    """A row or a hit as a section reference."""
    return SectionRef(found.heading, found.line_start, found.line_end)


def hits_per_note(hits: Iterable[Hit]) -> list[Hit]:
    """Hits (chunks) folded into one per note, as the Searcher folds its candidates (recall's notes)."""
    folded = []
    for best, rest in group_by_note(hits, lambda hit: hit.path):
        # as prefer_prose: the note's rank and score, its prose shown
        first, rest = _prose_first(best, rest, lambda hit: no_prose(hit.snippet, hit.heading))
        folded.append(replace(first, score=best.score, more=len(rest),
                              also=tuple(section_of(h) for h in rest[:MAX_ALSO])))
    return folded


def section_dict(section: SectionRef) -> dict:
    """{heading, line_start, line_end}: what `also` holds in JSON and over MCP."""
    return {"heading": section.heading, "line_start": section.line_start, "line_end": section.line_end}
