"""Vector kNN over the stored embeddings: an in-memory scan (IVF when huge), or sqlite-vec.

docs/adr/0001-vector-backend.md has the measurements behind the default; ADR 0010 why the
in-memory copy is float16 with the top candidates re-scored from the stored float32 vectors;
ADR 0014 the IVF index above ann.ANN_MIN_VECTORS. numpy is imported inside functions: the MCP
server must answer its handshake before any of this loads.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vault_index.engine.embedding import ann
from vault_index.engine.stores.store import Store

# Trigger: the in-memory matrix is float16 (half the memory of float32). Why: half precision
# moves scores by about 1e-3, enough to swap near-ties. Outcome: the best RESCORE_FACTOR x limit
# rows are re-scored from the stored float32 vectors, so the scores returned are exact.
RESCORE_FACTOR = 2
# Trigger: at 1M the IVF path hands the re-score 200 candidates for a limit of 50, and reading
# their 200 float32 blobs was 4-6 ms of a 30 ms search (ADR 0014). Why: a float16 value is within
# 2^-11 of its float32 value (relative; 2^-25 absolute below float16's normal range), so the
# float16 score of a row bounds its exact score. Outcome: only the rows whose bound can still
# reach the top `limit` are read (rescore_reachable); the scores and order returned are the same.
# The bound is twice that rounding, which also covers float32's own rounding in the dot products
# (about 384 x 2^-24 relative, twenty times smaller).
RESCORE_RELATIVE_ERROR = 2.0**-10
RESCORE_ABSOLUTE_ERROR = 2.0**-24  # per unit of the query's L1 norm: float16's subnormal steps
LOAD_BLOCK_ROWS = 8192  # vectors read into the matrix per numpy assignment (12 MB of float32)


class ChunkVectors:
    """Chunk vectors in one float16 matrix (rows in chunk id order) and the notes they belong to.

    A note's centroid (the normalised mean of its chunk vectors) is the note-level evidence that
    fusion adds to each chunk's own cosine. Centroids are computed at query time for the
    candidates' notes only: for all 20k notes of a 100k-chunk index it cost 0.4 s per reload.
    """

    def __init__(self, rows: list[tuple[int, int, bytes]], hashes: list[str] | None = None):
        """`rows`: (chunk id, file id, vector blob) in ascending chunk id order (as the store gives);
        `hashes`: each row's chunk hash, kept so that a later refresh can reuse unchanged rows."""
        import numpy as np

        self.ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self.files = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        self.matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1).astype(
            np.float16
        )
        self.hashes = hashes
        self._index_files()

    @classmethod
    def from_arrays(cls, ids, files, matrix, hashes: list[str]) -> ChunkVectors:
        vectors = cls.__new__(cls)
        vectors.ids, vectors.files, vectors.matrix, vectors.hashes = ids, files, matrix, hashes
        vectors._index_files()
        return vectors

    def _index_files(self) -> None:
        import numpy as np

        self._by_file = np.argsort(self.files, kind="stable")
        self._sorted_files = self.files[self._by_file]

    def note_similarity(self, query_vector, chunk_ids) -> dict[int, float]:
        """Cosine between the query and the centroid of each chunk's note."""
        import numpy as np

        query = np.asarray(query_vector, dtype=np.float32)
        wanted = np.fromiter(chunk_ids, dtype=np.int64)
        positions = np.searchsorted(self.ids, wanted)
        result, per_file = {}, {}
        for cid, pos in zip(wanted.tolist(), positions.tolist(), strict=True):
            if pos >= len(self.ids) or self.ids[pos] != cid:
                continue  # no vector for this chunk (yet)
            file_id = int(self.files[pos])
            if file_id not in per_file:
                lo, hi = np.searchsorted(self._sorted_files, [file_id, file_id + 1])
                centroid = self.matrix[self._by_file[lo:hi]].sum(axis=0, dtype=np.float32)
                norm = float(np.linalg.norm(centroid))
                per_file[file_id] = float(centroid @ query) / norm if norm else 0.0
            result[cid] = per_file[file_id]
        return result


