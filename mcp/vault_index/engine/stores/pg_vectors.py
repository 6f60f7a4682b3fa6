"""The PostgreSQL store's vectors: the embeddings table (a mixin of PgStore), per-model HNSW
indexes, and PgVectorIndex, kNN in SQL with pgvector.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from vault_index.engine.stores.pg_schema import (
    FILTER_EXACT_MAX,
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH_FACTOR,
    HNSW_EF_SEARCH_FACTOR_EF64,
    HNSW_EF_SEARCH_FACTOR_SMALL,
    HNSW_EF_SEARCH_MAX,
    HNSW_LARGE_AT,
    HNSW_M,
    ITER_BLOCK,
    VECTOR_INDEX_LOCK,
    hnsw_build_memory_mb,
)

if TYPE_CHECKING:
    from vault_index.engine.stores.pg_store import PgStore
from vault_index.engine.stores.pg_sql import _blob, ef_search_for
from vault_index.engine.stores.rows import missing_vector_probe, pending_vectors_sql, source_filter


class PgVectors:
    """PgStore's vector methods; `self.db`, `self.transaction` and `self._numpy` come from PgStore."""

    def chunks_missing_vectors(self, model: str, path: str | None = None,
                               sources: Iterable[int] | None = None) -> list[tuple[str, str, str, str]]:
        where, args = "e.hash IS NULL", [model]
        if path is not None:
            where += " AND f.path = %s"
            args.append(path)
        ids = None if sources is None else list(sources)
        where += source_filter(None if ids is None else len(ids), "%s")
        return [tuple(r) for r in self.db.execute(
            "SELECT c.hash, MIN(c.title), MIN(c.heading), MIN(c.text) FROM chunks c JOIN files f ON f.id = c.file_id "
            f"LEFT JOIN embeddings e ON e.hash = c.hash AND e.model = %s WHERE {where} GROUP BY c.hash ORDER BY c.hash",
            [*args, *(ids or ())],
        )]

    def any_missing_vectors(self, model: str, path: str | None = None, sources: Iterable[int] | None = None) -> bool:
        """Whether any chunk (of `path`, of `sources`, or any) has no vector for `model`: every sync asks."""
        ids = None if sources is None else list(sources)
        args = ((model,) if path is None else (path, model)) + tuple(ids or ())
        return self.db.execute(missing_vector_probe(path is not None, "%s", None if ids is None else len(ids)),
                               args).fetchone() is not None

    def put_vectors(self, model: str, items: Iterable[tuple[str, bytes]]) -> None:
        np = self._numpy()
        rows = [(h, model, np.frombuffer(blob, dtype="<f4")) for h, blob in items]
        with self.transaction() as db:
            if rows:
                with db.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO embeddings(hash, model, vector) VALUES (%s, %s, %s) "
                        "ON CONFLICT (hash, model) DO UPDATE SET vector = EXCLUDED.vector", rows)
            self._bump_generation(db)

    def checkpoint(self) -> None:
        """After a sync that changed something: build the HNSW index of every model that reached
        HNSW_MIN_VECTORS (PostgreSQL has no WAL file of ours to fold back)."""
        for (model,) in self.db.execute("SELECT model FROM embeddings GROUP BY model HAVING COUNT(*) >= %s",
                                        (self.hnsw_min_vectors,)).fetchall():
            self.ensure_vector_index(model)

    def prune_vectors(self) -> int:
        with self.transaction() as db:
            return db.execute(
                "DELETE FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = e.hash)"
            ).rowcount

    def chunk_keys(self) -> list[tuple[int, int, str]]:
        return [tuple(r) for r in self.db.execute("SELECT id, file_id, hash FROM chunks ORDER BY id")]

    def vectors_by_hash(self, model: str, hashes: Iterable[str] | None = None) -> dict[str, bytes]:
        if hashes is None:
            return dict(self.iter_vectors(model))
        self._numpy()
        rows = self.db.execute("SELECT hash, vector FROM embeddings WHERE model = %s AND hash = ANY(%s)",
                               (model, list(hashes)))
        return {h: _blob(v) for h, v in rows}

    def iter_vectors(self, model: str) -> Iterator[tuple[str, bytes]]:
        """Streamed in pages by hash: a full load never holds every vector twice."""
        self._numpy()
        after = ""
        while True:
            rows = self.db.execute("SELECT hash, vector FROM embeddings WHERE model = %s AND hash > %s "
                                   "ORDER BY hash LIMIT %s", (model, after, ITER_BLOCK)).fetchall()
            for h, v in rows:
                yield h, _blob(v)
            if len(rows) < ITER_BLOCK:
                return
            after = rows[-1][0]

    def file_vectors(self, model: str, chunk_ids: Iterable[int]) -> list[tuple[int, int, bytes]]:
        ids = list(chunk_ids)
        if not ids:
            return []
        self._numpy()
        rows = self.db.execute(
            "SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = %s "
            "WHERE c.file_id IN (SELECT file_id FROM chunks WHERE id = ANY(%s)) ORDER BY c.id", (model, ids))
        return [(i, f, _blob(v)) for i, f, v in rows]

    def pending_vectors(self, model: str) -> dict[str, int]:
        """{source root: chunks with no vector for `model`}, sources with none left out."""
        return dict(self.db.execute(pending_vectors_sql("%s"), (model,)).fetchall())

    def vector_count(self, model: str) -> int:
        return self.db.execute(
            "SELECT COUNT(*) FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = %s", (model,)
        ).fetchone()[0]

    def model_vectors(self, model: str) -> int:
        """Stored vectors of `model` (by hash; what the HNSW threshold counts)."""
        return self.db.execute("SELECT COUNT(*) FROM embeddings WHERE model = %s", (model,)).fetchone()[0]

    def vector_index_name(self, model: str) -> str:
        import hashlib

        return "embeddings_hnsw_" + hashlib.sha256(model.encode("utf-8")).hexdigest()[:16]

    def vector_dims(self, model: str) -> int | None:
        """The dimension of `model`'s vectors (a model's never changes: remembered once known)."""
        known = self.__dict__.setdefault("_dims", {})
        if model not in known:
            row = self.db.execute("SELECT vector_dims(vector) FROM embeddings WHERE model = %s LIMIT 1",
                                  (model,)).fetchone()
            if not row:
                return None
            known[model] = row[0]
        return known[model]

    def vector_index_bytes(self, model: str) -> int | None:
        """On-disk size of `model`'s HNSW index, None without one (bench, status)."""
        row = self.db.execute("SELECT pg_relation_size(c.oid) FROM pg_class c WHERE c.relname = %s",
                              (self.vector_index_name(model),)).fetchone()
        return row[0] if row else None

    def has_vector_index(self, model: str) -> bool:
        """Whether `model`'s index is built; once seen, remembered with its search factor (a search per
        round trip less; were it dropped, the same query still answers, by a scan)."""
        built = self.__dict__.setdefault("_indexed", {})
        if model not in built:
            options = self._index_options(model)
            if options is not None:
                ef_construction = int(dict(o.split("=", 1) for o in options).get("ef_construction", 64))
                built[model] = (HNSW_EF_SEARCH_FACTOR if ef_construction >= HNSW_EF_CONSTRUCTION
                                else HNSW_EF_SEARCH_FACTOR_EF64)
        return model in built

    def vector_search_factor(self, model: str) -> int:
        """ef_search per vector asked for at HNSW_LARGE_AT chunks and above, by the ef_construction
        `model`'s index was built with: an index of pgvector's 64 needs twice the list."""
        return self._indexed[model] if self.has_vector_index(model) else HNSW_EF_SEARCH_FACTOR_EF64

    def _index_options(self, model: str) -> list[str] | None:
        """The valid index's build options (m=.., ef_construction=..), None without a valid index."""
        row = self.db.execute(
            "SELECT c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND i.indisvalid", (self.vector_index_name(model),)).fetchone()
        return None if row is None else list(row[0] or [])

    def ensure_vector_index(self, model: str) -> bool:
        """Build the HNSW (cosine) partial index of `model`'s vectors if missing; True if it exists after."""
        dims = self.vector_dims(model)
        if dims is None:
            return False
        self.db.execute("SELECT pg_advisory_lock(%s)", (VECTOR_INDEX_LOCK,))
        try:
            if self._index_options(model) is None:
                self.db.execute(sql.SQL("SET maintenance_work_mem = {}").format(
                    sql.Literal(f"{hnsw_build_memory_mb(self.model_vectors(model), dims)}MB")))
                self.db.execute(sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {name} ON embeddings USING hnsw ((vector::vector({dims})) "
                    "vector_cosine_ops) WITH (m = {m}, ef_construction = {ef}) WHERE model = {model}"
                ).format(name=sql.Identifier(self.vector_index_name(model)), dims=sql.Literal(dims),
                         m=sql.Literal(HNSW_M), ef=sql.Literal(HNSW_EF_CONSTRUCTION), model=sql.Literal(model)))
                self.db.execute("RESET maintenance_work_mem")
                self.db.execute("ANALYZE embeddings")
        finally:
            self.db.execute("SELECT pg_advisory_unlock(%s)", (VECTOR_INDEX_LOCK,))
        return True



