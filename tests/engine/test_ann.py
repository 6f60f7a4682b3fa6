"""float16 vectors with exact re-scoring, the exact scan kernels and the IVF index (engine/embedding/ann.py)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import write
from vault_index.engine.embedding import ann
from vault_index.engine.embedding.vectors import NumpyIndex, rescore_reachable


def _unit(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.mark.parametrize("kernel", ["numkong", "numpy"])
def test_exact_scan_over_float16_finds_the_float32_top(monkeypatch, kernel):
    if kernel == "numpy":
        monkeypatch.setattr(ann, "_numkong", lambda: None)
    matrix, queries = _unit(3000), _unit(20, seed=1)
    agree = []
    for query in queries:
        want = set(np.argsort(-(matrix @ query))[:10].tolist())
        rows, scores = ann.exact_top(matrix.astype(np.float16), query, 20)  # twice the limit, as search asks
        assert list(scores) == sorted(scores, reverse=True)
        agree.append(len(want & set(rows.tolist())) / 10)
    assert min(agree) == 1.0  # with 2x candidates, half precision never loses a true top-10 row here


def test_search_holds_float16_and_returns_exact_float32_scores(tmp_path, open_app, fake_embedder):
    vault = tmp_path / "vault"
    for i in range(30):
        write(vault, f"n{i}.md", f"# Note {i}\n\n## A\n\nalpha word{i} text {i % 7}\n\n## B\n\nbeta {i % 3} gamma\n")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    index = NumpyIndex(app.store, fake_embedder.fingerprint)
    query = fake_embedder.embed_query("alpha word4 text")
    hits = index.search(query, 5)
    assert index._vectors.matrix.dtype == np.float16
    stored = app.store.vectors_by_hash(fake_embedder.fingerprint)
    rows = app.store.chunk_keys()
    scored = ((float(np.frombuffer(stored[h], np.float32) @ query), cid) for cid, _, h in rows)
    exact = sorted(scored, key=lambda p: (-p[0], p[1]))
    assert [cid for cid, _ in hits] == [cid for _, cid in exact[:5]]
    assert [score for _, score in hits] == [score for score, _ in exact[:5]]


def test_ivf_index_follows_edits_and_deletions(tmp_path, open_app, fake_embedder):
    vault = tmp_path / "vault"
    for i in range(40):
        write(vault, f"n{i}.md", f"# Note {i}\n\n## A\n\nalpha word{i} text\n\n## B\n\nbeta other{i}\n")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    index = NumpyIndex(app.store, fake_embedder.fingerprint, ann_min_vectors=10)
    assert index.search(fake_embedder.embed_query("alpha word3"), 3)
    assert index.approx is not None and len(index.approx) == 80

    write(vault, "n7.md", "# Note 7\n\n## A\n\nzebraquill unique words\n")
    (vault / "n9.md").unlink()
    app.index()
    hits = index.search(fake_embedder.embed_query("zebraquill unique words"), 3)
    live = {cid for cid, _, _ in app.store.chunk_keys()}
    assert len(index.approx) == len(live) == 77
    assert app.store.chunk_rows([hits[0][0]])[hits[0][0]].text == "zebraquill unique words"
    for word in ("other9", "word9"):
        assert {cid for cid, _ in index.search(fake_embedder.embed_query(word), 10)} <= live


def test_small_indexes_scan_exactly_without_a_graph(tmp_path, open_app, fake_embedder):
    vault = tmp_path / "vault"
    write(vault, "a.md", "# A\n\nalpha\n")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    index = NumpyIndex(app.store, fake_embedder.fingerprint)
    assert index.search(fake_embedder.embed_query("alpha"), 3) and index.approx is None


def test_recall_at_counts_shared_top_k():
    assert ann.recall_at([{1, 2}, {3, 4}], [[1, 9], [3, 4]], k=2) == 0.75


def test_the_rescore_skips_only_rows_that_cannot_reach_the_top():
    rng = np.random.default_rng(5)
    skipped = 0
    for trial in range(200):
        n, limit = int(rng.integers(20, 300)), int(rng.integers(1, 60))
        rows = _unit(n, 64, seed=trial)
        twins = rng.integers(0, n, n // 4)  # near-duplicates, closer than float16 can tell apart
        rows[twins] = rows[rng.integers(0, n, len(twins))] + rng.standard_normal((len(twins), 64)) * 1e-5
        query = _unit(1, 64, seed=1000 + trial)[0]
        exact = rows @ query
        best = sorted(range(n), key=lambda i: (-exact[i], i))[:limit]
        kept = rescore_reachable(rows.astype(np.float16), query, limit)
        assert set(best) <= set(kept.tolist())
        assert kept.tolist() == sorted(kept.tolist())  # candidates keep their order
        skipped += n - len(kept)
    assert skipped > 0  # and it does leave rows unread


def test_the_rescore_reads_every_row_when_it_cannot_tell():
    rows = _unit(10, 8).astype(np.float16)
    query = _unit(1, 8, seed=3)[0]
    assert rescore_reachable(rows, query, 10).tolist() == list(range(10))  # limit covers them all
    rows[4, 0] = np.inf  # a float16 overflow: no bound holds
    assert rescore_reachable(rows, query, 3).tolist() == list(range(10))


def test_search_reads_fewer_float32_vectors_than_candidates(tmp_path, open_app, fake_embedder):
    vault = tmp_path / "vault"
    for i in range(40):
        write(vault, f"n{i}.md", f"# Note {i}\n\n## A\n\nalpha word{i} text {i % 7} more{i % 5}\n")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    index = NumpyIndex(app.store, fake_embedder.fingerprint)
    query = fake_embedder.embed_query("alpha word4 text")
    index.search(query, 5)  # loads the matrix
    asked: list[int] = []
    real = app.store.vectors_by_hash
    app.store.vectors_by_hash = lambda model, hashes=None: asked.append(len(hashes)) or real(model, hashes)
    hits = index.search(query, 5)
    assert len(asked) == 1 and asked[0] < 10  # 2 x 5 candidates; only those that could make the top 5
    stored = real(fake_embedder.fingerprint)
    exact = ((float(np.frombuffer(stored[h], np.float32) @ query), cid) for cid, _, h in app.store.chunk_keys())
    scored = sorted(exact, key=lambda p: (-p[0], p[1]))
    assert hits == [(cid, score) for score, cid in scored[:5]]
