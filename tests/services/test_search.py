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


def test_searching_with_a_model_the_index_has_no_vectors_for_says_so(tmp_path, open_app):
    from helpers import FakeEmbedder, write

    vault = tmp_path / "v2"
    write(vault, "a.md", "# A\n\nwombat burrows\n")
    open_app(FakeEmbedder("model-a"), db_name="shared.db").index([str(vault)])
    other = open_app(FakeEmbedder("model-b"), db_name="shared.db")
    result = other.search("wombat", mode="hybrid")
    # issue 39 item 12: no chunk has a vector for this model, so no vector was used (it said so before)
    assert not result.vector_used and result.mode == "keyword"
    assert any(n.startswith(f"1 chunk of v2 ({vault}) has no vector yet") for n in result.notices), result.notices
    assert [h.path for h in result.hits] == [str(vault / "a.md")]  # the keyword side still answers


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


def test_an_answer_names_the_chunks_it_could_not_use_vectors_for(tmp_path, open_app):
    """Issue 39 item 1: a source indexed but not yet embedded is named in every answer with
    vectors, with its count; once embedded, the notice goes."""
    from helpers import FakeEmbedder, write
    from vault_index.engine import indexer

    done, waiting = tmp_path / "done", tmp_path / "waiting"
    for i in range(20):  # few enough wait that hybrid still runs (index_state.KEYWORD_ONLY_SHARE)
        write(done, f"a{i}.md", f"# A{i}\n\nwombat burrows at dusk, part {i}\n")
    write(waiting, "b.md", "# B\n\nwombat tunnels\n\n## More\n\nwombat diet\n")
    app = open_app(FakeEmbedder("model-a"))
    app.index([str(done)])
    indexer.sync(app.store, app.models, [str(waiting)], embed=False)  # as a project's first, keyword-only pass
    result = app.search("wombat", mode="hybrid")
    assert result.vector_used and result.mode == "hybrid"
    pending = [n for n in result.notices if "have no vectors yet" in n]
    assert pending == [f"2 chunks of waiting ({waiting}) have no vectors yet: keyword-only for them "
                       "(a running server embeds them; `vault-index index` embeds them now)"]
    app.index([str(waiting)])  # the embedding catches up
    assert not [n for n in app.search("wombat", mode="hybrid").notices if "no vectors" in n]


def test_a_right_answer_waiting_for_its_vector_is_judged_by_the_keyword_side(tmp_path, open_app):
    """Issue 39 item 1: a right answer flipped to "nothing relevant" (0.98 -> 0.20) while its chunk
    had no vector yet, the hybrid model reading the missing side as evidence against it. A first
    hit with no vector is scored by the keyword model, and the answer still says what is pending."""
    from helpers import FakeEmbedder, write
    from vault_index.engine import indexer
    from vault_index.services.search import confidence

    docs = tmp_path / "docs"
    for i, (title, body) in enumerate([("Caching", "Redis caches sessions for thirty minutes."),
                                       ("Logging", "Logs go to Loki through promtail."),
                                       ("Billing", "Invoices are generated nightly by the billing cron."),
                                       ("Auth", "Tokens are signed with the rotating key.")] * 3):
        write(docs, f"n{i}.md", f"# {title}\n\n{body}\n")  # 1 of 13 waits: hybrid still runs
    app = open_app(FakeEmbedder("model-a"))
    app.index([str(docs)])
    write(docs, "deploy.md", "# Deploying the orders service\n\nRun `make deploy-orders` with the staging "
          "kubeconfig; the rollout waits for the readiness probe.\n")
    indexer.sync(app.store, app.models, [str(docs)], embed=False)  # the answer's chunk waits for its vector
    question = "how do I deploy the orders service"
    keyword = app.search(question, mode="keyword")
    assert keyword.relevant, keyword.confidence  # the keyword side alone is sure of it
    result = app.search(question, mode="hybrid")
    assert result.vector_used and _names(result)[0] == "deploy.md"
    assert result.relevant and result.confidence >= confidence.threshold("keyword")
    assert result.judged_by == "keyword"
    assert not [n for n in result.notices if n.startswith("nothing relevant")], result.notices
    assert [n for n in result.notices if n.startswith(f"1 chunk of docs ({docs}) has no vector yet")]
    app.index([str(docs)])  # embedded: the hybrid model judges it again
    embedded = app.search(question, mode="hybrid")
    assert embedded.judged_by == "hybrid" and embedded.relevant


