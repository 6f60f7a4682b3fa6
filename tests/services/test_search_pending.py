"""Search while vectors are pending or unusable (issue 39 items 1 and 12, ADR 0038): what an answer
says it could not use, when hybrid runs keyword-only, and what status says of unused vectors."""

from __future__ import annotations

import os

import pytest
from helpers import BACKENDS, FakeEmbedder, write
from vault_index.services.search.search import Filters

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # every test on SQLite and on PostgreSQL


def _names(result) -> list[str]:
    return [os.path.basename(h.path) for h in result.hits]


def test_searching_with_a_model_the_index_has_no_vectors_for_says_so(tmp_path, open_app):
    from helpers import FakeEmbedder, write

    vault = tmp_path / "v2"
    write(vault, "a.md", "# A\n\nwombat burrows\n")
    open_app(FakeEmbedder("model-a"), db_name="shared.db").index([str(vault)])
    other = open_app(FakeEmbedder("model-b"), db_name="shared.db")
    result = other.search("wombat", mode="hybrid")
    # issue 39 item 12: no chunk has a vector for this model, so no vector was used (it said so before)
    assert not result.vector_used and result.mode == "keyword"
    assert f"1 chunk of v2 ({vault}) has no vector yet: keyword-only for it (a running server embeds it; " \
           "`vault-index index` embeds it now)" in result.notices, result.notices  # walkthrough H: "for it ... them"
    assert [h.path for h in result.hits] == [str(vault / "a.md")]  # the keyword side still answers


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
    vector = app.search("wombat", mode="vector")  # walkthrough I: it said "keyword-only for them"
    assert [n for n in vector.notices if "have no vectors yet" in n] == [
        f"2 chunks of waiting ({waiting}) have no vectors yet: not searched in vector mode "
        "(a running server embeds them; `vault-index index` embeds them now)"]
    assert str(waiting / "b.md") not in [h.path for h in vector.hits]
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


def test_status_says_searches_run_keyword_only_while_most_chunks_wait(tmp_path, open_app):
    """Walkthrough I: with 2,432 chunks waiting and none embedded, status said "searches are hybrid"."""
    from helpers import FakeEmbedder, write
    from vault_index.engine import indexer

    for i in range(3):
        write(tmp_path / "v", f"n{i}.md", f"# N{i}\n\nwombat note {i}\n")
    app = open_app(FakeEmbedder())
    indexer.sync(app.store, app.models, [str(tmp_path / "v")], embed=False)
    # the shipped settings (rerank on, off by default), where status names the searches' mode
    app.models.rerank_enabled, app.models.rerank_setting = True, "Xenova/ms-marco-MiniLM-L-6-v2"
    state = app.status()["rerank_state"]
    assert "searches are keyword-only until most chunks have vectors, then hybrid" in state, state
    app.index([str(tmp_path / "v")])
    assert "searches are hybrid" in app.status()["rerank_state"]
