"""The search pipeline through App: modes, degradation, rerank, filters, curation, explain."""

from __future__ import annotations

import os

import pytest
from helpers import BACKENDS, FakeEmbedder, FakeReranker, deprecated_pair, write
from vault_index.engine.parsing.chunk import embed_text_for
from vault_index.errors import UsageError
from vault_index.services.search import fusion
from vault_index.services.search.search import MODES, Filters

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # every test on SQLite and on PostgreSQL


def _names(result) -> list[str]:
    return [os.path.basename(h.path) for h in result.hits]


@pytest.fixture
def indexed(vault, open_app, fake_embedder):
    app = open_app(fake_embedder, FakeReranker())
    app.index([str(vault)])
    return app


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_finds_the_note_and_reports_what_ran(indexed, mode):
    result = indexed.search("brake pads groove", mode=mode, limit=5)
    assert result.mode == mode
    assert result.hits and _names(result)[0] == "bike.md"
    top = result.hits[0]
    assert top.heading == "Bike maintenance > Brakes"
    lines = open(top.path).read().split("\n")
    assert "brake pads" in "\n".join(lines[top.line_start - 1 : top.line_end])
    assert result.vector_used == (mode in ("vector", "hybrid", "hybrid+rerank"))
    assert result.reranked == (mode == "hybrid+rerank")
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_without_an_embedder_hybrid_falls_back_to_keyword_hits_with_a_notice(vault, open_app):
    app = open_app(None)
    report = app.index([str(vault)])
    assert not report.vector_used and report.chunks_embedded == 0
    result = app.search("brake pads", mode="hybrid")
    keyword = app.search("brake pads", mode="keyword")
    assert not result.vector_used and not result.reranked
    assert [(h.path, h.line_start) for h in result.hits] == [(h.path, h.line_start) for h in keyword.hits]
    assert _names(result)[0] == "bike.md"
    assert any("vector search off" in n for n in result.notices)


