"""The SQLite store's embeddings table: vectors keyed by chunk hash and model (a mixin of Store).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

from vault_index.engine.stores.rows import missing_vector_probe, pending_vectors_sql, source_filter


class SqliteVectors:
    """Store's vector methods; `self.db` and `self.transaction` come from Store."""

    def chunks_missing_vectors(self, model: str, path: str | None = None,
                               sources: Iterable[int] | None = None) -> list[tuple[str, str, str, str]]:
        """(hash, title, heading, text) of every distinct chunk with no vector for `model`.

        With `path`, only that file's chunks: a single-file re-index must not scan the whole
        index (bench, 100k chunks: about 1 s for the full scan). With `sources` (source ids),
        only theirs: a sync embeds what it synced, not another project's pending chunks.
        """
        ids = None if sources is None else list(sources)
        narrow = source_filter(None if ids is None else len(ids), "?")
        # The title as indexed (with aliases, chunks_fts), as chunk_note hashed it.
        columns = "c.hash, MIN(t.title), MIN(c.heading), MIN(c.text)"
        if path is None:
            # CROSS JOIN keeps chunks the outer loop, so FTS5 is read only for chunks that miss a
            # vector (the planner scanned chunks_fts first: 0.51 against 0.25 s at 100k chunks)
            return list(self.db.execute(
                f"SELECT {columns} FROM chunks c CROSS JOIN files f ON f.id = c.file_id "
                "CROSS JOIN chunks_fts t ON t.rowid = c.id WHERE NOT EXISTS "
                f"(SELECT 1 FROM embeddings e WHERE e.hash = c.hash AND e.model = ?){narrow} GROUP BY c.hash",
                (model, *(ids or ()))))
        return list(self.db.execute(
            f"SELECT {columns} FROM chunks c JOIN files f ON f.id = c.file_id JOIN chunks_fts t ON t.rowid = c.id "
            f"LEFT JOIN embeddings e ON e.hash = c.hash AND e.model = ? WHERE e.hash IS NULL AND f.path = ?{narrow} "
            "GROUP BY c.hash", (model, path, *(ids or ()))))

    def any_missing_vectors(self, model: str, path: str | None = None, sources: Iterable[int] | None = None) -> bool:
        """Whether any chunk (of `path`, of `sources`, or any) has no vector for `model`: every sync asks."""
        ids = None if sources is None else list(sources)
        args = ((model,) if path is None else (path, model)) + tuple(ids or ())
        probe = missing_vector_probe(path is not None, "?", None if ids is None else len(ids))
        return self.db.execute(probe, args).fetchone() is not None

    def put_vectors(self, model: str, items: Iterable[tuple[str, bytes]]) -> None:
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO embeddings(hash, model, vector) VALUES (?, ?, ?)",
                ((h, model, blob) for h, blob in items),
            )
            self.bump_generation(db)

    def checkpoint(self) -> None:
        """Fold the WAL back into the index after a big sync so it does not stay hundreds of MB."""
        if self.read_only:
            return
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:
            pass  # another process is reading; the next checkpoint will do it

    def prune_vectors(self) -> int:
        """Drop vectors no chunk uses any more (any model). Kept: vectors of live chunks."""
        with self.transaction() as db:
            # by rowid from the (hash, model) index: a plain DELETE ... WHERE hash scanned the
            # table, vector blobs and all (0.13 against 0.08 s at 100k chunks, nothing to drop)
            return db.execute(
                "DELETE FROM embeddings WHERE id IN "
                "(SELECT id FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks))"
            ).rowcount

    def chunk_keys(self) -> list[tuple[int, int, str]]:
        """(chunk id, file id, chunk hash) of every chunk, by id: what a vector cache keys on."""
        return list(self.db.execute("SELECT id, file_id, hash FROM chunks ORDER BY id"))

    def vectors_by_hash(self, model: str, hashes: Iterable[str] | None = None) -> dict[str, bytes]:
        """Vector blobs of `model`, all of them or those of `hashes`."""
        if hashes is None:
            return dict(self.db.execute("SELECT hash, vector FROM embeddings WHERE model = ?", (model,)))
        wanted, found = list(hashes), {}
        for start in range(0, len(wanted), 500):  # stay under SQLite's bound-parameter limit
            part = wanted[start : start + 500]
            found.update(self.db.execute(
                f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({','.join('?' * len(part))})",
                (model, *part),
            ))
        return found

    def iter_vectors(self, model: str) -> Iterator[tuple[str, bytes]]:
        """(hash, blob) of every vector of `model`, streamed: a full load never holds them all twice."""
        yield from self.db.execute("SELECT hash, vector FROM embeddings WHERE model = ?", (model,))

    def vector_rows(self, model: str) -> list[tuple[int, int, bytes]]:
        """(chunk id, file id, vector blob) of every chunk with a vector for `model`.

        Two sequential scans joined in Python: the SQL join looked up 100k hashes at random and
        took 2.4 s at 100k chunks, against under 1 s this way.
        """
        vectors = self.vectors_by_hash(model)
        return [(cid, fid, vectors[h]) for cid, fid, h in self.chunk_keys() if h in vectors]

    def file_vectors(self, model: str, chunk_ids: Iterable[int]) -> list[tuple[int, int, bytes]]:
        """(chunk id, file id, blob) of every chunk in the files that hold `chunk_ids`."""
        ids = list(chunk_ids)
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        return list(
            self.db.execute(
                "SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e "
                "ON e.hash = c.hash AND e.model = ? WHERE c.file_id IN "
                f"(SELECT file_id FROM chunks WHERE id IN ({marks})) ORDER BY c.id",
                (model, *ids),
            )
        )

    def pending_vectors(self, model: str) -> dict[str, int]:
        """{source root: chunks with no vector for `model`}, sources with none left out."""
        return dict(self.db.execute(pending_vectors_sql("?"), (model,)).fetchall())

    def vector_count(self, model: str) -> int:
        return self.db.execute(
            "SELECT COUNT(*) FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = ?",
            (model,),
        ).fetchone()[0]
