"""Vector kNN over the stored embeddings: numpy brute force, or sqlite-vec where it loads.

docs/adr/0001-vector-backend.md has the measurements behind the default. numpy is imported
inside functions: the MCP server must answer its handshake before any of this loads.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vault_index.engine.store import Store


def note_centroids(rows: list[tuple[int, int, bytes]]):
    """(chunk ids, file ids, chunk matrix, {file id: unit-length mean of its chunk vectors})."""
    import numpy as np

    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    files = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    unique, inverse = np.unique(files, return_inverse=True)
    sums = np.zeros((len(unique), matrix.shape[1]), dtype=np.float32)
    np.add.at(sums, inverse, matrix)
    sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return ids, files, matrix, dict(zip(unique.tolist(), sums, strict=True))


class NumpyIndex:
    """All vectors of one model in one float32 matrix, reloaded when the index generation moves.

    Also holds one centroid per note (the normalised mean of its chunk vectors): the note-level
    evidence that fusion adds to each chunk's own cosine.
    """

    name = "numpy"

    def __init__(self, store: Store, model: str):
        self.store, self.model = store, model
        self._generation = -1
        self._ids = self._files = self._matrix = None
        self._centroids: dict = {}
        self._file_of: dict[int, int] = {}

    def _refresh(self) -> None:
        import numpy as np

        generation = self.store.generation()
        if generation == self._generation:
            return
        rows = self.store.vector_rows(self.model)
        if rows:
            self._ids, self._files, self._matrix, self._centroids = note_centroids(rows)
            self._file_of = dict(zip(self._ids.tolist(), self._files.tolist(), strict=True))
        else:
            self._ids, self._matrix, self._centroids, self._file_of = np.zeros(0, dtype=np.int64), None, {}, {}
        self._generation = generation

    def note_similarity(self, query_vector, chunk_ids) -> dict[int, float]:
        """Cosine between the query and the centroid of each chunk's note."""
        import numpy as np

        self._refresh()
        query = np.asarray(query_vector, dtype=np.float32)
        result = {}
        for cid in chunk_ids:
            file_id = self._file_of.get(cid)
            if file_id is not None:
                result[cid] = float(self._centroids[file_id] @ query)
        return result

    def search(self, query_vector, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        import numpy as np

        self._refresh()
        if self._matrix is None or limit <= 0:
            return []
        scores = self._matrix @ np.asarray(query_vector, dtype=np.float32)
        if allowed is not None:
            mask = np.isin(self._ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            scores = np.where(mask, scores, -np.inf)
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(self._ids[i]), float(scores[i])) for i in top if np.isfinite(scores[i])]


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
        import numpy as np

        rows = self.store.file_vectors(self.model, chunk_ids)
        if not rows:
            return {}
        ids, files, _, centroids = note_centroids(rows)
        file_of = dict(zip(ids.tolist(), files.tolist(), strict=True))
        query = np.asarray(query_vector, dtype=np.float32)
        return {cid: float(centroids[file_of[cid]] @ query) for cid in chunk_ids if cid in file_of}

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
