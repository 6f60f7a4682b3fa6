"""The million-chunk hybrid part of the bench, run at a small size (the IVF index switched on)."""

from __future__ import annotations

from vault_index.engine.stores.store import Store
from vault_index.tooling import bench_million


def test_bulk_fill_writes_every_chunk_its_fts_row_and_its_vector(tmp_path):
    store = Store(tmp_path / "fill.db")
    filled = bench_million.fill_store(store, 1203, 7)
    counts = store.counts()
    assert filled["chunks"] == 1203 and counts["chunks"] == 1203
    assert store.db.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0] == 1203
    assert store.vector_count(bench_million._QueryVectors.fingerprint) == 1203
    assert len(filled["queries"]) == 7
    # each query's words come from its chunk, so the keyword side finds that chunk
    text = next(iter(filled["queries"]))
    assert store.db.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                            (" ".join(f'"{w}"' for w in text.split()),)).fetchone()[0] >= 1
    store.close()


def test_hybrid_at_a_small_size_through_the_ivf_index_reports_recall_and_latency(tmp_path):
    out = bench_million.child_hybrid(3000, str(tmp_path), ann_min_vectors=1000, n_queries=30)
    assert out["chunks"] == 3000
    assert out["ivf_build_s"] is not None  # the approximate index served the vector side
    assert out["hybrid"]["n"] == 30 and out["hybrid"]["p95_ms"] >= out["hybrid"]["p50_ms"] > 0
    assert 0.9 <= out["vector_side_recall_at_10"] <= 1.0
    assert 0.8 <= out["hybrid_top10_vs_exact"] <= 1.0
    assert out["peak_rss_mb"] >= out["rss_after_load_mb"] > 0
    assert out["hybrid_long"]["n"] == 30 and out["hybrid_long_unbounded"]["n"] == 30
    # under 100k chunks the keyword side has no posting budget: the same hits with or without it
    assert out["hybrid_top10_vs_unbounded"] == out["hybrid_long_top10_vs_unbounded"] == 1.0
    rendered = bench_million.render_hybrid(out)
    assert "recall@10 of the vector side" in rendered and "unbounded keyword side" in rendered


def test_long_questions_are_words_of_their_chunk_with_a_vector_near_it(tmp_path):
    import numpy as np

    store = Store(tmp_path / "long.db")
    bench_million.fill_store(store, 500, 3)
    questions = bench_million.long_questions(store, 20)
    assert len(questions) == 20
    for text, vector in questions.items():
        words = text.split()
        assert bench_million.LONG_WORDS[0] <= len(words) <= bench_million.LONG_WORDS[1]
        match = " AND ".join(f'"{w}"' for w in words)
        assert store.db.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchone()[0] >= 1
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    store.close()


def test_brute_top_is_the_exact_top_k():
    import numpy as np

    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((40_000, 8)).astype(np.float16)
    queries = rng.standard_normal((3, 8)).astype(np.float32)
    ids = np.arange(100, 40_100)
    got = bench_million._brute_top(matrix, ids, queries, k=5)
    for q, found in zip(queries, got, strict=True):
        want = set((ids[np.argsort(-(matrix.astype(np.float32) @ q))[:5]]).tolist())
        assert found == want
