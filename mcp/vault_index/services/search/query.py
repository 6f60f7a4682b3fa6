"""Turning user text into a safe FTS5 query: stopwords dropped, every token quoted."""

from __future__ import annotations

import re
from collections.abc import Iterator

# Queries are capped so a pasted document cannot turn into a thousand-term OR.
MAX_QUERY_TERMS = 32
MAX_QUERY_CHARS = 2000

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves i'm it's don't didn't doesn't
    what's also get got any anything did does something thing things much many""".split()
)

_TOKEN = re.compile(r"[\w][\w'\-./:]*", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """Lowercased content words of `query`, in order, without duplicates or stopwords."""
    terms = []
    for raw in _TOKEN.findall(query[:MAX_QUERY_CHARS].lower()):
        term = raw.strip("'-./:")
        if term and term not in STOPWORDS and term not in terms:
            terms.append(term)
    return terms[:MAX_QUERY_TERMS]


def word_starts(text: str, term: str) -> Iterator[int]:
    """Each offset where `term` begins a word of `text` ("sensor" in "sensors", not in "nonsensor"):
    str.find per word, far cheaper than a regex per chunk (snippets and coverage, on every hit)."""
    at = text.find(term)
    while at >= 0:
        if at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_"):
            yield at
        at = text.find(term, at + 1)


def quote(term: str) -> str:
    """An FTS5 string literal: no user input can become an operator or a syntax error."""
    return '"' + term.replace('"', '""') + '"'


def fts_match(terms: list[str], doc_counts: list[int], common_at: int, budget: int | None = None) -> str:
    """The FTS5 query: any of the query's specific terms, or all of them when every one is common.

    Terms found in `common_at` chunks or more are left out while a more specific term remains:
    bm25 scores every match of an OR, and a term in thousands of chunks costs tens of
    milliseconds at 100k chunks while telling the ranking little (bench: FTS p95 39 -> 11 ms).
    Terms that match nothing are left out too. With a `budget` (large indexes only, see
    search.posting_budget), the OR keeps only the rarest specific terms that fit it
    (within_budget). Returns "" when nothing can match.
    """
    present = [t for t, df in zip(terms, doc_counts, strict=True) if df > 0]
    specific = [(t, df) for t, df in zip(terms, doc_counts, strict=True) if 0 < df < common_at]
    if specific:
        kept = [t for t, _ in specific] if budget is None else within_budget(specific, budget)
        return " OR ".join(quote(t) for t in kept)
    return " AND ".join(quote(t) for t in present)


def within_budget(counted: list[tuple[str, int]], budget: int) -> list[str]:
    """The rarest of the (term, chunks holding it) pairs whose chunk counts add up to `budget` at
    most, in query order; the rarest term is always kept, whatever its count.

    bm25 scores every chunk an OR matches, so the counts added up are the chunks it would score.
    The terms left out are the commonest of the specific ones: the least weight in bm25's IDF,
    and coverage (search._coverages) still counts them for every candidate. Equal counts keep
    the earlier term.
    """
    rarest_first = sorted(range(len(counted)), key=lambda i: (counted[i][1], i))
    kept, spent = [], 0
    for i in rarest_first:
        if kept and spent + counted[i][1] > budget:
            break
        kept.append(i)
        spent += counted[i][1]
    return [counted[i][0] for i in sorted(kept)]