class NumpyIndex:
    """kNN over an in-memory float16 copy of the vectors; reloads when the index generation moves.

    Exact scan below ann.ANN_MIN_VECTORS rows, an IVF index kept in step above it; either way
    the best candidates are re-scored against the stored float32 vectors.
    """

    name = "numpy"

    def __init__(self, store: Store, model: str, ann_min_vectors: int = ann.ANN_MIN_VECTORS):
        self.store, self.model = store, model
        self.ann_min_vectors = ann_min_vectors
        self._generation = -1
        self._vectors: ChunkVectors | None = None
        self.approx: ann.IvfIndex | None = None  # the approximate index, when the index is big

    def _refresh(self) -> ChunkVectors | None:
        generation = self.store.generation()
        if generation != self._generation:
            old = self._vectors
            self._vectors, from_old = self._load(old)
            self._generation = generation
            self._follow_graph(old, self._vectors, from_old)
        return self._vectors

    def _load(self, old: ChunkVectors | None):
        """(the index's vectors now, which rows came from `old`), reusing rows of `old` whose chunk
        id and hash still match: after an edit only that note's new chunks are read.

        A full load streams the blobs into a preallocated float16 matrix: collecting them first
        (a dict of bytes, then one joined buffer) held three copies at the peak.
        """
        import numpy as np

        keys = self.store.chunk_keys()
        n = len(keys)
        reuse = np.zeros(n, dtype=bool)
        positions = np.zeros(n, dtype=np.int64)
        reusable = old is not None and old.hashes is not None and len(old.ids) > 0
        if reusable and n:
            key_ids = np.fromiter((k[0] for k in keys), dtype=np.int64, count=n)
            positions = np.minimum(np.searchsorted(old.ids, key_ids), len(old.ids) - 1)
            same_id = (old.ids[positions] == key_ids).tolist()
            hashes = old.hashes
            triples = zip(same_id, positions.tolist(), keys, strict=True)
            reuse = np.asarray([s and hashes[p] == k[2] for s, p, k in triples], dtype=bool)
        wanted: dict[str, list[int]] = {}
        for i, flag in enumerate(reuse.tolist()):
            if not flag:
                wanted.setdefault(keys[i][2], []).append(i)
        matrix = None
        if reuse.any():
            matrix = np.empty((n, old.matrix.shape[1]), dtype=np.float16)
            matrix[reuse] = old.matrix[positions[reuse]]
        have = reuse.copy()
        if reusable:
            source = self.store.vectors_by_hash(self.model, wanted).items()  # only what changed
        else:
            source = self.store.iter_vectors(self.model)
        targets: list[int] = []  # matrix rows, and the position of each one's blob in `blobs`
        picks: list[int] = []
        blobs: list[bytes] = []
        for h, blob in source:
            rows = wanted.get(h)
            if not rows:
                continue
            targets.extend(rows)
            picks.extend([len(blobs)] * len(rows))
            blobs.append(blob)
            if len(blobs) >= LOAD_BLOCK_ROWS:
                matrix = _fill(matrix, n, targets, picks, blobs, have)
                targets, picks, blobs = [], [], []
        if blobs:
            matrix = _fill(matrix, n, targets, picks, blobs, have)
        if matrix is None or not have.any():
            return None, np.zeros(0, dtype=bool)
        keep = np.flatnonzero(have)
        ids = np.fromiter((keys[i][0] for i in keep), dtype=np.int64, count=len(keep))
        files = np.fromiter((keys[i][1] for i in keep), dtype=np.int64, count=len(keep))
        if len(keep) < n:
            matrix = matrix[keep]
        vectors = ChunkVectors.from_arrays(ids, files, matrix, [keys[i][2] for i in keep])
        return vectors, reuse[keep]

    def _follow_graph(self, old: ChunkVectors | None, new: ChunkVectors | None, from_old) -> None:
        """Build, update or drop the approximate index so that it holds exactly `new`'s rows."""
        import numpy as np

        if new is None or len(new.ids) < self.ann_min_vectors:
            self.approx = None
            return
        try:
            if self.approx is None or old is None:
                self.approx = ann.IvfIndex.build(new.ids, new.matrix)
                return
            removed = np.setdiff1d(old.ids, new.ids[from_old], assume_unique=True)
            self.approx.update(removed, new.ids[~from_old], new.matrix[~from_old])
        except ImportError:
            self.approx = None  # faiss missing: exact scan

    def note_similarity(self, query_vector, chunk_ids) -> dict[int, float]:
        vectors = self._refresh()
        return vectors.note_similarity(query_vector, chunk_ids) if vectors else {}

    def search(self, query_vector, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        import numpy as np

        vectors = self._refresh()
        if vectors is None or limit <= 0:
            return []
        query = np.asarray(query_vector, dtype=np.float32)
        wanted = limit * RESCORE_FACTOR
        if allowed is not None:
            rows = np.flatnonzero(np.isin(vectors.ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed))))
            top, _ = ann.exact_top(vectors.matrix[rows], query, wanted)
            candidates = rows[top]
        elif self.approx is not None:
            ids, _ = self.approx.search(query, wanted)
            candidates = np.searchsorted(vectors.ids, ids)
        else:
            candidates, _ = ann.exact_top(vectors.matrix, query, wanted)
        return self._rescore(vectors, candidates, query, limit)

    def _rescore(self, vectors: ChunkVectors, rows, query, limit: int) -> list[tuple[int, float]]:
        """Exact float32 scores for the candidate rows, best first, `limit` of them.

        Rows that cannot reach the top `limit` by their float16 scores are never read
        (rescore_reachable): the same result as reading all of them, from fewer blob reads.
        """
        import numpy as np

        if not len(rows):
            return []
        rows = rows[rescore_reachable(vectors.matrix[rows], query, limit)]
        hashes = [vectors.hashes[i] for i in rows.tolist()]
        blobs = self.store.vectors_by_hash(self.model, set(hashes))
        scored = []
        for row, h in zip(rows.tolist(), hashes, strict=True):
            blob = blobs.get(h)
            exact = np.frombuffer(blob, dtype=np.float32) if blob else vectors.matrix[row].astype(np.float32)
            scored.append((float(exact @ query), int(vectors.ids[row])))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(cid, score) for score, cid in scored[:limit]]