def test_a_search_reaching_mostly_unembedded_chunks_runs_keyword_only_and_says_so(tmp_path, open_app):
    """Walkthrough A: with 98% of a project waiting for vectors, hybrid ranked an embedded wrong note
    over the waiting right one and said "nothing relevant" (0.07); five seconds later 0.78. Above
    KEYWORD_ONLY_SHARE waiting, a hybrid search runs keyword-only, says why, and is judged as such;
    a search whose folder is embedded stays hybrid."""
    from helpers import FakeEmbedder
    from vault_index.engine import indexer
    from vault_index.services.index_state import KEYWORD_ONLY_SHARE

    done, docs = tmp_path / "done", tmp_path / "docs"
    write(done, "a.md", "# Decisions\n\nWe picked Redis for rate limiting.\n")
    for i in range(9):
        write(docs, f"n{i}.md", f"# Topic {i}\n\nFiller about subject number {i}.\n")
    write(docs, "mentors.md", "# Onboarding mentors\n\nEvery new engineer is onboarded with a mentor "
          "for the first six weeks.\n")
    app = open_app(FakeEmbedder("model-a"))
    app.index([str(done)])
    indexer.sync(app.store, app.models, [str(docs)], embed=False)  # 10 of 11 chunks wait
    assert 10 / 11 > KEYWORD_ONLY_SHARE
    result = app.search("how are new engineers onboarded", mode="hybrid")
    assert (result.mode, result.vector_used, result.judged_by) == ("keyword", False, "keyword")
    said = [n for n in result.notices if n.startswith("keyword-only: 10 of the 11 chunks searched have no vector")]
    assert said and [n for n in result.notices if n.startswith(f"10 chunks of docs ({docs})")]
    assert _names(result)[0] == "mentors.md" and result.relevant
    embedded_only = app.search("redis rate limiting", mode="hybrid", filters=Filters(path_prefix=str(done)))
    assert embedded_only.mode == "hybrid" and embedded_only.vector_used  # its folder has every vector
    app.index([str(docs)])
    again = app.search("how are new engineers onboarded", mode="hybrid")
    assert again.mode == "hybrid" and not [n for n in again.notices if n.startswith("keyword-only")]


def test_nothing_relevant_while_some_chunks_wait_says_they_rank_lower_until_embedded(tmp_path, open_app):
    """ADR 0038: below the keyword-only share, hybrid still runs; a chunk waiting ranks on keywords
    alone, so a "nothing relevant" then says how many wait and to ask again once they are embedded."""
    from vault_index.engine import indexer

    for i in range(20):
        write(tmp_path / "done", f"a{i}.md", f"# Wombats {i}\n\nwombat burrows at dusk, part {i}\n")
    write(tmp_path / "waiting", "b.md", "# Lattice\n\nquantum lattice notes\n\n## More\n\nlattice gauge\n")
    app = open_app(FakeEmbedder("model-a"))
    app.index([str(tmp_path / "done")])
    indexer.sync(app.store, app.models, [str(tmp_path / "waiting")], embed=False)
    result = app.search("chromodynamics of quarks", mode="hybrid")
    assert result.mode == "hybrid" and not result.relevant
    (said,) = [n for n in result.notices if n.startswith("nothing relevant")]
    assert said.endswith("; 2 of the chunks searched wait for vectors and rank lower until embedded: ask again then")
    app.index([str(tmp_path / "waiting")])
    (said,) = [n for n in app.search("chromodynamics of quarks", mode="hybrid").notices
               if n.startswith("nothing relevant")]
    assert said.endswith("the hits are the nearest notes, not answers")


def test_a_first_answer_without_any_vector_names_what_is_pending_and_only_what_it_sees(tmp_path, open_app):
    """Issue 39 item 1 (the walkthrough): the very first answer in a project, before any chunk has a
    vector, is keyword-only and names the source still waiting; another workspace's source is not named."""
    from helpers import FakeEmbedder, write
    from vault_index.engine import indexer

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    write(mine, "a.md", "# A\n\nwombat burrows at dusk\n")
    write(theirs, "b.md", "# B\n\nwombat tunnels\n")
    app = open_app(FakeEmbedder("model-a"))
    indexer.sync(app.store, app.models, [str(mine), str(theirs)], embed=False)
    app.store.set_source_scope(str(theirs), str(tmp_path / "another-project"))
    result = app.search("wombat", mode="hybrid")
    assert not result.vector_used and result.mode == "keyword"
    pending = [n for n in result.notices if n[0].isdigit()]  # "N chunks of SOURCE ...", one per source
    assert len(pending) == 1 and pending[0].startswith(f"1 chunk of mine ({mine}) has no vector yet"), pending
    assert "keyword-only: the one chunk searched has no vector yet" in " ".join(result.notices)
    assert not [n for n in app.search("wombat", mode="keyword").notices if "no vectors" in n]  # none asked for


