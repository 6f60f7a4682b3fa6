"""The index in PostgreSQL with pgvector: the same contract as the SQLite file (engine/stores/store_contract).

Chosen by VAULT_INDEX_URL=postgresql://... (docs/adr/0017-postgresql-backend.md, docs/postgres.md).
Tables mirror the SQLite ones and are keyed the same way: files by path, chunks by id with their
content hash, vectors by (chunk hash, model fingerprint), so machines indexing the same notes share
vectors. Keywords: SQLite FTS5's own terms, postings and counts kept with each write, and FTS5's
bm25 (engine/stores/pg_keywords, ADR 0028), so both backends rank alike. Vectors: pgvector,
exact below HNSW_MIN_VECTORS of a model, an HNSW (cosine) partial index per model above it.

Every write transaction takes one advisory lock first (WRITE_LOCK), as SQLite's BEGIN IMMEDIATE
takes the file's write lock: several indexers on one database never interleave a file's swap or
the link graph's re-resolution. Readers never wait for it.

Imports: psycopg loads with this module (only engine/stores/store_contract.open_store imports it, when
VAULT_INDEX_URL names PostgreSQL); numpy and pgvector load at the first vector call (_numpy), so
the MCP server's start-up status (sources, counts) does not pay for them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from vault_index.engine.files import checkouts
from vault_index.engine.parsing import link_index
from vault_index.engine.parsing.parse import alias_title
from vault_index.engine.stores import rows as sql_rows
from vault_index.engine.stores.pg_keywords import PgKeywords, add_postings, chunks_terms, remove_postings
from vault_index.engine.stores.pg_reads import PgReads
from vault_index.engine.stores.pg_schema import EMBED_LOCK, HNSW_MIN_VECTORS, MIGRATE_LOCK, MIGRATIONS, WRITE_LOCK
from vault_index.engine.stores.pg_sql import _AdvisoryLock, _as_text, _clean, _Qmark
from vault_index.engine.stores.pg_vectors import PgVectorIndex, PgVectors
from vault_index.engine.stores.rows import BUSY_TIMEOUT_S, LINK_QUERIES, FileState, _finite, _like_prefix
from vault_index.engine.stores.urls import redact
from vault_index.errors import IndexBusyError, IndexUnavailableError, NotFoundError


class PgStore(PgKeywords, PgReads, PgVectors):
    """A connection to the index database. One per process and use case; not shared across threads."""

    kind = "postgresql"
    database_errors: tuple[type[BaseException], ...] = (psycopg.OperationalError, psycopg.InterfaceError)
    vector_backend: str | None = "pgvector"

    def __init__(self, url: str, busy_timeout: float = BUSY_TIMEOUT_S, hnsw_min_vectors: int = HNSW_MIN_VECTORS):
        self.url, self.location = url, redact(url)
        self.busy_timeout = busy_timeout
        self.hnsw_min_vectors = hnsw_min_vectors
        self.read_only: str | None = None
        self.notices: list[str] = []
        self.recovered_from: Path | None = None
        try:
            self.db = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(busy_timeout)))
        except psycopg.Error as exc:
            raise IndexUnavailableError(
                f"cannot reach the PostgreSQL index at {self.location} ({' '.join(str(exc).split())}); "
                "check VAULT_INDEX_URL and that the server runs"
            ) from exc
        self.db.execute("SET client_min_messages = warning")  # "query contains only stop words" notices
        self._migrate()
        self._vector_types = False

    def _numpy(self):
        """numpy, with pgvector's types registered on the connection (vectors in and out as arrays)."""
        import numpy as np

        if not self._vector_types:
            from pgvector.psycopg import register_vector

            register_vector(self.db)
            self._vector_types = True
        return np

    def _migrate(self) -> None:
        try:
            self.db.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
        except psycopg.Error as exc:
            raise IndexUnavailableError(f"cannot lock the PostgreSQL index at {self.location}: {exc}") from exc
        try:
            self.db.execute("CREATE TABLE IF NOT EXISTS schema_migrations("
                            "number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION)")
            done = {n for (n,) in self.db.execute("SELECT number FROM schema_migrations")}
            if done and max(done) > len(MIGRATIONS):
                raise IndexUnavailableError(
                    f"the PostgreSQL index at {self.location} has schema version {max(done)}, newer than this "
                    f"vault-index knows ({len(MIGRATIONS)}); upgrade vault-index"
                )
            for number, migration in enumerate(MIGRATIONS, start=1):
                if number in done:
                    continue
                try:
                    with self.db.transaction():
                        migration(self.db)
                        self.db.execute("INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                                        (number, migration.__name__, time.time()))
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise IndexUnavailableError(
                        f"migration {migration.__name__} on {self.location} needs a privilege this user lacks "
                        f"({exc}); the database owner can run `CREATE EXTENSION vector` once, then retry"
                    ) from exc
        finally:
            self.db.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))

    def schema_version(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(number), 0) FROM schema_migrations").fetchone()[0]

    def recovery_notice(self) -> str | None:
        return None  # the server owns durability; nothing is rebuilt behind the person's back

    def close(self) -> None:
        self.db.close()

    def size_bytes(self) -> int:
        return self.db.execute("SELECT pg_database_size(current_database())").fetchone()[0]

    def embedding_lock(self) -> _AdvisoryLock:
        return _AdvisoryLock(self.db, EMBED_LOCK)

    def open_vector_index(self, model: str) -> PgVectorIndex:
        return PgVectorIndex(self, model)

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        try:
            with self.db.transaction():
                self.db.execute(f"SET LOCAL lock_timeout = {int(self.busy_timeout * 1000)}")
                self.db.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield self.db
        except psycopg.errors.LockNotAvailable as exc:
            raise IndexBusyError(
                f"index {self.location} stayed locked by another writer for {self.busy_timeout:g} s; "
                "try again when it has finished"
            ) from exc

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Each transaction commits on its own here (a server round trip each, not a file's WAL)."""
        yield

    # --- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str, default: str = "") -> str:
        row = self.db.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, db, key: str, value: str) -> None:
        db.execute("INSERT INTO meta(key, value) VALUES (%s, %s) "
                   "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (key, value))

    def generation(self) -> int:
        return int(self.get_meta("generation", "0"))

    def _bump_generation(self, db) -> None:
        db.execute("INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT (key) "
                   "DO UPDATE SET value = (meta.value::bigint + 1)::text")

    # --- sources ----------------------------------------------------------------------------

    def sources(self) -> list[tuple[int, str]]:
        return [tuple(r) for r in self.db.execute("SELECT id, path FROM sources ORDER BY path")]

    def source_names(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT name, path FROM sources ORDER BY name").fetchall())

    def source_root(self, name: str) -> str:
        names = self.source_names()
        if name not in names:
            raise NotFoundError(f"no source is named {name!r}; sources: {', '.join(names) or '(none)'}")
        return names[name]

    def source_stats(self, model: str = "") -> list[dict]:
        return sql_rows.source_stat_rows(_Qmark(self.db).execute(sql_rows.SOURCE_STATS, (model,)).fetchall())

    def file_stats(self, model: str = "") -> list[dict]:
        return sql_rows.file_stat_rows(_Qmark(self.db).execute(sql_rows.FILE_STATS, (model,)).fetchall())

    def checkouts(self) -> list[tuple[int, int, str]]:
        return checkouts.checkout_rows(_Qmark(self.db))

    def add_source(self, path: str, name: str | None = None, checkout: bool = False, scope: str = "") -> int:
        with self.transaction() as db:
            known = db.execute("SELECT 1 FROM checkouts WHERE root = %s", (path,)).fetchone()
            source_id = checkouts.register(_Qmark(db), path, name, checkout, os.path.isfile(path), scope)
            if not known and not checkout:
                db.execute("UPDATE sources SET scope = %s WHERE id = %s", (scope, source_id))
            return source_id

    def source_scopes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT path, scope FROM sources").fetchall())

    def set_source_scope(self, path: str, scope: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE sources SET scope = %s WHERE path = %s", (scope, path))

    def remove_source(self, path: str) -> int:
        with self.transaction() as db:
            q = _Qmark(db)
            source_id, checkout_id = checkouts.target(q, path)
            if checkout_id is not None:
                removed = checkouts.drop_checkout(q, checkout_id, self._forget_note)
            else:
                root = db.execute("SELECT path FROM sources WHERE id = %s", (source_id,)).fetchone()[0]
                paths = [p for (p,) in db.execute("SELECT path FROM files WHERE source_id = %s", (source_id,))]
                for file_path in paths:
                    self._forget_note(q, file_path)
                checkouts.drop_source(q, source_id)
                db.execute("DELETE FROM sources WHERE id = %s", (source_id,))
                db.execute("DELETE FROM problems WHERE path = %s OR path LIKE %s ESCAPE '\\'",
                           (root, _like_prefix(root)))
                removed = len(paths)
            self._bump_generation(db)
        return removed

    # --- files and chunks -------------------------------------------------------------------

    def file_state(self, path: str) -> FileState | None:
        row = self.db.execute("SELECT id, mtime, size, hash FROM files WHERE path = %s", (path,)).fetchone()
        return FileState(*row) if row else None

    def copy_state(self, checkout_id: int, path: str) -> checkouts.Copy | None:
        return checkouts.copy_state(_Qmark(self.db), checkout_id, path)

    def copy_states(self, checkout_id: int) -> dict[str, checkouts.Copy]:
        return checkouts.copy_states(_Qmark(self.db), checkout_id)

    def file_paths(self, source_id: int) -> set[str]:
        return {p for (p,) in self.db.execute("SELECT path FROM files WHERE source_id = %s", (source_id,))}

    def record_copy(self, checkout_id: int, path: str, mtime: float, size: int, digest: str) -> None:
        with self.transaction() as db:
            checkouts.record_copy(_Qmark(db), checkout_id, path, mtime, size, digest)

    def replace_file(self, source_id: int, path: str, stat: tuple[float, int], digest: str, note, chunks,
                     checkout_id: int | None = None) -> bool:
        """Swap a file's rows for new ones in one transaction: readers see old or new, never half;
        with `checkout_id`, only when engine/files/checkouts.accept lets that checkout's copy in."""
        frontmatter = note.frontmatter
        collection = frontmatter.get("collection")
        title = _clean(alias_title(note))
        chunks = list(chunks)
        parts = [(_clean(c.heading), _clean(c.text)) for c in chunks]
        made_terms = chunks_terms([(title, h, t) for h, t in parts])  # FTS5's terms, before the write lock
        cleaned = [(c, h, t, m) for c, (h, t), m in zip(chunks, parts, made_terms, strict=True)]
        with self.transaction() as db:
            if checkout_id is not None and not checkouts.accept(_Qmark(db), checkout_id, path, stat, digest):
                return False
            self._delete_file(db, path)
            file_id = db.execute(
                "INSERT INTO files(source_id, path, mtime, size, hash, title, tags, status, frontmatter, "
                "collection, fm_date, indexed_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id",
                (source_id, path, stat[0], stat[1], digest, _clean(note.title), [_clean(t) for t in note.tags],
                 _clean(str(frontmatter.get("status") or "")),
                 json.dumps(_finite(frontmatter), default=str, ensure_ascii=False),
                 _clean(collection) if isinstance(collection, str) else None,
                 _clean(_as_text(frontmatter.get("date"))), time.time()),
            ).fetchone()[0]
            made = []
            for c, heading, text, (stored, length, counts) in cleaned:
                chunk_id = db.execute(
                    "INSERT INTO chunks(file_id, ordinal, heading, line_start, line_end, text, hash, title, terms, "
                    "length) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id",
                    (file_id, c.ordinal, heading, c.line_start, c.line_end, text, c.hash, title, stored, length),
                ).fetchone()[0]
                made.append((chunk_id, length, counts))
            add_postings(db, made)
            self._bump_generation(db)
        return True

    def remove_copy(self, checkout_id: int, path: str) -> bool:
        with self.transaction() as db:
            removed = checkouts.remove_copy(_Qmark(db), checkout_id, path, self._forget_note)
            if removed:
                self._bump_generation(db)
        return removed

    def delete_file(self, path: str) -> None:
        with self.transaction() as db:
            self._forget_note(_Qmark(db), path)
            checkouts.forget(_Qmark(db), path)
            self._bump_generation(db)

    def _forget_note(self, q: _Qmark, path: str) -> None:
        """Through the `?` connection engine/files/checkouts hands back: the note's rows and links go."""
        self._delete_file(q.conn, path)
        link_index.forget_note(q, path)

    def update_links(self, path: str, root: str, text: str, note, body_start: int | None = None) -> None:
        with self.transaction() as db:
            link_index.update_note(_Qmark(db), path, root, _clean(text), note.frontmatter, note.title, body_start)

    def links(self, query: str, path: str, **options) -> list[dict]:
        if query not in LINK_QUERIES:
            raise ValueError(f"unknown link query {query!r}")
        if query == "unresolved":
            return link_index.unresolved(_Qmark(self.db))
        return getattr(link_index, query)(_Qmark(self.db), path, **options)

    def _delete_file(self, db, path: str) -> None:
        """The file's postings and counts first (pg_keywords), then the file: its chunks go with it
        (ON DELETE CASCADE)."""
        remove_postings(db, [i for (i,) in db.execute("SELECT id FROM files WHERE path = %s", (path,))])
        db.execute("DELETE FROM files WHERE path = %s", (path,))

    def record_problem(self, path: str, message: str | None) -> None:
        with self.transaction() as db:
            if message:
                db.execute("INSERT INTO problems VALUES (%s, %s, %s) ON CONFLICT (path) DO UPDATE "
                           "SET message = EXCLUDED.message, seen_at = EXCLUDED.seen_at",
                           (path, _clean(message), time.time()))
            else:
                db.execute("DELETE FROM problems WHERE path = %s", (path,))

    def problems(self) -> list[tuple[str, str]]:
        return [tuple(r) for r in self.db.execute("SELECT path, message FROM problems ORDER BY path")]
