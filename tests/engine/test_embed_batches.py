"""Length-sorted, token-budgeted batches (engine/embedding/models.plan_batches) and resumable first index."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import FakeEmbedder, make_settings, write
from vault_index.engine import indexer
from vault_index.engine.embedding.models import ADR0016_SHAPE, LEGACY_SHAPE, EmbedShape, Models, plan_batches
from vault_index.engine.stores.store import Store
from vault_index.services.app import App


def test_batches_cover_every_text_once_and_respect_both_budgets():
    lengths = [250, 12, 90, 256, 40, 40, 7, 180, 255, 3] * 7
    shape = EmbedShape(batch_tokens=600, batch_texts=5)
    batches = plan_batches(lengths, shape)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 5
        assert len(batch) == 1 or max(lengths[i] for i in batch) * len(batch) <= 600


def test_sorted_batches_pad_less_than_the_callers_order():
    lengths = [250, 12, 90, 256, 40, 40, 7, 180, 255, 3] * 7
    padded = lambda batches: sum(max(lengths[i] for i in b) * len(b) for b in batches)  # noqa: E731
    assert padded(plan_batches(lengths, EmbedShape())) < padded(plan_batches(lengths, EmbedShape(sort_by_length=False)))


def test_legacy_shape_is_fixed_batches_of_32_in_order():
    batches = plan_batches(list(range(70, 0, -1)), LEGACY_SHAPE)
    assert [len(b) for b in batches] == [32, 32, 6]
    assert [i for b in batches for i in b] == list(range(70))


def test_a_text_longer_than_the_budget_still_gets_its_own_run():
    assert plan_batches([5000, 10], EmbedShape(batch_tokens=100)) == [[1], [0]]


class Interrupt(BaseException):
    """Stands in for Ctrl-C (KeyboardInterrupt is a BaseException too)."""


class StopAfter(FakeEmbedder):
    def __init__(self, calls: int):
        super().__init__()
        self.left = calls

    def embed_documents(self, texts):
        if self.left == 0:
            raise Interrupt
        self.left -= 1
        return super().embed_documents(texts)


def test_interrupted_first_index_resumes_without_re_embedding(tmp_path):
    vault = tmp_path / "vault"
    for n in range(2000):
        write(vault, f"d{n // 500}/n{n:04d}.md", f"# Note {n}\n\n## Part\n\nword{n} alpha beta {n * 7}\n")
    settings = make_settings(tmp_path)
    first = StopAfter(calls=10)
    app = App.open(settings, models=Models.fixed(first))
    with pytest.raises(Interrupt):
        app.index([str(vault)])
    app.close()
    done = set(first.embedded)
    assert 0 < len(done) < 2000

    second = FakeEmbedder()
    app = App.open(settings, models=Models.fixed(second))
    try:
        report = app.index([str(vault)])
        assert not done & set(second.embedded), "a chunk embedded before the interrupt was embedded again"
        assert len(second.embedded) == 2000 - len(done) == report.chunks_embedded
        assert app.store.vector_count(second.fingerprint) == 2000
        assert not app.store.chunks_missing_vectors(second.fingerprint)
    finally:
        app.close()


def test_vectors_reach_the_index_batch_by_batch(tmp_path):
    """What makes the resume possible: each batch's vectors are committed before the next runs."""
    vault = tmp_path / "vault"
    for n in range(3 * indexer.EMBED_COMMIT_BATCH):
        write(vault, f"n{n}.md", f"# N {n}\n\nbody {n}\n")
    store = Store(tmp_path / "index.db")
    seen = []

    class Watching(FakeEmbedder):
        def embed_documents(self, texts):
            other = Store(tmp_path / "index.db")  # a second connection sees only committed rows
            seen.append(other.vector_count(self.fingerprint))
            other.close()
            return super().embed_documents(texts)

    indexer.sync(store, Models.fixed(Watching()), [str(vault)])
    store.close()
    assert seen == [0, indexer.EMBED_COMMIT_BATCH, 2 * indexer.EMBED_COMMIT_BATCH]


@pytest.mark.real_model
def test_sorted_batches_give_the_unsorted_vectors(shipped_model_cache):
    texts = ["short", "a much longer text about garden sensors, batteries and soil moisture " * 6,
             "bike chain wax", "sourdough starter feeding schedule and hydration " * 3, "x",
             "the kitchen renovation budget " * 12]
    cache = shipped_model_cache
    unsorted = Models("shipped:minilm", "none", cache, rerank=False, embed_shape=LEGACY_SHAPE).embedder()
    assert unsorted is not None
    new = Models("shipped:minilm", "none", cache, rerank=False, embed_shape=EmbedShape(batch_tokens=64)).embedder()
    a, b = unsorted.embed_documents(texts), new.embed_documents(texts)
    assert a.shape == b.shape == (len(texts), 384)
    assert float(np.abs(a - b).max()) < 1e-5


def test_todays_budget_cuts_runs_of_long_texts_in_half():
    """1,024 padded tokens a run (ADR 0010, third round): four full-window texts, not eight."""
    lengths = [256] * 16 + [20] * 100
    runs = plan_batches(lengths, EmbedShape())
    assert max(len(r) for r in runs if lengths[r[0]] == 256) == 4
    assert max(max(lengths[i] for i in r) * len(r) for r in runs) <= 1024
    assert max(len(r) for r in plan_batches(lengths, ADR0016_SHAPE) if lengths[r[0]] == 256) == 8


@pytest.mark.real_model
def test_smaller_runs_without_memory_pattern_give_the_same_vectors(shipped_model_cache):
    texts = ["short", "garden sensors, batteries and soil moisture " * 12, "x", "bike chain wax " * 40,
             "the kitchen renovation budget " * 12, "sourdough starter feeding schedule " * 30] * 3
    cache = shipped_model_cache
    before = Models("shipped:minilm", "none", cache, rerank=False, embed_shape=ADR0016_SHAPE).embedder()
    assert before is not None
    now = Models("shipped:minilm", "none", cache, rerank=False).embedder()
    assert now.shape.mem_pattern is False and now.shape.batch_tokens == 1024
    a, b = before.embed_documents(texts), now.embed_documents(texts)
    assert a.shape == b.shape == (len(texts), 384)
    assert float(np.abs(a - b).max()) < 1e-5


def test_a_sync_embeds_only_the_sources_it_synced(tmp_path, open_app):
    """Issue 39: a project's sync (the server's, the terminal's) embedded every chunk of the shared
    index that lacked a vector, other projects' too, and reported them as its own."""
    other, ours = tmp_path / "other", tmp_path / "ours"
    write(other, "o.md", "# Other\n\nsomeone else's pending note\n")
    write(ours, "a.md", "# Ours\n\nour note\n\n## More\n\nmore of ours\n")
    embedder = FakeEmbedder()
    app = open_app(embedder)
    indexer.sync(app.store, app.models, [str(other)], embed=False)  # another project, not embedded yet
    report = app.index([str(ours)])
    assert report.chunks_embedded == 2 == len(embedder.embedded)
    assert [title for _, title, _, _ in app.store.chunks_missing_vectors(embedder.fingerprint)] == ["Other"]
    report = app.index([str(ours)])  # nothing of ours waits: the other project's chunk is not ours to embed
    assert report.chunks_embedded == 0 and len(embedder.embedded) == 2 and report.vector_used
