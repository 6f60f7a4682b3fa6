"""The million-chunk hybrid part of the bench, run at a small size (the IVF index switched on)."""

from __future__ import annotations

from vault_index.engine.store import Store
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
    assert "recall@10 of the vector side" in bench_million.render_hybrid(out)


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