def test_with_an_embedder_but_no_reranker_rerank_mode_reports_reranked_false(vault, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    result = app.search("brake pads", mode="hybrid+rerank")
    plain = app.search("brake pads", mode="hybrid")
    assert result.vector_used and not result.reranked
    assert any("rerank off" in n for n in result.notices)
    assert [(h.path, h.score) for h in result.hits] == [(h.path, h.score) for h in plain.hits]


def test_a_reranker_reorders_the_fused_head(tmp_path, open_app, fake_embedder):
    root = tmp_path / "rr"
    # short note: close to the query in vector and bm25 terms; the long one repeats the query words
    write(root, "short.md", "# Pump valve\n\nPump valve pressure.\n")
    filler = " ".join(f"filler{i}" for i in range(60))
    write(root, "long.md", f"# Log\n\n{filler} pump valve pressure pump valve pressure pump valve pressure\n")
    for i in range(5):
        write(root, f"other{i}.md", f"# Other {i}\n\nunrelated pump note number {i}\n")
    reranker = FakeReranker()
    app = open_app(fake_embedder, reranker)
    app.index([str(root)])
    query = "pump valve pressure"
    fused = app.search(query, mode="hybrid", explain=True)
    assert _names(fused)[0] == "short.md"  # precondition: fusion alone prefers the short note
    result = app.search(query, mode="hybrid+rerank", explain=True)
    assert result.reranked and result.vector_used
    assert _names(result)[0] == "long.md"
    query_seen, documents = reranker.calls[-1]
    assert query_seen == query and len(documents) == min(fusion.RERANK_TOP, len(fused.hits))
    # the order is the fused order sorted by the reranker's score (stable on ties)
    by_text = {}
    for hit in fused.hits:
        rows = app.store.chunk_rows(app.store.chunk_ids_matching(hit.path, (), None)).values()
        row = next(r for r in rows if r.line_start == hit.line_start)
        by_text[(hit.path, hit.line_start)] = FakeReranker.score_one(query, embed_text_for(row.title, row.heading,
                                                                                          row.text))
    fused_keys = [(h.path, h.line_start) for h in fused.hits]
    expected = sorted(fused_keys, key=lambda k: -by_text[k])
    assert [(h.path, h.line_start) for h in result.hits] == expected
    assert all(h.explain["rerank"] is not None for h in result.hits[: fusion.RERANK_TOP])


def test_filters_restrict_results(indexed, vault):
    query = "probe chain starter postgres sealant"
    everything = {h.path for h in indexed.search(query, mode="hybrid", limit=50).hits}
    assert len({os.path.dirname(p) for p in everything}) >= 3  # the query reaches several folders
    kitchen = indexed.search(query, mode="hybrid", filters=Filters(path_prefix=str(vault / "kitchen")))
    assert kitchen.hits and {h.path for h in kitchen.hits} == {str(vault / "kitchen" / "sourdough.md")}
    tagged = indexed.search(query, mode="hybrid", filters=Filters(tags=("soil",)))
    assert tagged.hits and {h.path for h in tagged.hits} == {str(vault / "garden.md")}
    for mode in ("keyword", "vector", "grep"):
        drafts = indexed.search(query, mode=mode, filters=Filters(status="draft"))
        assert drafts.hits and {h.status for h in drafts.hits} == {"draft"}, mode
    none = indexed.search(query, mode="hybrid", filters=Filters(tags=("garden",), status="draft"))
    assert none.hits == ()


def test_a_deprecated_note_ranks_below_an_otherwise_equal_live_note(tmp_path, open_app, fake_embedder):
    root = tmp_path / "dep"
    deprecated_pair(root)
    app = open_app(fake_embedder)
    app.index([str(root)])
    for mode in ("keyword", "vector", "hybrid", "grep"):
        result = app.search("recipe app blue green rollout", mode=mode)
        assert _names(result) == ["b-new.md", "a-old.md"], mode
        assert [h.status for h in result.hits] == ["canonical", "deprecated"]
        assert result.hits[1].score == pytest.approx(result.hits[0].score * fusion.DEPRECATED_PENALTY, abs=1e-6)


def test_explain_gives_each_stage_and_the_fusion_formula_holds(indexed):
    result = indexed.search("capacitive moisture probe", mode="hybrid", explain=True, limit=10)
    assert result.hits
    top = result.hits[0].explain
    assert top["keyword"]["rank"] >= 1 and top["vector"]["rank"] >= 1
    assert top["fusion"]["version"] == fusion.FUSION_VERSION and 0 <= top["fusion"]["coverage"] <= 1
    for hit in result.hits:
        parts = hit.explain
        assert parts["fusion"] is not None and parts["rerank"] is None
        if parts["vector"] is not None:
            expected = (
                parts["vector"]["score"]
                + fusion.NOTE_WEIGHT * parts["fusion"]["note"]
                + parts["fusion"]["keyword_confidence"] * (
                    fusion.COVERAGE_WEIGHT * parts["fusion"]["coverage"] ** fusion.COVERAGE_POWER
                    + fusion.KEYWORD_SCORE_WEIGHT * parts["fusion"]["keyword_strength"] ** fusion.KEYWORD_SCORE_POWER)
            )
            assert parts["fusion"]["score"] == pytest.approx(expected, abs=1e-3)
    assert indexed.search("capacitive", mode="hybrid").hits[0].explain == {}  # only when asked


def test_words_the_index_never_holds_lower_the_keyword_confidence(indexed):
    """The same question with two words no note uses: the matched share drops below 1 and the
    confidence is scale x the best keyword hit's coverage x that share (fusion.matched_share)."""
    for query, full in (("capacitive moisture probe", True), ("capacitive moisture probe zyxwv qwertyuiop", False)):
        hits = indexed.search(query, mode="hybrid", explain=True, limit=20).hits
        fused = hits[0].explain["fusion"]
        best = next(h.explain["fusion"] for h in hits if (h.explain["keyword"] or {}).get("rank") == 1)
        assert (fused["matched_share"] == 1.0) is full and 0 < fused["matched_share"] <= 1
        assert fused["keyword_confidence"] == pytest.approx(
            min(1.0, fusion.CONFIDENCE_SCALE * best["coverage"] * fused["matched_share"]), abs=1e-3)
        if not full:
            assert fused["keyword_confidence"] < 1


def test_operators_are_words_not_syntax(indexed):
    """NOT and - would exclude, * would widen, a column filter would narrow: all are plain words."""
    for query in ("capacitive NOT probe", "capacitive -probe", "capacitive AND NOT probe"):
        result = indexed.search(query, mode="keyword")
        assert _names(result) and _names(result)[0] == "garden.md", query
        assert "probe" in result.hits[0].snippet
    assert indexed.search("capaci*", mode="keyword").hits == ()  # no prefix expansion
    assert indexed.search("body:degreaser", mode="keyword").hits == ()  # not a column filter


def test_only_stopwords_or_punctuation_gives_no_keyword_hits_and_no_error(indexed):
    for query in ("the and of to", '"', "?!?", "—"):
        assert indexed.search(query, mode="keyword").hits == ()
        assert indexed.search(query, mode="grep").hits == ()
        indexed.search(query, mode="hybrid+rerank")  # vector side may still answer; must not raise


def test_a_long_query_is_cut_with_a_notice_and_still_finds(indexed):
    from vault_index.services.search.query import MAX_QUERY_CHARS

    query = "degreaser derailleur " + "x" * 10_000
    for mode in MODES:
        result = indexed.search(query, mode=mode)
        assert len(result.query) == MAX_QUERY_CHARS
        assert any("cut" in n for n in result.notices)
        assert _names(result)[0] == "bike.md", mode


@pytest.mark.parametrize(
    "kwargs", [{"query": ""}, {"query": "   "}, {"query": "x", "mode": "fuzzy"}, {"query": "x", "limit": 0},
               {"query": "x", "limit": 101}]
)
def test_malformed_requests_are_usage_errors(indexed, kwargs):
    with pytest.raises(UsageError):
        indexed.search(**kwargs)


def test_snippet_of_a_long_chunk_is_centred_on_the_query_word(tmp_path, open_app):
    root = tmp_path / "snip"
    text = " ".join(f"w{i:03}" for i in range(70)) + " needleword " + " ".join(f"v{i:03}" for i in range(150))
    write(root, "n.md", f"# N\n\n{text}\n")
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    hit = app.search("needleword", mode="keyword").hits[0]
    assert app.store.counts()["chunks"] == 1  # one chunk, longer than a snippet
    assert "needleword" in hit.snippet and hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet) <= 482


