"""Agent-supplied sub-queries (issue 23): bounds, the fusion rule, and the pipeline around them.

Real SQLite FTS5 (and PostgreSQL where installed) and the real pipeline; the model is the fake
bag-of-words one, except in the must-show test on the example vault, which loads the shipped MiniLM.
"""

from __future__ import annotations

import os
import shutil

import pytest
from helpers import BACKENDS, REPO, FakeEmbedder, deprecated_pair, make_settings
from vault_index.errors import UsageError
from vault_index.services.search import subqueries
from vault_index.services.search.search import MODES, RERANK_NOTICE_PREFIX, Filters
from vault_index.services.search.subqueries import SubQueries, combine, sub_queries


def _names(result) -> list[str]:
    return [os.path.basename(h.path) for h in result.hits]


def _ranking(result) -> list[tuple]:
    return [(h.path, h.heading, h.line_start, h.score, h.more) for h in result.hits]


@pytest.fixture
def indexed(vault, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    return app


# --- input ---------------------------------------------------------------------------------------

def test_sub_queries_take_a_string_or_a_list_per_kind_and_drop_blanks():
    found = sub_queries("brake pads", ["  squeaky   brakes ", ""], "Replace the pads.")
    assert found == SubQueries(("brake pads",), ("squeaky brakes",), ("Replace the pads.",))
    assert sub_queries(None, [], "  ") is None  # nothing left: a plain search
    assert SubQueries().empty() and not found.empty()


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"keywords": ["a", "b", "c", "d"]}, "at most 3 keywords"),
    ({"paraphrases": ["x" * (subqueries.MAX_SUBQUERY_CHARS + 1)]}, "keep each under"),
    ({"hypothetical": [3]}, "must be text"),
])
def test_too_many_or_too_long_sub_queries_are_usage_errors(kwargs, words):
    with pytest.raises(UsageError, match=words):
        sub_queries(**kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_searcher_checks_sub_queries_it_is_handed_directly(indexed, backend):
    with pytest.raises(UsageError, match="at most 3 paraphrases"):
        indexed.search("brakes", subqueries=SubQueries(paraphrases=("a", "b", "c", "d")))


# --- the fusion rule -------------------------------------------------------------------------------

def test_combine_is_weighted_reciprocal_rank_fusion_with_the_question_counting_double():
    question = [(1, 0.9), (2, 0.8)]
    other = [(3, 5.0), (2, 4.0)]
    scores = dict(combine(question, [other]))
    k, w = subqueries.RRF_K, subqueries.QUESTION_WEIGHT
    assert scores == pytest.approx({1: w / (k + 1), 2: w / (k + 2) + 1 / (k + 2), 3: 1 / (k + 1)})
    # one sub-query's first place does not outvote the question's first place; two agreeing on
    # the question's second do
    assert [cid for cid, _ in combine([(1, 1.0)], [[(3, 1.0)]])] == [1, 3]
    assert [cid for cid, _ in combine(question, [[(2, 1.0)], [(2, 1.0)]])] == [2, 1]


# --- the pipeline ------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_empty_sub_queries_rank_exactly_as_the_plain_question(indexed, mode, backend):
    for query in ("brake pads groove", "capacitive moisture probe", "starter rye flour dutch oven"):
        plain = indexed.search(query, mode=mode, limit=100, explain=True)
        empty = indexed.search(query, mode=mode, limit=100, explain=True, subqueries=SubQueries())
        assert plain.hits and _ranking(empty) == _ranking(plain)
        assert [h.explain for h in empty.hits] == [h.explain for h in plain.hits]
        said_once = RERANK_NOTICE_PREFIX  # the absent reranker is said once per process, not per search
        assert [n for n in empty.notices if not n.startswith(said_once)] == \
            [n for n in plain.notices if not n.startswith(said_once)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_keyword_sub_query_finds_the_note_the_vague_question_misses(indexed, backend):
    query = "my bicycle makes an awful noise when I stop"
    plain = indexed.search(query, mode="hybrid", limit=5)
    assert plain.hits[0].heading != "Bike maintenance > Brakes"  # precondition: the question alone misses
    helped = indexed.search(query, mode="hybrid", limit=5, explain=True,
                            subqueries=sub_queries(keywords="brake pads groove", paraphrases=["brakes need replacing"]))
    top = helped.hits[0]
    assert (_names(helped)[0], top.heading) == ("bike.md", "Bike maintenance > Brakes")
    assert top.explain["found_by"]["keywords 1"] == 1  # explain says which phrasing found it, at which rank
    assert "paraphrase 1" in top.explain["found_by"]
    assert all("found_by" in h.explain for h in helped.hits)
    scores = [h.score for h in helped.hits]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_phrasing_runs_only_the_sides_it_is_for(indexed, fake_embedder, backend):
    found = sub_queries(keywords="degreaser", paraphrases=["clean the chain"], hypothetical="Use rye flour.")
    fake_embedder.queries.clear()
    indexed.search("bike care", mode="hybrid", subqueries=found)
    assert fake_embedder.queries == ["bike care", "clean the chain", "Use rye flour."]  # keywords: no embedding
    fake_embedder.queries.clear()
    result = indexed.search("bike care", mode="keyword", subqueries=found, explain=True)
    assert fake_embedder.queries == []  # keyword mode: no vector side for anyone
    assert all("hypothetical 1" not in h.explain["found_by"] for h in result.hits)
    result = indexed.search("bike care", mode="grep", subqueries=found)
    assert "sub-queries are not used in grep mode" in result.notices


@pytest.mark.parametrize("backend", BACKENDS)
def test_filters_limit_and_per_note_hold_with_sub_queries(indexed, vault, backend):
    found = sub_queries(keywords=["brake pads", "sourdough starter"], paraphrases=["soil moisture sensor"])
    kitchen = indexed.search("what to do", mode="hybrid", subqueries=found,
                             filters=Filters(path_prefix=str(vault / "kitchen")))
    assert kitchen.hits and set(_names(kitchen)) == {"sourdough.md"}
    two = indexed.search("what to do", mode="hybrid", limit=2, subqueries=found)
    assert len(two.hits) == 2
    notes = indexed.search("bike chain brakes tyres", mode="hybrid", per_note=True, subqueries=found, limit=20)
    assert len(_names(notes)) == len(set(_names(notes)))
    assert notes.hits[_names(notes).index("bike.md")].more >= 1
    # the caller's read grants: a sub-query cannot reach a note the caller may not read
    granted = Filters(granted_prefixes=(str(vault / "kitchen"),), path_allowed=lambda p: "/kitchen/" in p)
    only = indexed.search("what to do", mode="hybrid", filters=granted,
                          subqueries=sub_queries(keywords=["brake pads", "degreaser"], hypothetical="Bleed brakes."))
    assert set(_names(only)) <= {"sourdough.md"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deprecated_note_stays_below_an_equal_live_one_with_sub_queries(tmp_path, open_app, fake_embedder,
                                                                         backend):
    root = tmp_path / "dep"
    deprecated_pair(root)
    app = open_app(fake_embedder)
    app.index([str(root)])
    found = sub_queries(keywords="load balancer", paraphrases=["release the recipe app"])
    for mode in ("keyword", "vector", "hybrid"):
        result = app.search("recipe app blue green rollout", mode=mode, subqueries=found)
        # the deprecated note led every list (indexed first, it wins the ties): only the penalty puts it second
        assert _names(result) == ["b-new.md", "a-old.md"], mode
        assert result.hits[1].score < result.hits[0].score


def test_the_daily_note_rule_holds_with_sub_queries(tmp_path, open_app):
    obsidian = tmp_path / "obsidian-vault"
    shutil.copytree(REPO / "tests" / "fixtures" / "obsidian-vault", obsidian)
    app = open_app(FakeEmbedder())
    app.index([str(obsidian)])
    result = app.search("What did I do on 2025-11-07?", mode="hybrid", limit=5, explain=True,
                        subqueries=sub_queries(keywords="espresso machine", paraphrases=["espresso machine repair"]))
    assert result.hits[0].path.endswith("Daily/2025-11-07.md")
    assert result.hits[0].explain["date"] is not None


# --- on a real index: the example vault with the shipped MiniLM ------------------------------

@pytest.mark.real_model
def test_on_the_example_vault_empty_sub_queries_change_nothing_and_real_ones_change_the_ranking(tmp_path,
                                                                                              shipped_model_cache):
    from vault_index.engine.embedding.models import Models
    from vault_index.services.app import App

    models = Models("shipped:minilm", "none", shipped_model_cache, rerank=False)
    if models.embedder() is None:
        pytest.fail(f"the shipped model did not load: {models.embed_error}")
    app = App.open(make_settings(tmp_path), models=models)
    try:
        # the example vault without its 20 daily logs: 161 of its 302 chunks to embed, the same behaviour
        vault = tmp_path / "example-vault"
        shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns("logs"))
        app.index([str(vault)])
        query = "Why did droplets appear within the weatherproof housings despite no leak from outside?"
        for mode in ("hybrid", "keyword", "vector"):
            plain = app.search(query, mode=mode, limit=100, per_note=False)
            empty = app.search(query, mode=mode, limit=100, per_note=False, subqueries=SubQueries())
            assert len(plain.hits) > 10 and _ranking(empty) == _ranking(plain), mode
        found = sub_queries(keywords="condensation enclosure", paraphrases=["water inside sealed sensor boxes"],
                            hypothetical="Droplets formed from condensation as the temperature dropped at night.")
        helped = app.search(query, mode="hybrid", limit=100, per_note=False, subqueries=found)
        assert _ranking(helped) != _ranking(app.search(query, mode="hybrid", limit=100, per_note=False))
    finally:
        app.close()
