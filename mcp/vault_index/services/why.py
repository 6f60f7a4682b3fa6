"""Why a note did or did not come up for a query: the one explainer of every surface.

The CLI's `search --why PATH`, search_notes' `why` and the page's inspector all call `why_not`
(through App.why), so they cannot disagree. Checks, in order, each ending the answer:
1. the path, through the one boundary (services/boundary.resolve, served): a hidden note answers
   exactly as a missing one; a secret, ignored or non-note file is `not_indexed`;
2. the caller's read grants (a note it may not read: the missing note's answer again);
3. the index: no record (unreadable, or not indexed yet), or a record without a chunk;
4. the filters (path, tag, status, collection, source): which one removed it;
5. the ranking: each side read EXPLAIN_DEPTH deep among the chunks the search may return (where
   the note's best chunk ranked, its score, the side's cut-off CANDIDATES_PER_SIDE), then the
   search itself at MAX_LIMIT: a hit (`ranked`), past the asked limit (`below_limit`), or `outranked`.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from vault_index.engine.files.sources import folded_name
from vault_index.errors import NotFoundError, OutsideSourcesError, VaultIndexError
from vault_index.services import boundary
from vault_index.services.search import fusion
from vault_index.services.search.per_note import PER_NOTE_DEFAULT
from vault_index.services.search.query import query_terms
from vault_index.services.search.search import MAX_LIMIT, Filters, keyword_match

# How deep each side is read to place a note that missed its cut-off (CANDIDATES_PER_SIDE): deep
# enough to say "rank 180" rather than "not in the first 50", bounded so an explanation stays fast.
EXPLAIN_DEPTH = 1000
VERDICTS = ("ranked", "below_limit", "outranked", "filtered", "not_indexed", "not_found")


@dataclass(frozen=True)
class Side:
    """Where the note's best chunk ranked on one side: rank None past EXPLAIN_DEPTH or no match."""

    rank: int | None
    score: float | None
    cutoff: int
    heading: str = ""
    note: str = ""  # why there is no rank: "no query word in it", "vector search off", ...

    @property
    def in_cut(self) -> bool:
        return self.rank is not None and self.rank <= self.cutoff


@dataclass(frozen=True)
class Why:
    query: str
    path: str
    verdict: str  # one of VERDICTS
    reason: str  # one sentence a person reads
    kind: str = ""  # not_indexed: secret, ignored, unreadable, not_yet, no_chunk; filtered: the filter
    keyword: Side | None = None
    vector: Side | None = None
    rank: int | None = None  # the note's place in the answer (one hit per note), up to MAX_LIMIT
    limit: int = 10

    def as_dict(self) -> dict:
        return asdict(self)


def why_not(app, query: str, path: str, *, mode: str | None = None, limit: int = 10, filters: Filters | None = None,
            source: str | None = None, per_note: bool = PER_NOTE_DEFAULT) -> dict:
    """The explanation for the note at `path` (as a person or agent names it) and `query`, as a dict
    (Why.as_dict). `filters` carry the caller's grants as search gets them (access.granted_filters)."""
    query = (query or "").strip()
    filters = filters or Filters()
    try:
        real = boundary.resolve(app, path, served=True)  # missing and hidden: one answer
    except OutsideSourcesError as exc:
        return _not_indexed_outside(app, query, path, str(exc), limit)
    except NotFoundError as exc:
        return Why(query, path, "not_found", str(exc), limit=limit).as_dict()
    shown = str(real)
    if not _granted(filters, shown):  # the caller may not read it: the missing note's answer
        return Why(query, path, "not_found", boundary.unseen(path), limit=limit).as_dict()
    ids = {cid for cid, row in app.store.chunk_rows(app.store.chunk_ids_matching(shown, (), None, None)).items()
           if row.path == shown}
    if app.store.file_record(shown) is None:
        return _unindexed(app, query, shown, limit)
    if not ids:
        return Why(query, shown, "not_indexed", "the note is indexed but has no chunk (it holds no text to "
                   "search)", "no_chunk", limit=limit).as_dict()
    applied = app.search_filters(filters, source)
    if applied is None or not _passes(app.searcher.allowed(applied), ids):
        which = _which_filter(app, filters, source, ids)
        return Why(query, shown, "filtered", f"the {which} filter removes it: none of its chunks pass",
                   which, limit=limit).as_dict()
    return _ranked(app, query, shown, ids, applied, mode, limit, per_note)


def _passes(allowed: set[int] | None, ids: set[int]) -> bool:
    return allowed is None or bool(ids & allowed)


def _granted(filters: Filters, path: str) -> bool:
    if filters.path_allowed is not None and not filters.path_allowed(path):
        return False
    return filters.granted_prefixes is None or any(
        path == p or path.startswith(p.rstrip("/") + "/") for p in filters.granted_prefixes)


def _not_indexed_outside(app, query: str, path: str, message: str, limit: int) -> dict:
    """resolve refused: outside every source (the missing note's answer there), or never served."""
    if "never served" not in message:
        return Why(query, path, "not_found", message, limit=limit).as_dict()
    given = Path(os.path.expanduser(path))
    parts = given.parts if given.is_absolute() else Path(path).parts
    secret = any(folded_name(p) == "secrets" for p in parts)
    kind = "secret" if secret else "ignored"
    reason = ("it lies under secrets/: never indexed, never served" if secret else
              "it is skipped by the index: a hidden folder, .indexignore, a template, or not a note "
              "(.md, .markdown, .mdx, .txt)")
    return Why(query, path, "not_indexed", reason, kind, limit=limit).as_dict()


