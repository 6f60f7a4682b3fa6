"""The SQLite store's reads for search: FTS5 keywords, chunk rows, filters and counts (a mixin of Store).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from vault_index.engine.stores.rows import ChunkRow, _like_prefix


class SqliteReads:
    """Store's read methods; `self.db` and the generation come from Store."""

    def keyword(self, match: str, limit: int) -> list[tuple[int, float]]:
        """FTS5 bm25 (lower is better in SQLite; we flip the sign so higher is better)."""
        rows = self.db.execute(
            "SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY bm25(chunks_fts) LIMIT ?",
            (match, limit),
        )
        return list(rows)

    def term_doc_count(self, match: str, cap: int) -> int:
        """How many chunks match `match`, counting no further than `cap` (bounded cost)."""
        return self.db.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
            (match, cap),
        ).fetchone()[0]

    def chunk_rows(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        ids = list(ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            # The title as indexed (with aliases, chunks_fts): what coverage and rerank read.
            "SELECT c.id, f.path, t.title, c.heading, c.line_start, c.line_end, c.text, f.status "
            "FROM chunks c JOIN files f ON f.id = c.file_id JOIN chunks_fts t ON t.rowid = c.id "
            f"WHERE c.id IN ({marks})",
            ids,
        )
        return {r[0]: ChunkRow(*r) for r in rows}

    def chunk_texts(self) -> Iterator[tuple[int, str]]:
        """(chunk id, text) of every chunk: the grep baseline's scan."""
        yield from self.db.execute("SELECT id, text FROM chunks")

    def chunks_of_day(self, day: str, limit: int) -> list[tuple[int, str, str]]:
        """(chunk id, path, frontmatter date) of notes that may be about `day` (YYYY-MM-DD): the
        file name begins with it or the frontmatter `date` does; the caller checks exactly."""
        return list(self.db.execute(
            "SELECT c.id, f.path, CAST(json_extract(f.frontmatter, '$.date') AS TEXT) FROM chunks c "
            "JOIN files f ON f.id = c.file_id WHERE f.path LIKE ? ESCAPE '\\' "
            "OR CAST(json_extract(f.frontmatter, '$.date') AS TEXT) LIKE ? ORDER BY f.path, c.ordinal LIMIT ?",
            (f"%/{day}%", f"{day}%", limit),
        ))

    def chunk_ids_matching(
        self, path_prefix: str | None, tags: Iterable[str], status: str | None, collection: str | None = None
    ) -> set[int]:
        """Chunk ids that pass the filters (used only when a filter is given)."""
        where, args = [], []
        if path_prefix:
            where.append("(f.path = ? OR f.path LIKE ? ESCAPE '\\')")
            args += [path_prefix.rstrip("/"), _like_prefix(path_prefix.rstrip("/"))]
        for tag in tags:
            where.append("EXISTS (SELECT 1 FROM json_each(f.tags) WHERE value = ?)")
            args.append(tag.lower().lstrip("#"))
        if status:
            where.append("f.status = ?")
            args.append(status)
        if collection:
            # an index written before NaN was stored as text holds JSON SQLite refuses: skip that row
            where.append("CASE WHEN json_valid(f.frontmatter) THEN json_extract(f.frontmatter, '$.collection') END = ?")
            args.append(collection)
        sql = "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return {i for (i,) in self.db.execute(sql, args)}

    def file_record(self, path: str) -> dict | None:
        row = self.db.execute(
            "SELECT f.path, f.title, f.tags, f.status, f.frontmatter, s.path, f.indexed_at "
            "FROM files f JOIN sources s ON s.id = f.source_id WHERE f.path = ?",
            (path,),
        ).fetchone()
        if not row:
            return None
        return {
            "path": row[0], "title": row[1], "tags": json.loads(row[2] or "[]"), "status": row[3],
            "frontmatter": json.loads(row[4] or "{}"), "source": row[5], "indexed_at": row[6],
        }

    def chunk_count(self) -> int:
        """Chunks in the index, counted once per generation (every keyword and hybrid search asks).

        Trigger: at 1M chunks `SELECT COUNT(*)` scanned the table on every search (15 ms of a
        118 ms hybrid search, ADR 0014). Outcome: one meta lookup; a write from any process bumps
        the generation, so the next call counts again (as PgStore.chunk_count)."""
        generation = self.get_meta("generation", "0")
        if self._chunk_count is None or self._chunk_count[0] != generation:
            self._chunk_count = (generation, self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        return self._chunk_count[1]

    def counts(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "sources": one("SELECT COUNT(*) FROM sources"),
            "files": one("SELECT COUNT(*) FROM files"),
            "chunks": one("SELECT COUNT(*) FROM chunks"),
        }
