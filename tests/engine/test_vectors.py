"""In-memory vectors: kNN order and the note-centroid similarity that fusion uses."""

from __future__ import annotations

import numpy as np
import pytest
from vault_index.engine.embedding.vectors import ChunkVectors


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def _rows(vectors: dict[int, tuple[int, np.ndarray]]) -> list[tuple[int, int, bytes]]:
    return [(cid, fid, vec.astype(np.float32).tobytes()) for cid, (fid, vec) in sorted(vectors.items())]


def test_note_similarity_is_the_cosine_to_the_mean_of_the_notes_chunks():
    a1, a2, b1 = _unit(1, 0, 0), _unit(0, 1, 0), _unit(0, 0, 1)
    vectors = ChunkVectors(_rows({1: (10, a1), 5: (20, b1), 7: (10, a2)}))  # note 10 = chunks 1, 7
    query = _unit(1, 1, 0)
    sims = vectors.note_similarity(query, [7, 5, 99])  # 99: a chunk without a vector
    centroid = (a1 + a2) / np.linalg.norm(a1 + a2)
    assert sims[7] == pytest.approx(float(centroid @ query))
    assert sims[7] == pytest.approx(1.0)  # the note as a whole points where the query does
    assert float(a2 @ query) < sims[7]  # while its chunk alone is only half way there
    assert sims[5] == pytest.approx(float(b1 @ query))
    assert 99 not in sims


def test_rows_keep_chunk_id_order_for_lookup():
    vectors = ChunkVectors(_rows({3: (1, _unit(1, 0)), 8: (2, _unit(0, 1)), 12: (1, _unit(1, 1))}))
    assert vectors.ids.tolist() == [3, 8, 12]
    assert vectors.matrix.shape == (3, 2)
    assert set(vectors.note_similarity(_unit(0, 1), [12, 3])) == {12, 3}


def test_refresh_after_edits_reads_only_new_vectors_and_matches_a_full_load(tmp_path, open_app, fake_embedder):
    from helpers import write
    from vault_index.engine.embedding.vectors import NumpyIndex

    vault = tmp_path / "vault"
    for i in range(6):
        write(vault, f"n{i}.md", f"# Note {i}\n\n## A\n\nalpha text {i}\n\n## B\n\nbeta text {i}\n")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    index = NumpyIndex(app.store, fake_embedder.fingerprint)
    assert index.search(fake_embedder.embed_query("alpha"), 3)  # loads everything once

    requested: list[int] = []
    real_lookup = app.store.vectors_by_hash

    def counting(model, hashes=None):
        requested.append(-1 if hashes is None else len(list(hashes)))
        return real_lookup(model, hashes if hashes is None else list(hashes))

    app.store.vectors_by_hash = counting
    write(vault, "n5.md", "# Note 5\n\n## A\n\nalpha text 5\n\n## B\n\nrewritten gamma words\n")  # last ids
    (vault / "n2.md").unlink()
    app.index()
    index._refresh()  # search itself also reads the float32 vectors of its few best candidates
    assert requested and all(0 <= n <= 2 for n in requested)  # the edited note's chunks, not all

    app.store.vectors_by_hash = real_lookup
    full = NumpyIndex(app.store, fake_embedder.fingerprint)
    full.search(fake_embedder.embed_query("gamma"), 3)
    incremental, fresh = index._vectors, full._vectors
    assert incremental.ids.tolist() == fresh.ids.tolist()
    assert incremental.files.tolist() == fresh.files.tolist() and incremental.hashes == fresh.hashes
    assert np.array_equal(incremental.matrix, fresh.matrix)
    top = index.search(fake_embedder.embed_query("rewritten gamma words"), 1)[0][0]
    assert app.store.chunk_rows([top])[top].text == "rewritten gamma words"