def _unindexed(app, query: str, shown: str, limit: int) -> dict:
    """A note file the index holds no record of: unreadable (said by the last sync), or not synced yet."""
    problem = next((m for p, m in app.store.problems() if p == shown), None)
    if problem is not None or not os.access(shown, os.R_OK):
        return Why(query, shown, "not_indexed", f"the last sync could not read it: {problem or 'permission denied'}",
                   "unreadable", limit=limit).as_dict()
    return Why(query, shown, "not_indexed", "it is not in the index yet: `vault-index index` syncs it",
               "not_yet", limit=limit).as_dict()


def _which_filter(app, filters: Filters, source: str | None, ids: set[int]) -> str:
    """The first filter that alone leaves none of the note's chunks."""
    if source and app.search_filters(Filters(), source) is None:
        return "source"
    checks = [("path", Filters(path_prefix=filters.path_prefix)), ("status", Filters(status=filters.status)),
              ("collection", Filters(collection=filters.collection))]
    checks += [("tag", Filters(tags=(tag,))) for tag in filters.tags]
    if source:
        checks.append(("source", Filters()))
    for name, alone in checks:
        applied = app.search_filters(alone, source if name == "source" else None)
        narrows = applied is not None and (applied.active() or name == "source")
        if applied is None or narrows and not _passes(app.searcher.allowed(applied), ids):
            return name
    return "combined"


def _ranked(app, query: str, shown: str, ids: set[int], filters: Filters, mode: str | None, limit: int,
            per_note: bool) -> dict:
    """Stage 5: each side's place for the note, then the search itself (the same pipeline as every hit)."""
    searcher = app.searcher
    allowed = searcher.allowed(filters)
    mode = mode or app.default_mode
    rows = app.store.chunk_rows(ids)
    keyword = _keyword_side(searcher, query, ids, allowed, rows) if mode not in ("vector",) else None
    vector = _vector_side(searcher, query, ids, allowed, rows) if mode not in ("keyword", "grep") else None
    result = app.search(query, mode, MAX_LIMIT, filters, per_note=per_note)
    rank = next((n for n, hit in enumerate(result.hits, start=1) if hit.path == shown), None)
    sides = [s for s in (keyword, vector) if s is not None]
    if rank is not None and rank <= limit:
        reason = f"it is hit {rank} of the answer"
        verdict = "ranked"
    elif rank is not None:
        reason = f"it ranks {rank}, below the limit of {limit} hits: ask for more hits (-n / limit)"
        verdict = "below_limit"
    else:
        verdict = "outranked"
        if sides and not any(s.in_cut for s in sides):
            reason = "outranked on " + ("both sides" if len(sides) == 2 else "the only side that ran") + ": " + \
                     "; ".join(_side_text(name, s) for name, s in (("keyword", keyword), ("vector", vector)) if s)
        else:
            reason = (f"fusion placed it below the first {MAX_LIMIT} notes: "
                      + "; ".join(_side_text(name, s) for name, s in (("keyword", keyword), ("vector", vector)) if s))
    return Why(result.query, shown, verdict, reason, "", keyword, vector, rank, limit).as_dict()


def _side_text(name: str, side: Side) -> str:
    if side.rank is None:
        return f"{name}: {side.note or f'not in the first {EXPLAIN_DEPTH}'}"
    return f"{name} rank {side.rank} (cut-off {side.cutoff})"


def _keyword_side(searcher, query: str, ids: set[int], allowed: set[int] | None, rows: dict) -> Side:
    """The note's best chunk on the keyword side: the FTS query the search runs, read deeper."""
    terms = query_terms(query)
    counts = searcher._doc_counts(terms)  # noqa: SLF001 - the very stage the search runs, not a copy
    match = keyword_match(terms, counts) if counts else ""
    if not match:
        return Side(None, None, fusion.CANDIDATES_PER_SIDE, note="the query has no word to match")
    pairs = searcher.store.keyword(match, EXPLAIN_DEPTH if allowed is None else EXPLAIN_DEPTH * 4)
    if allowed is not None:
        pairs = [p for p in pairs if p[0] in allowed]
    for found in fusion.ranked(pairs):
        if found.chunk_id in ids:
            return Side(found.rank, round(found.score, 4), fusion.CANDIDATES_PER_SIDE, rows[found.chunk_id].heading)
    held = any(t.lower() in f"{r.title}\n{r.heading}\n{r.text}".lower() for r in rows.values() for t in terms)
    return Side(None, None, fusion.CANDIDATES_PER_SIDE,
                note=f"not in the first {EXPLAIN_DEPTH}" if held else "no query word in it")


def _vector_side(searcher, query: str, ids: set[int], allowed: set[int] | None, rows: dict) -> Side:
    """The note's best chunk on the vector side: its rank among the chunks the search may return."""
    try:
        index = searcher.vector_index()
    except VaultIndexError:
        index = None
    if index is None:
        return Side(None, None, fusion.CANDIDATES_PER_SIDE, note="vector search off here (no embedding model)")
    vector = searcher.models.embedder().embed_query(query)
    own = index.search(vector, 1, ids if allowed is None else ids & allowed)
    if not own:
        return Side(None, None, fusion.CANDIDATES_PER_SIDE, note="its chunks have no vector yet")
    best_id, best = own[0]
    ahead = index.search(vector, EXPLAIN_DEPTH, allowed)
    rank = next((n for n, (cid, _) in enumerate(ahead, start=1) if cid in ids), None)
    return Side(rank, round(best, 4), fusion.CANDIDATES_PER_SIDE, rows[best_id].heading,
                "" if rank is not None else f"not in the first {EXPLAIN_DEPTH}")

