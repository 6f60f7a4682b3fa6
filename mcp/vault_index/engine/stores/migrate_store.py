"""`vault-index migrate --to postgresql://...`: copy a SQLite index into an empty PostgreSQL one.

Everything is copied as stored, ids included: sources (with names and checkouts, each checkout's
copies and the tombstones of removed notes: ADR 0019), files, chunks (with the title
as indexed, aliases and all), every model's vectors (no embedder runs), the link graph, problems
and meta. One transaction on the target: a copy that fails or is killed leaves it empty, and a
target that already holds an index is refused (ADR 0017).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable

from vault_index.engine.stores.pg_keywords import COLUMN_SEP, TERM_SEP, chunks_stored
from vault_index.engine.stores.pg_sql import _as_text, _clean
from vault_index.engine.stores.pg_store import PgStore
from vault_index.engine.stores.store import Store
from vault_index.errors import UsageError

BATCH = 2000  # rows read from SQLite per fetch


def _files(rows):
    """SQLite files rows as the PostgreSQL table holds them (tags an array, collection and date
    taken out of the frontmatter as pg_store.replace_file does)."""
    for fid, sid, path, mtime, size, digest, title, tags, status, frontmatter, indexed_at in rows:
        try:
            data = json.loads(frontmatter or "{}")
        except ValueError:  # an index written before NaN was stored as text: kept, not filtered on
            data = {}
        collection = data.get("collection") if isinstance(data, dict) else None
        day = data.get("date") if isinstance(data, dict) else None
        yield (fid, sid, path, mtime, size, digest, _clean(title), [_clean(t) for t in json.loads(tags or "[]")],
               _clean(status), frontmatter, _clean(collection) if isinstance(collection, str) else None,
               _clean(_as_text(day)), indexed_at)


class _Keywords:
    """FTS5's terms of the copied chunks (pg_keywords): each chunk's terms column made in Python as
    the chunks stream through; the postings, document counts and totals then made from that
    column by PostgreSQL itself (a term's count per chunk is a GROUP BY there, not a Python loop),
    the postings key built after the load rather than row by row. VACUUM after the commit marks
    the postings all-visible, so searches read the postings index alone (copy_index)."""

    def prepare(self, db) -> None:
        db.execute("ALTER TABLE postings DROP CONSTRAINT postings_pkey")

    def chunk_rows(self, rows):
        rows = [tuple(_clean(v) for v in r) for r in rows]
        for r, (stored, length) in zip(rows, chunks_stored([(r[8], r[3], r[6]) for r in rows]), strict=True):
            yield (*r, stored, length)

    def finish(self, db) -> int:
        db.execute("INSERT INTO postings(term, chunk_id, tf, length) SELECT t.term, c.id, t.tf, c.length "
                   "FROM chunks c, "
                   "LATERAL (SELECT term, COUNT(*) AS tf FROM unnest(string_to_array(translate(c.terms, %s, %s), %s)) "
                   "AS term WHERE term <> '' GROUP BY term) t", (COLUMN_SEP, TERM_SEP, TERM_SEP))
        db.execute("SET LOCAL maintenance_work_mem = '1GB'")
        db.execute("ALTER TABLE postings ADD CONSTRAINT postings_pkey PRIMARY KEY (term, chunk_id) "
                   "INCLUDE (tf, length)")
        db.execute("INSERT INTO term_stats(term, df) SELECT term, COUNT(*) FROM postings GROUP BY term")
        db.execute("UPDATE keyword_stats SET chunks = (SELECT COUNT(*) FROM chunks), "
                   "tokens = (SELECT COALESCE(SUM(length), 0) FROM chunks) WHERE id = 1")
        return db.execute("SELECT COUNT(*) FROM postings").fetchone()[0]


def copy_index(source: Store, target: PgStore, progress: Callable[[str, int], None] | None = None) -> dict:
    """Copy `source` into the empty `target`; returns what was copied (counts, vectors per model)."""
    counts = target.counts()
    if counts["sources"] or counts["files"]:
        raise UsageError(f"{target.location} already holds an index ({counts['sources']} sources, "
                         f"{counts['files']} files); migrate copies into an empty database only")
    src = source.db
    copied: dict = {}
    keywords = _Keywords()
    tables = (
        ("sources", "id, path, name, added_at", "SELECT id, path, name, added_at FROM sources", None),
        ("checkouts", "id, source_id, root, added_at", "SELECT id, source_id, root, added_at FROM checkouts", None),
        ("copies", "checkout_id, path, mtime, size, hash, gone",
         "SELECT checkout_id, path, mtime, size, hash, gone FROM copies", None),
        ("removed_notes", "path, source_id, mtime, hash, removed_at",
         "SELECT path, source_id, mtime, hash, removed_at FROM removed_notes", None),
        ("files", "id, source_id, path, mtime, size, hash, title, tags, status, frontmatter, collection, fm_date, "
         "indexed_at", "SELECT id, source_id, path, mtime, size, hash, title, tags, status, frontmatter, "
         "indexed_at FROM files", _files),
        ("chunks", "id, file_id, ordinal, heading, line_start, line_end, text, hash, title, terms, length",
         "SELECT c.id, c.file_id, c.ordinal, c.heading, c.line_start, c.line_end, c.text, c.hash, t.title "
         "FROM chunks c JOIN chunks_fts t ON t.rowid = c.id ORDER BY c.id", keywords.chunk_rows),
        ("edges", "id, source, target, raw, fragment, kind, line, status, name_key, file_key, root",
         "SELECT id, source, target, raw, fragment, kind, line, status, name_key, file_key, root FROM edges", None),
        ("note_names", "path, kind, key", "SELECT path, kind, key FROM note_names", None),
        ("problems", "path, message, seen_at", "SELECT path, message, seen_at FROM problems", None),
        ("meta", "key, value", "SELECT key, value FROM meta", None),
    )
    with target.transaction() as db:
        keywords.prepare(db)
        for table, columns, query, convert in tables:
            n = 0
            with db.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                cursor = src.execute(query)
                while rows := cursor.fetchmany(BATCH):
                    for row in (convert(rows) if convert else rows):
                        copy.write_row(row)
                    n += len(rows)
            copied[table] = n
            if progress:
                progress(table, n)
        np = target._numpy()
        vectors: Counter = Counter()
        with db.cursor().copy("COPY embeddings (hash, model, vector) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "vector"])
            cursor = src.execute("SELECT hash, model, vector FROM embeddings")
            while rows := cursor.fetchmany(BATCH):
                for h, model, blob in rows:
                    copy.write_row((h, model, np.frombuffer(blob, dtype="<f4")))
                    vectors[model] += 1
        copied["postings"] = keywords.finish(db)
        copied["vectors"] = dict(vectors)
        if progress:
            progress("vectors", sum(vectors.values()))
        target._bump_generation(db)  # past the copied meta's: cached counts of this target are stale
        for table in ("sources", "checkouts", "files", "chunks", "edges"):  # new rows continue after the copied ids
            db.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE(MAX(id), 0) + 1, false) "
                       f"FROM {table}")
    target.db.execute("VACUUM (ANALYZE) postings")  # all-visible: index-only scans (_Keywords)
    target.db.execute("ANALYZE")
    target.checkpoint()  # the HNSW index of any model at or above the threshold
    return copied


def describe(copied: dict, source: str, target: str) -> str:
    vectors = ", ".join(f"{n} of {model}" for model, n in copied["vectors"].items()) or "none"
    return (f"migrate: copied {copied['sources']} sources, {copied['files']} files, {copied['chunks']} chunks, "
            f"{copied['edges']} links, {copied['problems']} problems and vectors ({vectors}) "
            f"from {source} to {target}; nothing was re-embedded. "
            f"Set VAULT_INDEX_URL={target} to use it.")