def rescore_reachable(candidates, query, limit: int):
    """Positions of the float16 `candidates` rows whose exact (float32) score can still be among
    the best `limit`, in their order.

    Each row's exact score lies within `error` of its float16 score (RESCORE_RELATIVE_ERROR of
    the sum of |query x row| products, plus RESCORE_ABSOLUTE_ERROR per unit of |query|). A row
    whose highest possible score is below the `limit`-th best lowest possible score has at least
    `limit` rows certainly above it, so leaving it unread changes neither the set nor the order.
    Non-finite values (a float16 overflow) keep every row.
    """
    import numpy as np

    keep = np.arange(len(candidates))
    if len(candidates) <= limit or limit <= 0:
        return keep
    query = np.asarray(query, dtype=np.float32)
    rows = candidates.astype(np.float32)
    approx = rows @ query
    error = RESCORE_RELATIVE_ERROR * (np.abs(rows) @ np.abs(query)) + RESCORE_ABSOLUTE_ERROR * float(
        np.abs(query).sum())
    if not (np.all(np.isfinite(approx)) and np.all(np.isfinite(error))):
        return keep
    floor = np.partition(approx - error, len(approx) - limit)[len(approx) - limit]
    return keep[approx + error >= floor]


def _fill(matrix, n: int, targets: list[int], picks: list[int], blobs: list[bytes], have):
    """Write one block of blobs into their rows of the float16 matrix (allocated on first use).

    Blocks, not rows: one numpy assignment per LOAD_BLOCK_ROWS vectors instead of one per vector
    (at 100k a row-by-row load spent most of its time in Python), with one block of float32 held
    at a time instead of every vector.
    """
    import numpy as np

    block = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    if matrix is None:
        matrix = np.empty((n, block.shape[1]), dtype=np.float16)
    rows = np.asarray(targets, dtype=np.int64)
    matrix[rows] = block[np.asarray(picks, dtype=np.int64)]
    have[rows] = True
    return matrix


def sqlite_vec_connection(path: Path) -> sqlite3.Connection | None:
    """A read connection with sqlite-vec loaded, or None where the interpreter cannot load it."""
    try:
        import sqlite_vec
    except ImportError:
        return None
    for module_name in ("sqlite3", "pysqlite3"):
        try:
            module = __import__(module_name)
            db = module.connect(str(path), check_same_thread=False)
            db.enable_load_extension(True)
            sqlite_vec.load(db)
            db.enable_load_extension(False)
            return db
        except (AttributeError, ImportError, Exception):  # noqa: BLE001 - any failure: not here
            continue
    return None


class SqliteVecIndex:
    """Exact kNN by sqlite-vec's distance function over the same embedding blobs."""

    name = "sqlite-vec"

    def __init__(self, db, model: str, store: Store):
        self.db, self.model, self.store = db, model, store

    def note_similarity(self, query_vector, chunk_ids) -> dict[int, float]:
        """As NumpyIndex.note_similarity, from the candidates' notes' vectors read on demand."""

        chunk_ids = list(chunk_ids)
        rows = self.store.file_vectors(self.model, chunk_ids)
        return ChunkVectors(rows).note_similarity(query_vector, chunk_ids) if rows else {}

    def search(self, query_vector, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        import numpy as np

        blob = np.asarray(query_vector, dtype=np.float32).tobytes()
        sql = (
            "SELECT c.id, 1 - vec_distance_cosine(e.vector, ?) AS s FROM chunks c JOIN embeddings e "
            "ON e.hash = c.hash AND e.model = ? ORDER BY s DESC LIMIT ?"
        )
        rows = self.db.execute(sql, (blob, self.model, limit * 4 if allowed else limit)).fetchall()
        if allowed is not None:
            rows = [r for r in rows if r[0] in allowed][:limit]
        return [(int(i), float(s)) for i, s in rows]


def open_vector_index(store: Store, model: str, backend: str = "auto"):
    """The store's own index (pgvector) if it has one; else the backend the settings ask for;
    `auto` is numpy (faster here, see the ADR)."""
    own = store.open_vector_index(model)
    if own is not None:
        return own
    if backend == "sqlite-vec":
        db = sqlite_vec_connection(store.path)
        if db is not None:
            return SqliteVecIndex(db, model, store)
    return NumpyIndex(store, model)