def test_snippet_shows_the_lines_that_matched_not_the_records_status_line(tmp_path, open_app):
    """Issue 39: a decision record's chunk opened with `Status: accepted`, and that was its snippet."""
    root = tmp_path / "adr"
    write(root, "0003-gateway.md", "# 0003: Gateway\n\nStatus: accepted\nDate: 2024-03-01\n\n"
                                   "Every preflight goes through the gateway.\nThe gateway checks origins once.\n")
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    (hit,) = app.search("preflight origins", mode="keyword").hits
    assert hit.snippet == "…Every preflight goes through the gateway.\nThe gateway checks origins once."
    assert app.search("gateway", mode="keyword").hits[0].snippet.startswith("…Every preflight")


def test_a_large_index_bounds_the_keyword_or_to_its_rarest_terms(tmp_path, open_app, monkeypatch):
    from vault_index.services.search import search

    root = tmp_path / "budget"
    for word, copies in (("zephyr", 1), ("quartz", 3), ("marble", 6)):
        for i in range(copies):
            write(root, f"{word}{i}.md", f"# {word.title()} {i}\n\nthe {word} note number {i}\n")
    app = open_app(None)
    app.index([str(root)])
    query = "zephyr quartz marble"
    monkeypatch.setattr(search, "KEYWORD_POSTING_BUDGET", 4)  # zephyr + quartz: 4 chunks; marble: 6 more
    below = _names(app.search(query, mode="keyword", limit=20))
    assert sorted(below) == sorted(["zephyr0.md"] + [f"quartz{i}.md" for i in range(3)]
                                   + [f"marble{i}.md" for i in range(6)])  # under the size: unbounded

    monkeypatch.setattr(search, "BOUNDED_KEYWORD_MIN_CHUNKS", app.store.chunk_count())  # "large" from here
    bounded = _names(app.search(query, mode="keyword", limit=20))
    assert sorted(bounded) == sorted(["zephyr0.md"] + [f"quartz{i}.md" for i in range(3)])
    hybrid = app.search(query, mode="hybrid", limit=20)
    assert [h.path for h in hybrid.hits] == [h.path for h in app.search(query, mode="keyword", limit=20).hits]


