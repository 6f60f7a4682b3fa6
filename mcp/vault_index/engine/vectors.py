"""Vector kNN over the stored embeddings: numpy brute force, or sqlite-vec where it loads.

docs/adr/0001-vector-backend.md has the measurements behind the default. numpy is imported
inside functions: the MCP server must answer its handshake before any of this loads.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vault_index.engine.store import Store


class ChunkVectors:
    """Chunk vectors in one float32 matrix (rows in chunk id order) and the notes they belong to.

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
        self.matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
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
                centroid = self.matrix[self._by_file[lo:hi]].sum(axis=0)
                norm = float(np.linalg.norm(centroid))
                per_file[file_id] = float(centroid @ query) / norm if norm else 0.0
            result[cid] = per_file[file_id]
        return result


class NumpyIndex:
    """Exact kNN by one matrix product; reloads when the index generation moves."""

    name = "numpy"

    def __init__(self, store: Store, model: str):
        self.store, self.model = store, model
        self._generation = -1
        self._vectors: ChunkVectors | None = None

    def _refresh(self) -> ChunkVectors | None:
        generation = self.store.generation()
        if generation != self._generation:
            self._vectors = self._load(self._vectors)
            self._generation = generation
        return self._vectors

    def _load(self, old: ChunkVectors | None) -> ChunkVectors | None:
        """The index's vectors now, reusing the rows of `old` whose chunk id and hash still match.

        After an edit only that note's new chunks are read: a full reload read every vector
        (about 1 s at 100k chunks) before the first search after each edit.
        """
        import numpy as np

        keys = self.store.chunk_keys()
        reusable = old is not None and old.hashes is not None and len(old.ids) > 0
        if reusable:
            positions = np.minimum(np.searchsorted(old.ids, [k[0] for k in keys]), len(old.ids) - 1).tolist()
            reuse = [old.ids[p] == cid and old.hashes[p] == h for (cid, _, h), p in zip(keys, positions, strict=True)]
        else:
            positions, reuse = [0] * len(keys), [False] * len(keys)
        fresh = self.store.vectors_by_hash(
            self.model, {k[2] for k, r in zip(keys, reuse, strict=True) if not r} if reusable else None
        )
        chosen = [i for i, k in enumerate(keys) if reuse[i] or k[2] in fresh]
        if not chosen:
            return None
        from_old = np.asarray([reuse[i] for i in chosen], dtype=bool)
        new_rows = [fresh[keys[i][2]] for i in chosen if not reuse[i]]
        dim = old.matrix.shape[1] if reusable else len(new_rows[0]) // 4
        matrix = np.empty((len(chosen), dim), dtype=np.float32)
        if from_old.any():
            matrix[from_old] = old.matrix[[positions[i] for i in chosen if reuse[i]]]
        if new_rows:
            matrix[~from_old] = np.frombuffer(b"".join(new_rows), dtype=np.float32).reshape(len(new_rows), dim)
        ids = np.fromiter((keys[i][0] for i in chosen), dtype=np.int64, count=len(chosen))
        files = np.fromiter((keys[i][1] for i in chosen), dtype=np.int64, count=len(chosen))
        return ChunkVectors.from_arrays(ids, files, matrix, [keys[i][2] for i in chosen])

    def note_similarity(self, query_vector, chunk_ids) -> dict[int, float]:
        vectors = self._refresh()
        return vectors.note_similarity(query_vector, chunk_ids) if vectors else {}

    def search(self, query_vector, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        import numpy as np

        vectors = self._refresh()
        if vectors is None or limit <= 0:
            return []
        scores = vectors.matrix @ np.asarray(query_vector, dtype=np.float32)
        if allowed is not None:
            mask = np.isin(vectors.ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            scores = np.where(mask, scores, -np.inf)
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(vectors.ids[i]), float(scores[i])) for i in top if np.isfinite(scores[i])]


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
    """The backend the settings ask for; `auto` is numpy (faster here, see the ADR)."""
    if backend == "sqlite-vec":
        db = sqlite_vec_connection(store.path)
        if db is not None:
            return SqliteVecIndex(db, model, store)
    return NumpyIndex(store, model)