class PgVectorIndex:
    """kNN in SQL with pgvector: exact (ORDER BY cosine distance), or through the model's HNSW
    index once it exists; filters (`allowed`) are applied in SQL before the limit, exactly."""

    name = "pgvector"

    def __init__(self, store: PgStore, model: str):
        self.store, self.model = store, model

    def search(self, query_vector, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        if limit <= 0 or (allowed is not None and not allowed):
            return []
        np = self.store._numpy()
        query = np.asarray(query_vector, dtype=np.float32)
        if allowed is not None and len(allowed) <= FILTER_EXACT_MAX or not self.store.has_vector_index(self.model):
            return self.exact(query, limit, allowed)
        if allowed is None:
            return self._approximate(query, limit)
        # A broad filter: the index's nearest, filtered in the same query; exact when too few pass.
        found = self._approximate(query, limit, allowed)
        return found if len(found) >= limit else self.exact(query, limit, allowed)

    def exact(self, query_vector, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        """Every vector of the model compared (no index): below the threshold, with a filter, and
        the reference the bench measures HNSW's recall against."""
        np = self.store._numpy()
        query = np.asarray(query_vector, dtype=np.float32)
        db = self.store.db
        where, args = "", [query, self.model]
        if allowed is not None:
            where, args = "WHERE c.id = ANY(%s)", [*args, list(allowed)]
        rows = db.execute(
            "SELECT c.id, e.vector <=> %s AS d FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = %s "
            f"{where} ORDER BY d, c.id LIMIT %s", (*args, limit)).fetchall()
        return _scores(rows, limit)

    def _approximate(self, query, limit: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        """The index's nearest vectors (by hash), then the chunks that hold them (those `allowed`,
        in the same query), nearest first."""
        wanted = limit * 2  # a vector shared by several chunks, or not yet pruned, takes one slot
        if allowed is not None:  # read deeper, as far as the index's search list reaches
            wanted = min(HNSW_EF_SEARCH_MAX, wanted * max(1, self.store.chunk_count() // max(1, len(allowed))))
        return _scores(self._nearest(query, wanted, allowed=allowed), limit)

    def _nearest(self, query, wanted: int, explain: bool = False, allowed: set[int] | None = None):
        """(chunk id, distance) of the chunks holding the `wanted` nearest vectors through the index,
        nearest first (or the plan); with `allowed`, only those chunks, in the same query.

        The model and dimension are literals, not parameters: the planner must see that the
        query's WHERE matches the partial index's predicate and its ORDER BY the index expression.
        Sequential scans are off inside: with the index built, a small or unanalysed table must not
        make the planner sort every vector instead. One pipeline: the settings, the query and the
        commit cost one round trip.
        """
        db, dims = self.store.db, self.store.vector_dims(self.model)
        where, args = ("WHERE c.id = ANY(%s)", [list(allowed)]) if allowed is not None else ("", [])
        statement = sql.SQL(
            "SELECT c.id, e.d FROM (SELECT hash, vector::vector({dims}) <=> %s AS d FROM embeddings "
            "WHERE model = {model} ORDER BY vector::vector({dims}) <=> %s LIMIT %s) e "
            "JOIN chunks c ON c.hash = e.hash " + where + " ORDER BY e.d, c.id"
        ).format(dims=sql.Literal(dims), model=sql.Literal(self.model))
        args = (query, query, wanted, *args)
        large = ef_search_for(wanted, self.store.vector_search_factor(self.model))  # read once a store
        with (db.pipeline() if psycopg.Pipeline.is_supported() else nullcontext()), db.transaction():
            # the index's size picks the factor, read in the same round trip (keyword_stats)
            db.execute("SELECT set_config('hnsw.ef_search', (CASE WHEN chunks >= %s THEN %s ELSE %s END)::text, true) "
                       "FROM keyword_stats", (HNSW_LARGE_AT, large, ef_search_for(wanted, HNSW_EF_SEARCH_FACTOR_SMALL)))
            db.execute("SET LOCAL enable_seqscan = off")
            cursor = db.execute((sql.SQL("EXPLAIN ") + statement) if explain else statement, args)
        if explain:
            return "\n".join(r[0] for r in cursor.fetchall())
        return cursor.fetchall()

    def plan(self, query_vector, limit: int = 10) -> str:
        """The EXPLAIN of the approximate query (tests and bench check the index is used)."""
        np = self.store._numpy()
        return self._nearest(np.asarray(query_vector, dtype=np.float32), limit * 2, explain=True)

    def note_similarity(self, query_vector, chunk_ids) -> dict[int, float]:
        """Cosine between the query and the centroid of each chunk's note (chunks with a vector only)."""
        ids = list(chunk_ids)
        if not ids:
            return {}
        np = self.store._numpy()
        query = np.asarray(query_vector, dtype=np.float32)
        rows = self.store.db.execute(
            "WITH wanted AS (SELECT c.id, c.file_id FROM chunks c JOIN embeddings e ON e.hash = c.hash "
            "AND e.model = %s WHERE c.id = ANY(%s)), "
            "centroid AS (SELECT c.file_id, AVG(e.vector) AS v FROM chunks c JOIN embeddings e ON e.hash = c.hash "
            "AND e.model = %s WHERE c.file_id IN (SELECT file_id FROM wanted) GROUP BY c.file_id) "
            "SELECT w.id, 1 - (t.v <=> %s) FROM wanted w JOIN centroid t ON t.file_id = w.file_id",
            (self.model, ids, self.model, query)).fetchall()
        return {cid: (0.0 if s is None or math.isnan(s) else float(s)) for cid, s in rows}


def _scores(rows, limit: int) -> list[tuple[int, float]]:
    """(chunk id, cosine) from (chunk id, cosine distance) rows; a zero vector (NaN) scores 0."""
    out = [(int(cid), 0.0 if d is None or math.isnan(d) else 1.0 - float(d)) for cid, d in rows]
    return out[:limit]
