"""The PostgreSQL store's reads for search: chunk rows, filters and counts (a mixin of PgStore;
the keyword side is engine/stores/pg_keywords).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from vault_index.engine.stores.rows import ChunkRow, _like_prefix


class PgReads:
    """PgStore's read methods; `self.db` and the generation come from PgStore."""

    def chunk_rows(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        ids = list(ids)
        if not ids:
            return {}
        rows = self.db.execute(
            "SELECT c.id, f.path, c.title, c.heading, c.line_start, c.line_end, c.text, f.status "
            "FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id = ANY(%s)", (ids,))
        return {r[0]: ChunkRow(*r) for r in rows}

    def chunk_texts(self) -> Iterator[tuple[int, str]]:
        yield from self.db.execute("SELECT id, text FROM chunks").fetchall()

    def chunks_of_day(self, day: str, limit: int) -> list[tuple[int, str, str]]:
        return [tuple(r) for r in self.db.execute(
            "SELECT c.id, f.path, f.fm_date FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path LIKE %s ESCAPE '\\' OR f.fm_date LIKE %s ORDER BY f.path, c.ordinal LIMIT %s",
            (f"%/{day}%", f"{day}%", limit))]

    def chunk_ids_matching(
        self, path_prefix: str | None, tags: Iterable[str], status: str | None, collection: str | None = None
    ) -> set[int]:
        """As the SQLite store: the prefix compares as SQLite's LIKE does (ASCII case folded,
        services/search/search.py re-checks each hit's exact path)."""
        where, args = [], []
        if path_prefix:
            where.append("(f.path = %s OR f.path ILIKE %s ESCAPE '\\')")
            args += [path_prefix.rstrip("/"), _like_prefix(path_prefix.rstrip("/"))]
        for tag in tags:
            where.append("%s = ANY(f.tags)")
            args.append(tag.lower().lstrip("#"))
        if status:
            where.append("f.status = %s")
            args.append(status)
        if collection:
            where.append("f.collection = %s")
            args.append(collection)
        statement = "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id"
        if where:
            statement += " WHERE " + " AND ".join(where)
        return {i for (i,) in self.db.execute(statement, args)}

    def file_record(self, path: str) -> dict | None:
        row = self.db.execute(
            "SELECT f.path, f.title, f.tags, f.status, f.frontmatter, s.path, f.indexed_at "
            "FROM files f JOIN sources s ON s.id = f.source_id WHERE f.path = %s", (path,)).fetchone()
        if not row:
            return None
        return {
            "path": row[0], "title": row[1], "tags": list(row[2] or []), "status": row[3],
            "frontmatter": json.loads(row[4] or "{}"), "source": row[5], "indexed_at": row[6],
        }

    def counts(self) -> dict[str, int]:
        one = lambda statement: self.db.execute(statement).fetchone()[0]  # noqa: E731
        return {
            "sources": one("SELECT COUNT(*) FROM sources"),
            "files": one("SELECT COUNT(*) FROM files"),
            "chunks": one("SELECT COUNT(*) FROM chunks"),
        }