def test_status_with_vectors_turned_off_says_the_vectors_it_holds_are_not_used(tmp_path, open_app):
    """Walkthrough A (item 12): with VAULT_EMBED_MODEL=none, status still said "vectors 1 (model-a)"
    as if they served, while every search was keyword-only."""
    from vault_index.engine.embedding.models import Models

    write(tmp_path / "v", "a.md", "# A\n\nwombat burrows\n")
    open_app(FakeEmbedder("model-a"), db_name="shared.db").index([str(tmp_path / "v")])
    off = open_app(None, db_name="shared.db")
    off.models = Models("none", "none", tmp_path)  # as VAULT_EMBED_MODEL=none loads it
    status = off.status()
    assert (status["vectors"], status["embed_off"], status["vectors_live"], status["vectors_pending"]) == (
        1, True, False, 0)
    on = open_app(FakeEmbedder("model-a"), db_name="shared.db").status()
    assert (on["embed_off"], on["vectors_live"]) == (False, True)


def test_status_with_a_model_that_cannot_load_says_why_its_vectors_are_unused(tmp_path, open_app):
    """Walkthrough B: with VAULT_EMBED_MODEL naming a folder that is gone, status showed the old
    vectors as if they served, while search said vector search was off; and with vectors off,
    the rerank line still said "searches are hybrid"."""
    from vault_index.engine.embedding.models import Models

    write(tmp_path / "v", "a.md", "# A\n\nwombat burrows\n")
    open_app(FakeEmbedder("model-a"), db_name="shared.db").index([str(tmp_path / "v")])
    gone = open_app(None, db_name="shared.db")
    gone.models = Models(f"some/model@{tmp_path / 'no-such-folder'}", "none", tmp_path)
    status = gone.status()
    assert status["embed_off"] and not status["vectors_live"] and status["vectors_pending"] == 0
    assert "does not exist" in status["embed_off_reason"]
    off = open_app(None, db_name="shared.db")
    off.models = Models("none", "Xenova/ms-marco-MiniLM-L-6-v2", tmp_path)  # rerank as set by default
    assert "searches are keyword-only" in off.status()["rerank_state"]


@pytest.mark.parametrize("setting", ["{tmp}/no/such/folder", "./no-such-folder", "~/no-such-vault-index-folder"])
def test_status_with_a_model_setting_that_is_a_missing_path_says_it_cannot_load(tmp_path, open_app, setting):
    """Walkthrough C: VAULT_EMBED_MODEL=/tmp/no/such/folder was taken for a hub model's name, so status
    said "searches are hybrid" with every chunk waiting for vectors, and never that the model cannot load."""
    from vault_index.engine.embedding.models import Models

    write(tmp_path / "v", "a.md", "# A\n\nwombat burrows\n")
    app = open_app(None)
    app.index([str(tmp_path / "v")])
    app.models = Models(setting.format(tmp=tmp_path), "Xenova/ms-marco-MiniLM-L-6-v2", tmp_path)
    status = app.status()
    assert status["embed_off"] and status["vectors_pending"] == 0 and not status["embed_model"]
    assert "model folder" in status["embed_off_reason"] and "does not exist" in status["embed_off_reason"]
    assert "searches are keyword-only" in status["rerank_state"]


def test_terminal_status_says_a_hub_model_that_cannot_load_here_leaves_vectors_unused(tmp_path, open_app,
                                                                                     monkeypatch):
    """Walkthrough E: with VAULT_EMBED_MODEL=BAAI/bge-small-en-v1.5 offline and not cached, searches
    said keyword-only while status said "searches are hybrid" with every chunk waiting for vectors."""
    from vault_index.engine.embedding import models

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    models.hub_reachable.cache_clear()
    write(tmp_path / "v", "a.md", "# A\n\nwombat burrows\n")
    app = open_app(None, db_name="hub.db")
    app.index([str(tmp_path / "v")])
    app.models = models.Models("BAAI/bge-small-en-v1.5", "Xenova/ms-marco-MiniLM-L-6-v2", tmp_path / "cache")
    status = app.status(probe_models=True)
    assert status["embed_off"] and "not in the model cache" in status["embed_off_reason"]
    assert status["vectors_pending"] == 0 and "searches are keyword-only" in status["rerank_state"]