def test_below_the_size_threshold_the_keyword_query_is_the_unbounded_one(backend):
    import random

    from vault_index.services.search.query import fts_match
    from vault_index.services.search.search import (
        BOUNDED_KEYWORD_MIN_CHUNKS,
        DF_COUNT_CAP,
        KEYWORD_POSTING_BUDGET,
        _DocCounts,
        keyword_match,
    )

    rng = random.Random(13)
    for _ in range(500):
        terms = [f"t{i}" for i in range(rng.randint(1, 32))]
        per_term = [rng.choice([0, rng.randint(1, DF_COUNT_CAP), rng.randint(1, KEYWORD_POSTING_BUDGET)])
                    for _ in terms]
        total = rng.randint(1, BOUNDED_KEYWORD_MIN_CHUNKS - 1)
        counts = _DocCounts(total, max(DF_COUNT_CAP, total // 100), per_term)
        assert keyword_match(terms, counts) == fts_match(terms, per_term, counts.common_at)


def test_one_hit_per_note_keeps_each_notes_best_chunk_and_counts_the_rest(tmp_path, open_app):
    """Issue 21: a note with several matching sections fills one slot, not the whole top 3."""
    from helpers import write

    long = "\n\n".join(f"## Part {i}\n\nThe marmot burrow plan, part {i}: " + "filler words " * 120 for i in range(4))
    write(tmp_path / "notes", "big.md", "# Big\n\n" + long + "\n")
    write(tmp_path / "notes", "small.md", "# Small\n\nOne marmot note.\n")
    app = open_app(None)
    app.index([str(tmp_path / "notes")])
    chunks = app.search("marmot burrow", "keyword", 10, per_note=False).hits
    notes = app.search("marmot burrow", "keyword", 10, per_note=True).hits
    big = [h for h in chunks if h.path.endswith("big.md")]
    assert len(big) >= 3  # the chunk view: the long note takes several slots
    assert [h.path for h in notes].count(big[0].path) == 1
    best = next(h for h in notes if h.path == big[0].path)
    assert (best.line_start, best.more) == (big[0].line_start, len(big) - 1)
    assert {h.path for h in notes} == {h.path for h in chunks}
    assert all(not h.also and not h.more for h in chunks)


def test_a_decision_record_is_shown_by_its_prose_not_its_status_block(tmp_path, open_app):
    """Issue 39 item 8: asked by its title, a decision record's best chunk was its status block, and
    the hit showed `Status: accepted Date: ... Deciders: ...`, in the chunk view too. The block now
    rides with the record's first prose (engine/parsing/chunk.py), so either view shows the prose
    that matched; a record with nothing but its status keeps it."""
    context = "Payment calls were repeated without a limit, so an outage tripled the load on the gateway. " * 20
    write(tmp_path / "docs", "0004-retry-budget.md", "# 0004: Retry budget for payment calls\n\nStatus: accepted\n"
          f"Date: 2026-04-02\n- **Deciders:** checkout team\n\n## Context\n\n{context}\n")
    write(tmp_path / "docs", "0005-status-only.md", "# 0005: Retry budget for payment refunds\n\nStatus: proposed\n")
    app = open_app(None)
    app.index([str(tmp_path / "docs")])
    chunks = app.search("retry budget for payment calls", "keyword", 10, per_note=False).hits
    notes = app.search("retry budget for payment calls", "keyword", 10, per_note=True).hits
    record = next(h for h in notes if h.path.endswith("0004-retry-budget.md"))
    mine = [h for h in chunks if h.path.endswith("0004-retry-budget.md")]
    assert any(h.line_start == 3 for h in mine)  # the block's lines, in a chunk of the prose's section
    for hit in mine + [record]:
        assert not hit.snippet.startswith("Status") and "payment calls" in hit.snippet.lower()
        assert hit.heading.endswith("> Context")
    assert record.score == mine[0].score
    alone = next(h for h in notes if h.path.endswith("0005-status-only.md"))
    assert alone.snippet == "Status: proposed"  # no prose to show: its status is its chunk


def test_one_hit_per_note_is_the_default_and_names_the_notes_other_sections(tmp_path, open_app):
    """Issue 39 item 7: one default for every surface (App.search): one hit per note, listing where
    its other matched sections lie (heading and lines, the first MAX_ALSO, best first); `more`
    counts them all. Chunks on request. The Searcher itself (the eval's and the bench's) still
    gives chunks."""
    from helpers import write
    from vault_index.services.search.per_note import MAX_ALSO
    from vault_index.types import SectionRef

    long = "\n\n".join(f"## Part {i}\n\nThe marmot burrow plan, part {i}: " + "filler words " * 120 for i in range(6))
    write(tmp_path / "notes", "big.md", "# Big\n\n" + long + "\n")
    write(tmp_path / "notes", "small.md", "# Small\n\nOne marmot note.\n")
    app = open_app(None)
    app.index([str(tmp_path / "notes")])
    chunks = app.search("marmot burrow", "keyword", 10, per_note=False).hits
    default = app.search("marmot burrow", "keyword", 10).hits
    assert [h.path for h in default] == list(dict.fromkeys(h.path for h in chunks))
    big = [h for h in chunks if h.path.endswith("big.md")]
    best = next(h for h in default if h.path.endswith("big.md"))
    assert best.more == len(big) - 1 == 5
    assert best.also == tuple(SectionRef(h.heading, h.line_start, h.line_end) for h in big[1 : 1 + MAX_ALSO])
    assert all(s.heading.startswith("Big > Part ") for s in best.also)
    assert len(app.searcher.search("marmot burrow", "keyword", 10).hits) == len(chunks)  # the eval's view
