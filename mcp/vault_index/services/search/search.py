"""The one search pipeline. The CLI, the MCP server and the eval all call `Searcher.search`.

Stages, in order:
1. keyword: stopword-free, quoted FTS5 query, bm25, CANDIDATES_PER_SIDE deep;
2. vector: the query embedded, kNN over chunk vectors, as deep;
3. fusion: cosine, plus the query's similarity to the chunk's whole note, plus an IDF-weighted
   term-coverage bonus and the chunk's bm25 relative to the query's best, both scaled by how much
   of the query the best keyword hit holds and by how much of it the index holds at all
   (fusion.coverage_fusion);
4. rerank: a cross-encoder reorders the fused top RERANK_TOP (hybrid+rerank only);
4b. daily notes: a question naming an exact date puts that day's note first (services/search/dates.py);
5. curation: deprecated notes demoted; then hits with heading path, lines and a snippet.
A stage that cannot run (no embedding model, no reranker) is skipped and the result says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from vault_index.engine.embedding.models import Models
from vault_index.engine.embedding.vectors import open_vector_index
from vault_index.engine.parsing.chunk import embed_text_for
from vault_index.engine.stores.store_contract import IndexStore
from vault_index.errors import UsageError
from vault_index.services.search import confidence, dates, fusion, subqueries
from vault_index.services.search.per_note import MAX_ALSO, best_per_note, prefer_prose, section_of
from vault_index.services.search.query import MAX_QUERY_CHARS, fts_match, query_terms, quote, word_starts
from vault_index.services.search.snippets import snippet
from vault_index.services.search.subqueries import SubQueries
from vault_index.services.search.subqueries import check as check_subqueries
from vault_index.types import Candidate, Hit, SearchResult

MODES = ("keyword", "vector", "hybrid", "hybrid+rerank", "grep")
# Trigger: the default was hybrid+rerank, and no cross-encoder ships with the package, so offline
# every terminal search warned and status said "rerank on, not loadable here" (issue 39). Why: a
# default should be what runs. Outcome: hybrid by default on every surface; VAULT_RERANK=1 makes
# hybrid+rerank the default (App.default_mode), or a search asks for it by mode.
DEFAULT_MODE = "hybrid"
RERANK_MODE = "hybrid+rerank"
MAX_LIMIT = 100
# A term in this many chunks (or 1% of them, if more) is common: its count stops there (bounded
# cost per term), and it leaves the FTS query while a rarer term remains (query.fts_match).
DF_COUNT_CAP = 1000
# Trigger: from 100 x DF_COUNT_CAP chunks on, the 1% line decides what is common, so a "specific"
# term may be in up to 1% of the chunks (9,999 at 1M): the chunk counts of a long question's
# specific terms added up to 15,000 at the median and 35,000 at worst (1M bench, questions of
# 5-10 words), and FTS5's bm25 scores every match of the OR at about 1.7 us: 24 ms median, 59 ms
# worst, growing with the index. Why: the keyword side's cost should stay bounded at any size.
# Outcome: at or above BOUNDED_KEYWORD_MIN_CHUNKS the OR keeps its rarest terms up to
# KEYWORD_POSTING_BUDGET matches (query.within_budget). Below it nothing changes: the eval's
# corpora (300-1,100 chunks) and every index under 100k chunks get the same query as before.
# Questions whose terms are all common still AND them unbounded (ADR 0014, fourth round).
BOUNDED_KEYWORD_MIN_CHUNKS = 100 * DF_COUNT_CAP
# Chosen on the 1M bench: at 20,000 none of 400 three-word questions changed its keyword top 50
# (at 10,000, 72 of them did, agreement 0.89; at 5,000, 0.69) and an OR costs at most about 35 ms;
# the 1M regime replayed on the eval corpora with the budget at the same 2 % of each moved file
# NDCG@5 by at most 0.0002 (ADR 0014, fourth round).
KEYWORD_POSTING_BUDGET = 20_000
FILTERED_KEYWORD_DEPTH = 2000  # with filters, keyword hits are read this deep, then filtered
RERANK_NOTICE_PREFIX = "rerank off"  # surfaces that say a notice once per machine recognise it by this


@dataclass(frozen=True)
class Filters:
    path_prefix: str | None = None
    tags: tuple[str, ...] = ()
    status: str | None = None
    collection: str | None = None  # the frontmatter `collection` of the curated write path
    # The caller's read grants (services/access/access.py), applied BEFORE the limit so that a note the
    # caller may not read never takes a slot: `granted_prefixes` narrows the candidates of every
    # stage (None: no restriction; (): nothing), `path_allowed` re-checks each final hit's path.
    granted_prefixes: tuple[str, ...] | None = None
    path_allowed: Callable[[str], bool] | None = field(default=None, compare=False)
    # The workspace's visible source roots (services/workspace.py), set by the App when some
    # source is not visible here; None: every source is.
    scope_roots: tuple[str, ...] | None = None
    # The exact rule for each hit (services/workspace.path_rule): a hidden source nested in a
    # visible root (a project's docs in a personal folder) is still hidden.
    scope_allowed: Callable[[str], bool] | None = field(default=None, compare=False)

    def active(self) -> bool:
        return bool(self.path_prefix or self.tags or self.status or self.collection)


@dataclass
class _Trace:
    keyword: dict[int, Candidate] = field(default_factory=dict)
    vector: dict[int, Candidate] = field(default_factory=dict)
    fused: dict[int, float] = field(default_factory=dict)
    reranked: dict[int, float] = field(default_factory=dict)
    coverage: dict[int, float] = field(default_factory=dict)
    note: dict[int, float] = field(default_factory=dict)
    strength: dict[int, float] = field(default_factory=dict)
    confidence: float = 0.0  # fusion.keyword_confidence of the query
    share: float = 1.0  # fusion.matched_share of the query
    idf_mass: float = 0.0  # the query's IDF mass, in units of the rarest term's IDF (confidence.signals)
    dated: set[int] = field(default_factory=set)  # promoted by the daily-note rule
    phrasings: dict[int, dict[str, int]] | None = None  # with sub-queries: each phrasing's rank
    deferred: tuple | None = None  # a keyword-only run's (terms, counts, keyword list): Searcher._confidence


@dataclass(frozen=True)
class _DocCounts:
    total: int  # chunks in the index
    common_at: int  # a term in this many chunks or more is common (and counted no further)
    per_term: list[int]


class Searcher:
    """Holds the store, the lazily loaded models and the in-memory vector index."""

    def __init__(self, store: IndexStore, models: Models, vector_backend: str = "auto"):
        self.store, self.models, self.vector_backend = store, models, vector_backend
        self._vector_index = None
        self._rerank_said = False  # the reranker's absence is said once per process, not per search
        self._model_said = False  # so is an embedding model the eval has not measured

    def vector_index(self):
        embedder = self.models.embedder()
        if embedder is None:
            return None
        if self._vector_index is None or self._vector_index.model != embedder.fingerprint:
            self._vector_index = open_vector_index(self.store, embedder.fingerprint, self.vector_backend)
        return self._vector_index

    def search(
        self,
        query: str,
        mode: str = DEFAULT_MODE,
        limit: int = 10,
        filters: Filters | None = None,
        explain: bool = False,
        per_note: bool = False,
        subqueries: SubQueries | None = None,
    ) -> SearchResult:
        """`per_note`: one hit per note, its best chunk, with `more` counting its other matches and
        `also` naming the first few (services/search/per_note.py; the surfaces' default, not this one's).
        `subqueries`: the calling agent's extra phrasings (services/search/subqueries.py); None or
        empty runs the plain question."""
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if subqueries is not None:
            check_subqueries(subqueries)
        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        query = (query or "").strip()
        if not query:
            raise UsageError("the query is empty; say what to look for")
        notices: list[str] = []
        if len(query) > MAX_QUERY_CHARS:
            notices.append(f"query cut to its first {MAX_QUERY_CHARS} characters")
            query = query[:MAX_QUERY_CHARS]
        filters = filters or Filters()
        allowed = self.allowed(filters)
        trace = _Trace()
        rows: dict = {}  # chunk id -> row, read once per search
        terms = query_terms(query)
        vector_used = reranked = False

        if mode == "grep":
            order = self._grep(terms, allowed)
            if subqueries is not None and not subqueries.empty():
                notices.append("sub-queries are not used in grep mode")
        else:
            order, vector_used = self._ranked(query, terms, mode, allowed, notices, trace, rows)
            if subqueries is not None and not subqueries.empty():
                order = self._with_subqueries(subqueries, order, mode, allowed, trace, rows)
            if mode == "hybrid+rerank" and vector_used:
                order, reranked = self._rerank(query, order, rows, notices)
                if reranked:
                    trace.reranked = dict(order[: fusion.RERANK_TOP])

        rows.update(self.store.chunk_rows(cid for cid, _ in order if cid not in rows))
        if mode != "grep":
            order = self._daily_notes_first(query, order, rows, trace, allowed)
        if filters.path_allowed is not None:
            # Trigger: SQLite LIKE ignores ASCII letter case, so a prefix alone could let
            # `Private/` through for a grant on `private`. Why: the exact path rule lives in
            # one predicate. Outcome: every candidate is re-checked before the limit.
            order = [(cid, score) for cid, score in order if cid in rows and filters.path_allowed(rows[cid].path)]
        if filters.scope_roots is not None:  # exact, where LIKE ignored letter case
            order = [(cid, score) for cid, score in order
                     if cid in rows and under_any(rows[cid].path, filters.scope_roots)
                     and (filters.scope_allowed is None or filters.scope_allowed(rows[cid].path))]
        order = fusion.demote(order, {cid: rows[cid].status for cid, _ in order if cid in rows})
        others: dict[int, list] = {}
        if per_note:
            order, others = best_per_note(order, rows)
        ran = mode_run(mode, vector_used, reranked)
        judged_by, signals, sure = self._confidence(ran, order, rows, trace, notices)
        order = order[:limit]
        if per_note:  # after the confidence: it judges the note's best chunk, the hit shows its prose
            order, others = prefer_prose(order, others, rows)
        shown = trace if explain else None
        hits = tuple(self._hit(rows[cid], score, terms, shown, others.get(cid, ()))
                     for cid, score in order if cid in rows)
        return SearchResult(query, ran, vector_used, reranked, hits, tuple(notices), confidence=sure,
                            relevant=sure is not None and sure >= confidence.threshold(judged_by),
                            signals=signals, judged_by=judged_by)

    def allowed(self, filters: Filters) -> set[int] | None:
        """The chunk ids every stage may return under `filters` (the filters, the read grants, the
        workspace's roots); None: no restriction. The miss explainer (services/why.py) reads it too."""
        allowed = None
        if filters.active():
            allowed = self.store.chunk_ids_matching(filters.path_prefix, filters.tags, filters.status,
                                                    filters.collection)
        for prefixes in (filters.granted_prefixes, filters.scope_roots):
            if prefixes is not None:
                ids: set[int] = set()
                for prefix in prefixes:
                    ids |= self.store.chunk_ids_matching(prefix, (), None, None)
                allowed = ids if allowed is None else allowed & ids
        return allowed

    def _confidence(self, ran: str, order: list[tuple[int, float]], rows: dict, trace: _Trace, notices: list[str]):
        """(the model that judged it, signals, confidence) of the first hit of `order`
        (services/search/confidence.py); no hit at all is confidence 0, a mode without a model (grep) None."""
        kind = confidence.kind_of(ran)
        top, second = confidence.first_two_notes(order, rows)
        if kind is None or top is None:
            return kind, {}, (None if kind is None else 0.0)
        if kind == "hybrid" and top not in trace.note and not self._has_vector(top):
            # Trigger: a right answer whose chunk still waited for its vector scored 0.20 ("nothing
            # relevant"), 0.98 once embedded: the hybrid model read the missing side as evidence
            # against it. Outcome: such a first hit is judged as a keyword-only run would judge it.
            kind = "keyword"
            notices.append("the first hit has no vector yet: its confidence is the keyword side's")
        if trace.deferred is not None:  # a keyword-only run: its signals from the rows read for the hits
            self._keyword_signals(*trace.deferred, trace, rows, {top, second})
        signals = confidence.signals(kind, top, second, trace)
        return kind, signals, confidence.score(kind, signals)

    def _has_vector(self, chunk_id: int) -> bool:
        """Whether the chunk has a vector of the model the vector side searched with (asked only
        when its note's similarity is unknown: note_similarity answers for chunks with a vector)."""
        index = self.vector_index()
        return index is not None and any(cid == chunk_id for cid, _, _ in self.store.file_vectors(index.model,
                                                                                                 [chunk_id]))

    # --- stages -----------------------------------------------------------------------------

    def _ranked(self, query: str, terms: list[str], mode: str, allowed: set[int] | None, notices: list[str],
                trace: _Trace, rows: dict) -> tuple[list[tuple[int, float]], bool]:
        """Stages 1-3 for one phrasing: (fused order, whether the vector side ran). Fills `trace`,
        and `rows` with the rows fusion read."""
        counts = self._doc_counts(terms) if mode != "vector" else None
        keyword = self._keyword(terms, counts, allowed) if counts else []
        vector: list[Candidate] = []
        query_vector = None
        if mode != "keyword":
            vector, query_vector = self._vector(query, mode, allowed, notices)
        # Trigger: a model loaded but no chunk here has a vector for it yet (a project being
        # embedded, a changed model). Why: an answer must not claim a stage it could not use.
        # Outcome: keyword-only, said as such (App.pending_notices names what is waiting).
        vector_used = query_vector is not None and bool(vector)
        trace.keyword = {c.chunk_id: c for c in keyword}
        trace.vector = {c.chunk_id: c for c in vector}
        if mode == "keyword" or not vector_used:
            trace.deferred = (terms, counts, keyword)  # read once the first hits are known (_confidence)
            return [(c.chunk_id, c.score) for c in keyword], vector_used
        if mode == "vector":
            return [(c.chunk_id, c.score) for c in vector], vector_used
        rows.update(self.store.chunk_rows({c.chunk_id for c in keyword} | {c.chunk_id for c in vector}))
        trace.coverage = self._coverages(terms, counts, rows)
        trace.note = self.vector_index().note_similarity(query_vector, rows.keys())
        trace.strength = fusion.keyword_strength(keyword)
        trace.share = fusion.matched_share(counts.per_term, counts.total) if counts else 1.0
        trace.idf_mass = idf_mass(counts)
        trace.confidence = fusion.keyword_confidence(keyword, trace.coverage, share=trace.share)
        order = fusion.coverage_fusion(vector, keyword, trace.coverage, trace.note, share=trace.share)
        trace.fused = dict(order)
        return order, vector_used

    def _keyword_signals(self, terms: list[str], counts: _DocCounts | None, keyword: list[Candidate],
                         trace: _Trace, rows: dict, first: set) -> None:
        """A keyword-only run's trace gets what the confidence reads: the coverage of the keyword
        side's best and of the answer's `first` two hits (rows the hits already read), the query's
        matched share and the keyword confidence."""
        if not keyword or not counts:
            return
        head = {keyword[0].chunk_id} | {cid for cid in first if cid is not None}
        rows.update(self.store.chunk_rows(head - rows.keys()))
        trace.coverage = self._coverages(terms, counts, {cid: rows[cid] for cid in head if cid in rows})
        trace.share = fusion.matched_share(counts.per_term, counts.total)
        trace.idf_mass = idf_mass(counts)
        trace.confidence = fusion.keyword_confidence(keyword, trace.coverage, share=trace.share)

    def _with_subqueries(self, found: SubQueries, order: list[tuple[int, float]], mode: str,
                         allowed: set[int] | None, trace: _Trace, rows: dict) -> list[tuple[int, float]]:
        """The question's `order` fused with each sub-query's list (subqueries.combine). A
        phrasing runs only the sides it is for that `mode` runs; its notices are the question's."""
        runs = []
        sides = {"keyword": (True, False), "vector": (False, True)}.get(mode, (True, True))
        for phrasing in subqueries.phrasings(found):
            keyword, vector = phrasing.keyword and sides[0], phrasing.vector and sides[1]
            if not (keyword or vector):
                continue
            side = "hybrid" if keyword and vector else "keyword" if keyword else "vector"
            ranked, _ = self._ranked(phrasing.text, query_terms(phrasing.text), side, allowed, [], _Trace(), rows)
            runs.append((phrasing, ranked))
        trace.phrasings = subqueries.found_by(order, runs)
        combined = subqueries.combine(order, [ranked for _, ranked in runs])
        rows.update(self.store.chunk_rows(cid for cid, _ in combined if cid not in rows))  # the reranker reads them
        return combined

    def _doc_counts(self, terms: list[str]) -> _DocCounts | None:
        """How many chunks hold each term, counted no further than the common-term threshold."""
        if not terms:
            return None
        total = self.store.chunk_count()
        common_at = max(DF_COUNT_CAP, total // 100)
        return _DocCounts(total, common_at, [self.store.term_doc_count(quote(t), common_at) for t in terms])

    def _keyword(self, terms: list[str], counts: _DocCounts, allowed: set[int] | None) -> list[Candidate]:
        match = keyword_match(terms, counts)
        if not match:
            return []
        depth = FILTERED_KEYWORD_DEPTH if allowed is not None else fusion.CANDIDATES_PER_SIDE
        pairs = self.store.keyword(match, depth)
        if allowed is not None:
            pairs = [p for p in pairs if p[0] in allowed][: fusion.CANDIDATES_PER_SIDE]
        return fusion.ranked(pairs)

    def _vector(
        self, query: str, mode: str, allowed: set[int] | None, notices: list[str]
    ):
        """(candidates, query vector); the vector is None when no embedding model loads."""
        index = self.vector_index()
        if index is None:
            fallback = "no results in vector mode" if mode == "vector" else "keyword results only"
            notices.append(f"vector search off: {self.models.embed_error}; {fallback}")
            return [], None
        embedder = self.models.embedder()
        if getattr(embedder, "notice", "") and not self._model_said:  # unmeasured model, int8 fallback
            notices.append(embedder.notice)
        self._model_said = True
        vector = embedder.embed_query(query)
        # chunks without a vector for this model are named by App.pending_notices, source by source
        found = index.search(vector, fusion.CANDIDATES_PER_SIDE, allowed)
        return fusion.ranked(found), vector

    def _coverages(self, terms: list[str], counts: _DocCounts | None, rows: dict) -> dict[int, float]:
        """Each candidate's IDF-weighted share of the query terms (word-start match, any case)."""
        if not counts:
            return {}
        weights = [fusion.idf(df, counts.total) for df in counts.per_term]
        wanted = [t.lower() for t in terms]
        result = {}
        for cid, row in rows.items():
            text = f"{row.title}\n{row.heading}\n{row.text}".lower()
            result[cid] = fusion.coverage([next(word_starts(text, t), None) is not None for t in wanted], weights)
        return result

    def _rerank(self, query: str, fused: list[tuple[int, float]], rows: dict, notices: list[str]):
        reranker = self.models.reranker()
        if reranker is None:
            # Trigger: a reranker that cannot load (no hub) or is turned off.
            # Why: the same line on every search is noise, and VAULT_RERANK=0 is a choice, not news.
            # Outcome: said once per process when it could not load; never when turned off; the
            # result's mode says "hybrid" and `reranked` false every time.
            if not self._rerank_said and not _turned_off(self.models.rerank_error):
                notices.append(f"{RERANK_NOTICE_PREFIX}: {self.models.rerank_error}; fusion order")
            self._rerank_said = True
            return fused, False
        head = [cid for cid, _ in fused[: fusion.RERANK_TOP]]
        documents = [embed_text_for(rows[c].title, rows[c].heading, rows[c].text) for c in head]
        scores = reranker.score(query, documents) if documents else []
        return fusion.rerank_order(fused, scores), True

    def _daily_notes_first(self, query: str, order: list[tuple[int, float]], rows: dict, trace: _Trace,
                           allowed: set[int] | None):
        """Stage 4b (services/search/dates.py): a question naming an exact date puts that day's note first.

        The day's note joins the candidates even when no stage found it: a daily note's text
        rarely holds its own date (the date is its file name), so keyword search misses it.
        """
        wanted = dates.query_dates(query)
        if not wanted:
            return order
        known = {cid for cid, _ in order}
        extra: set[int] = set()
        for day in sorted(wanted)[: dates.MAX_QUERY_DATES]:
            for cid, path, fm_date in self.store.chunks_of_day(day.isoformat(), dates.MAX_DAY_CHUNKS):
                if cid not in known and (allowed is None or cid in allowed) and dates.note_date(path, fm_date) == day:
                    order.append((cid, 0.0))
                    known.add(cid)
                    extra.add(cid)
        rows.update(self.store.chunk_rows(cid for cid, _ in order if cid not in rows))
        by_path: dict[str, object] = {}
        for cid, _ in order:
            path = rows[cid].path if cid in rows else None
            if path is not None and path not in by_path:
                frontmatter = (self.store.file_record(path) or {}).get("frontmatter") or {}
                by_path[path] = dates.note_date(path, frontmatter.get("date"))
        dated = {cid: (rows[cid].path, by_path[rows[cid].path]) for cid, _ in order if cid in rows}
        order, trace.dated = dates.promote_dated(order, dated, wanted)
        # A chunk no stage found stays out unless the rule put it at the head.
        return [(cid, score) for cid, score in order if cid not in extra or cid in trace.dated]

    def _grep(self, terms: list[str], allowed: set[int] | None) -> list[tuple[int, float]]:
        """Baseline for the eval: chunks ranked by how many distinct query words they contain."""
        if not terms:
            return []
        patterns = [re.compile(re.escape(t), re.IGNORECASE) for t in terms]
        scored = []
        for cid, text in self.store.chunk_texts():
            if allowed is not None and cid not in allowed:
                continue
            count = sum(1 for p in patterns if p.search(text))
            if count:
                scored.append((cid, float(count)))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[: fusion.CANDIDATES_PER_SIDE]

    # --- hits -------------------------------------------------------------------------------

    def _hit(self, row, score: float, terms: list[str], trace: _Trace | None, others=()) -> Hit:
        """A hit of `row`; `others`: the rows of its note's other matched chunks (one hit per note)."""
        explain = {}
        if trace is not None:
            k, v = trace.keyword.get(row.id), trace.vector.get(row.id)
            explain = {
                "keyword": {"rank": k.rank, "score": round(k.score, 4)} if k else None,
                "vector": {"rank": v.rank, "score": round(v.score, 4)} if v else None,
                "fusion": {
                    "score": round(trace.fused[row.id], 6),
                    "coverage": round(trace.coverage.get(row.id, 0.0), 4),
                    "note": round(trace.note.get(row.id, 0.0), 4),
                    "keyword_strength": round(trace.strength.get(row.id, 0.0), 4),
                    "keyword_confidence": round(trace.confidence, 4),
                    "matched_share": round(trace.share, 4),
                    "version": fusion.FUSION_VERSION,
                } if row.id in trace.fused else None,
                "rerank": {"score": round(trace.reranked[row.id], 4)} if row.id in trace.reranked else None,
                "date": {"rule": dates.DATE_RULE_VERSION} if row.id in trace.dated else None,
            }
            if trace.phrasings is not None:  # which phrasing found the hit, at which rank
                explain["found_by"] = trace.phrasings.get(row.id, {})
        return Hit(
            path=row.path, heading=row.heading, line_start=row.line_start, line_end=row.line_end,
            score=round(score, 6), snippet=snippet(row.text, terms), status=row.status, explain=explain,
            more=len(others), also=tuple(section_of(other) for other in others[:MAX_ALSO]),
        )


def idf_mass(counts: _DocCounts | None) -> float:
    """The IDF of the query's terms added up, over the IDF of a term in one chunk: about how many
    rare words the query brings ("continue": under 1; a question naming two ids: 2 or more)."""
    if not counts or counts.total <= 0:
        return 0.0
    return sum(fusion.idf(df, counts.total) for df in counts.per_term) / fusion.idf(1, counts.total)


def under_any(path: str, roots: tuple[str, ...]) -> bool:
    """`path` is one of `roots` or lies below one (compared exactly, component by component)."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def posting_budget(total: int) -> int | None:
    """How many matches the keyword side's OR may score at this index size; None: no bound."""
    return KEYWORD_POSTING_BUDGET if total >= BOUNDED_KEYWORD_MIN_CHUNKS else None


def keyword_match(terms: list[str], counts: _DocCounts) -> str:
    """The FTS5 query the keyword side runs (query.fts_match, bounded on large indexes)."""
    return fts_match(terms, counts.per_term, counts.common_at, posting_budget(counts.total))


def _turned_off(error: str | None) -> bool:
    """Whether the model is off by the person's choice (engine/embedding/models.py words it "turned off")."""
    return bool(error) and "turned off" in error


def mode_run(asked: str, vector_used: bool, reranked: bool) -> str:
    """The mode that actually ran: a stage that could not run is not claimed (--json, MCP)."""
    if asked in ("hybrid", "hybrid+rerank") and not vector_used:
        return "keyword"
    if asked == "hybrid+rerank" and not reranked:
        return "hybrid"
    return asked
