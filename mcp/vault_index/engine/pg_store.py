"""The index in PostgreSQL with pgvector: the same contract as the SQLite file (engine/store_contract).

Chosen by VAULT_INDEX_URL=postgresql://... (docs/adr/0017-postgresql-backend.md, docs/postgres.md).
Tables mirror the SQLite ones and are keyed the same way: files by path, chunks by id with their
content hash, vectors by (chunk hash, model fingerprint), so machines indexing the same notes share
vectors. Keywords: a generated tsvector (title weight A, heading path B, body D) under a GIN index,
queried with the FTS5 text services/query.py builds, translated term by term. Vectors: pgvector,
exact below HNSW_MIN_VECTORS of a model, an HNSW (cosine) partial index per model above it.

Every write transaction takes one advisory lock first (WRITE_LOCK), as SQLite's BEGIN IMMEDIATE
takes the file's write lock: several indexers on one database never interleave a file's swap or
the link graph's re-resolution. Readers never wait for it.

Imports: psycopg loads with this module (only engine/store_contract.open_store imports it, when
VAULT_INDEX_URL names PostgreSQL); numpy and pgvector load at the first vector call (_numpy), so
the MCP server's start-up status (sources, counts) does not pay for them.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from vault_index.engine import checkouts, link_index
from vault_index.engine.parse import alias_title
from vault_index.engine.store import BUSY_TIMEOUT_S, LINK_QUERIES, ChunkRow, FileState, _finite, _like_prefix
from vault_index.engine.store_contract import redact
from vault_index.errors import IndexBusyError, IndexUnavailableError, NotFoundError

# Advisory lock keys (any two 64-bit numbers no other application on the database uses).
MIGRATE_LOCK = 0x7661756C74_01  # "vault" + 1: one process migrates, the others wait and find nothing to do
WRITE_LOCK = 0x7661756C74_02  # every write transaction: the BEGIN IMMEDIATE of this backend
EMBED_LOCK = 0x7661756C74_03  # one embedder at a time (indexer._embedding_turn)
VECTOR_INDEX_LOCK = 0x7661756C74_04  # one HNSW build at a time

# Trigger: an exact pgvector scan reads every vector of the model per query, so its cost grows
# with the vectors while HNSW's barely does. Why: `vault-index bench --postgres` (ADR 0017's
# table, random unit vectors, 2 busy cores) measured kNN top-50 p95 exact / HNSW at 108 / 76 ms
# at 10k vectors (116 / 120 in a second run), 229 / 168 at 30k and 718 / 176 at 100k: they
# cross at about 10k (the 50,000 before was a guess). Outcome: exact below 10k (exact answers,
# no build), HNSW at or above (checkpoint() builds it after a sync; search uses it). Do not
# raise it for recall's sake without measuring: exact costs 1.4x HNSW's p95 at 30k and 4x at
# 100k here. HNSW recall on random vectors falls with size (0.93 at 10k, 0.37 at 100k; real
# embeddings not measured): ADR 0017.
HNSW_MIN_VECTORS = 10_000
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64  # pgvector's defaults
HNSW_BUILD_MEMORY_MIN_MB, HNSW_BUILD_MEMORY_MAX_MB = 512, 8192  # maintenance_work_mem of a build
# ef_search = this x the vectors asked for (the fusion asks 2 x 50), at least pgvector's 40 and at
# most its 1,000. Trigger: at 1M clustered vectors (bench --postgres) a factor of 4 (ef_search 400)
# found 0.79-0.88 of the exact top 10. Outcome of a sweep on that index (40 queries): ef_search 400
# recall@10 0.883, 600 0.933, 800 0.933, 1,000 0.935, with p95 105 / 52 / 49 / 57 ms (the first
# row ran on a cold cache); at 100k all gave 1.0. 8 buys the recall at no measured cost (ADR 0017).
HNSW_EF_SEARCH_FACTOR = 8
HNSW_EF_SEARCH_MAX = 1000  # pgvector refuses a larger hnsw.ef_search
# ts_rank weights, in PostgreSQL's {D, C, B, A} order: body, (unused), heading path, title; the
# tsvector labels title A and heading B so they can be weighed apart. Trigger: the issue asked for
# title and heading to weigh more. Why not: measured on the example vault (file NDCG@5, shipped
# MiniLM, IDF on), {0.4,0.4,0.7,1.0} gave keyword 0.795 / hybrid 0.951 and {0.5,0.5,1,1} 0.805 /
# 0.954, against 0.832 / 0.955 with equal weights (SQLite's bm25, which weighs the columns alike:
# 0.828 / 0.955). Outcome: equal weights, no length normalisation; ADR 0017 has the sweep.
RANK_WEIGHTS = "{1.0, 1.0, 1.0, 1.0}"
RANK_NORMALIZATION = 0
IDF_COUNT_CAP = 100_000  # chunks counted per term for its IDF (a term in more counts as this many)
ITER_BLOCK = 8192  # vectors per page when streaming a model's vectors


def _ddl(statement: str) -> str:
    """Binary collation on every text column: comparisons and ORDER BY agree with SQLite's."""
    return statement.replace(" TEXT", ' TEXT COLLATE "C"')


def m001_initial(db: psycopg.Connection) -> None:
    """Everything SQLite's m001..m004 built, in one step: sources (with names), files, chunks with
    their tsvector, embeddings, meta, problems, and the link graph's edges and note_names."""
    db.execute("CREATE EXTENSION IF NOT EXISTS vector")
    serial = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    for statement in (
        f"CREATE TABLE sources(id {serial}, path TEXT UNIQUE NOT NULL, name TEXT UNIQUE NOT NULL, "
        "added_at DOUBLE PRECISION)",
        f"CREATE TABLE files(id {serial}, source_id BIGINT NOT NULL REFERENCES sources(id), "
        "path TEXT UNIQUE NOT NULL, mtime DOUBLE PRECISION, size BIGINT, hash TEXT, title TEXT, "
        "tags text[] NOT NULL DEFAULT '{}', status TEXT, frontmatter TEXT, collection TEXT, fm_date TEXT, "
        "indexed_at DOUBLE PRECISION)",
        "CREATE INDEX files_source ON files(source_id)",
        "CREATE INDEX files_tags ON files USING GIN(tags)",
        f"CREATE TABLE chunks(id {serial}, file_id BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE, "
        "ordinal INTEGER, heading TEXT, line_start INTEGER, line_end INTEGER, text TEXT, hash TEXT, title TEXT, "
        "tsv tsvector GENERATED ALWAYS AS ("
        "setweight(to_tsvector('english', coalesce(title, '')), 'A') || "
        "setweight(to_tsvector('english', coalesce(heading, '')), 'B') || "
        "setweight(to_tsvector('english', coalesce(text, '')), 'D')) STORED)",
        "CREATE INDEX chunks_file ON chunks(file_id)",
        "CREATE INDEX chunks_hash ON chunks(hash)",
        "CREATE INDEX chunks_tsv ON chunks USING GIN(tsv)",
        "CREATE TABLE embeddings(hash TEXT NOT NULL, model TEXT NOT NULL, vector vector NOT NULL, "
        "PRIMARY KEY(hash, model))",
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)",
        "CREATE TABLE problems(path TEXT PRIMARY KEY, message TEXT, seen_at DOUBLE PRECISION)",
        f"CREATE TABLE edges(id {serial}, source TEXT NOT NULL, target TEXT, raw TEXT NOT NULL, "
        "fragment TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL, line INTEGER NOT NULL, status TEXT NOT NULL, "
        "name_key TEXT NOT NULL, file_key TEXT NOT NULL, root TEXT NOT NULL)",
        "CREATE INDEX edges_source ON edges(source)",
        "CREATE INDEX edges_target ON edges(target)",
        "CREATE INDEX edges_name ON edges(name_key)",
        "CREATE INDEX edges_file ON edges(file_key)",
        "CREATE TABLE note_names(path TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL)",
        "CREATE INDEX note_names_key ON note_names(kind, key)",
        "CREATE INDEX note_names_path ON note_names(path)",
    ):
        db.execute(_ddl(statement))


def m002_checkouts(db: psycopg.Connection) -> None:
    """Team vaults (ADR 0019), as SQLite's m005_checkouts: each source's folder becomes its first
    checkout and each stored note that checkout's copy, so nothing is read again or re-embedded."""
    serial = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    for statement in (
        f"CREATE TABLE checkouts(id {serial}, source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE, "
        "root TEXT UNIQUE NOT NULL, added_at DOUBLE PRECISION)",
        "CREATE INDEX checkouts_source ON checkouts(source_id)",
        "CREATE TABLE copies(checkout_id BIGINT NOT NULL REFERENCES checkouts(id) ON DELETE CASCADE, "
        "path TEXT NOT NULL, mtime DOUBLE PRECISION, size BIGINT, hash TEXT NOT NULL, gone INTEGER NOT NULL DEFAULT 0, "
        "PRIMARY KEY(checkout_id, path))",
        "CREATE INDEX copies_path ON copies(path)",
        "CREATE TABLE removed_notes(path TEXT PRIMARY KEY, source_id BIGINT NOT NULL REFERENCES sources(id) "
        "ON DELETE CASCADE, mtime DOUBLE PRECISION, hash TEXT NOT NULL, removed_at DOUBLE PRECISION)",
        "INSERT INTO checkouts(source_id, root, added_at) SELECT id, path, added_at FROM sources ORDER BY id",
        "INSERT INTO copies(checkout_id, path, mtime, size, hash, gone) SELECT c.id, f.path, f.mtime, f.size, "
        "COALESCE(f.hash, ''), 0 FROM files f JOIN checkouts c ON c.source_id = f.source_id",
    ):
        db.execute(_ddl(statement))


def m003_source_scopes(db: psycopg.Connection) -> None:
    """Workspaces (ADR 0020), as SQLite's m006: '' is the personal workspace every project sees."""
    db.execute("ALTER TABLE sources ADD COLUMN scope TEXT NOT NULL DEFAULT ''")


MIGRATIONS = (m001_initial, m002_checkouts, m003_source_scopes)


def database_url(server_url: str, name: str) -> str:
    """`server_url` with its database replaced by `name` (query options such as host= kept)."""
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(server_url)._replace(path="/" + name))


def hnsw_build_memory_mb(vectors: int, dims: int) -> int:
    """maintenance_work_mem for an HNSW build of `vectors` vectors of `dims` floats.

    Trigger: pgvector builds the graph in memory and, once it no longer fits in
    maintenance_work_mem, goes on inserting element by element on disk, many times slower.
    Why: a graph element is the vector (4 bytes a dimension) plus its neighbour lists and
    headers, under twice the vector at m = 16 for 384 dimensions. Outcome: twice the vectors'
    size, at least HNSW_BUILD_MEMORY_MIN_MB, at most HNSW_BUILD_MEMORY_MAX_MB (a server that
    cannot spare it builds slower, never fails).
    """
    wanted = 2 * vectors * (dims * 4 + 8) // 2**20
    return int(min(HNSW_BUILD_MEMORY_MAX_MB, max(HNSW_BUILD_MEMORY_MIN_MB, wanted)))


def database_name(label: str) -> str:
    """A PostgreSQL database name for `label` (eval corpus names): lower case letters, digits
    and underscores, at most 63 bytes, so it needs no quoting anywhere."""
    return re.sub(r"[^a-z0-9_]", "_", label.lower())[:63]


def ensure_database(server_url: str, name: str) -> str:
    """The URL of the database `name` on the server `server_url` reaches, created if missing.

    For the eval's one database per corpus (tooling/evaluation.py): the URL's own database only
    serves to connect; nothing is written there. Two processes creating the same one at once:
    the second finds it made (duplicate_database).
    """
    name = database_name(name)
    try:
        with psycopg.connect(server_url, autocommit=True, connect_timeout=10) as admin:
            if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                try:
                    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                    pass
    except psycopg.errors.InsufficientPrivilege as exc:
        raise IndexUnavailableError(
            f"cannot create the database {name} on {redact(server_url)} ({exc}); create it once as its owner "
            "(CREATE DATABASE) or give this user CREATEDB") from exc
    except psycopg.Error as exc:
        raise IndexUnavailableError(
            f"cannot reach the PostgreSQL server at {redact(server_url)} ({' '.join(str(exc).split())})") from exc
    return database_url(server_url, name)


def drop_database(server_url: str, name: str) -> None:
    """Drop the database `name` on that server if it exists (the bench's own, between runs)."""
    with psycopg.connect(server_url, autocommit=True, connect_timeout=10) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database_name(name))))


class _Qmark:
    """A psycopg connection that speaks sqlite3's `?` placeholders, for the engine modules whose
    SQL is plain enough to serve both stores (link_index, source_names). None of their statements
    holds a literal `?` or `%`."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def execute(self, statement: str, args=()):
        return self.conn.execute(statement.replace("?", "%s"), tuple(args) or None)

    def executemany(self, statement: str, rows):
        rows = [tuple(r) for r in rows]
        cursor = self.conn.cursor()
        if rows:
            cursor.executemany(statement.replace("?", "%s"), rows)
        return cursor


class _AdvisoryLock:
    """A session advisory lock with filelock's acquire(timeout)/release (indexer._embedding_turn)."""

    def __init__(self, conn: psycopg.Connection, key: int):
        self.conn, self.key = conn, key

    def acquire(self, timeout: float) -> None:
        from filelock import Timeout

        deadline = time.monotonic() + timeout
        while not self.conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0]:
            if time.monotonic() >= deadline:
                raise Timeout(f"postgresql advisory lock {self.key}")
            time.sleep(0.2)

    def release(self) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))


_MATCH_TOKEN = re.compile(r'"(?:[^"]|"")*"|\S+')


def parse_match(match: str) -> tuple[list[str], str]:
    """(terms, "OR" or "AND") of the FTS5 text services/query.fts_match and quote() build.

    That grammar only (quoted terms joined by one operator): anything else is a programming
    error, refused rather than guessed at.
    """
    tokens = _MATCH_TOKEN.findall(match)
    terms, ops = tokens[0::2], set(tokens[1::2])
    if not terms or ops - {"OR", "AND"} or len(ops) > 1 or not all(len(t) >= 2 and t[0] == t[-1] == '"' for t in terms):
        raise ValueError(f"not a keyword query of services/query.py: {match!r}")
    return [t[1:-1].replace('""', '"') for t in terms], (ops.pop() if ops else "OR")


def _tsquery(match: str) -> tuple[sql.Composable, list[str]]:
    """A tsquery expression for `match`: each quoted term a phrase (as FTS5 reads a quoted string)."""
    terms, op = parse_match(match)
    joiner = sql.SQL(" || " if op == "OR" else " && ")
    return joiner.join(sql.SQL("phraseto_tsquery('english', %s)") for _ in terms), terms


def _clean(text):
    """PostgreSQL text cannot hold NUL; a NUL past the binary sniff becomes U+FFFD (the chunk hash,
    computed from the file, is unchanged)."""
    return text.replace("\x00", "\ufffd") if isinstance(text, str) else text


def _as_text(value) -> str | None:
    """What SQLite's CAST(json_extract(frontmatter, '$.key') AS TEXT) gives for one value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(_finite(value), default=str, ensure_ascii=False, separators=(",", ":"))


def _blob(vector) -> bytes:
    """float32 bytes of a vector as pgvector returns it (a numpy array, or its Vector in binary)."""
    import numpy as np

    if hasattr(vector, "to_numpy"):
        vector = vector.to_numpy()
    return np.asarray(vector, dtype="<f4").tobytes()


def ef_search_for(wanted: int) -> int:
    """hnsw.ef_search for a query that wants `wanted` vectors, within pgvector's bounds."""
    return min(HNSW_EF_SEARCH_MAX, max(40, HNSW_EF_SEARCH_FACTOR * wanted))


class PgStore:
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
        self._chunk_count: tuple[str, int] | None = None  # (generation, count): chunk_count()

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

    def source_stats(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT s.name, s.path, COUNT(DISTINCT f.id), COUNT(c.id) FROM sources s "
            "LEFT JOIN files f ON f.source_id = s.id LEFT JOIN chunks c ON c.file_id = f.id "
            "GROUP BY s.id ORDER BY s.path"
        )
        return [{"name": n, "path": p, "files": nf, "chunks": nc} for n, p, nf, nc in rows]

    def checkouts(self) -> list[tuple[int, int, str]]:
        return checkouts.checkout_rows(_Qmark(self.db))

    def add_source(self, path: str, name: str | None = None, checkout: bool = False, scope: str = "") -> int:
        with self.transaction() as db:
            known = db.execute("SELECT 1 FROM checkouts WHERE root = %s", (path,)).fetchone()
            source_id = checkouts.register(_Qmark(db), path, name, checkout, os.path.isfile(path))
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

    def file_paths(self, source_id: int, checkout_id: int | None = None) -> set[str]:
        if checkout_id is not None:
            return checkouts.paths_of(_Qmark(self.db), checkout_id)
        return {p for (p,) in self.db.execute("SELECT path FROM files WHERE source_id = %s", (source_id,))}

    def record_copy(self, checkout_id: int, path: str, mtime: float, size: int, digest: str) -> None:
        with self.transaction() as db:
            checkouts.record_copy(_Qmark(db), checkout_id, path, mtime, size, digest)

    def replace_file(self, source_id: int, path: str, stat: tuple[float, int], digest: str, note, chunks,
                     checkout_id: int | None = None) -> bool:
        """Swap a file's rows for new ones in one transaction: readers see old or new, never half;
        with `checkout_id`, only when engine/checkouts.accept lets that checkout's copy in."""
        frontmatter = note.frontmatter
        collection = frontmatter.get("collection")
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
            title = _clean(alias_title(note))
            rows = [(file_id, c.ordinal, _clean(c.heading), c.line_start, c.line_end, _clean(c.text), c.hash, title)
                    for c in chunks]
            if rows:
                with db.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO chunks(file_id, ordinal, heading, line_start, line_end, text, hash, title) "
                        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s)", rows)
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
        """Through the `?` connection engine/checkouts hands back: the note's rows and links go."""
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
        db.execute("DELETE FROM files WHERE path = %s", (path,))  # its chunks go with it (ON DELETE CASCADE)

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

    # --- embeddings -------------------------------------------------------------------------

    def chunks_missing_vectors(self, model: str, path: str | None = None) -> list[tuple[str, str, str, str]]:
        where, args = "e.hash IS NULL", [model]
        if path is not None:
            where += " AND f.path = %s"
            args.append(path)
        return [tuple(r) for r in self.db.execute(
            "SELECT c.hash, MIN(c.title), MIN(c.heading), MIN(c.text) FROM chunks c JOIN files f ON f.id = c.file_id "
            f"LEFT JOIN embeddings e ON e.hash = c.hash AND e.model = %s WHERE {where} GROUP BY c.hash ORDER BY c.hash",
            args,
        )]

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
        row = self.db.execute("SELECT vector_dims(vector) FROM embeddings WHERE model = %s LIMIT 1",
                              (model,)).fetchone()
        return row[0] if row else None

    def vector_index_bytes(self, model: str) -> int | None:
        """On-disk size of `model`'s HNSW index, None without one (bench, status)."""
        row = self.db.execute("SELECT pg_relation_size(c.oid) FROM pg_class c WHERE c.relname = %s",
                              (self.vector_index_name(model),)).fetchone()
        return row[0] if row else None

    def has_vector_index(self, model: str) -> bool:
        return bool(self.db.execute(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s AND i.indisvalid",
            (self.vector_index_name(model),)).fetchone())

    def ensure_vector_index(self, model: str) -> bool:
        """Build the HNSW (cosine) partial index of `model`'s vectors if missing; True if it exists after."""
        dims = self.vector_dims(model)
        if dims is None:
            return False
        self.db.execute("SELECT pg_advisory_lock(%s)", (VECTOR_INDEX_LOCK,))
        try:
            if not self.has_vector_index(model):
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

    # --- reads ------------------------------------------------------------------------------

    def keyword(self, match: str, limit: int) -> list[tuple[int, float]]:
        """Each term's ts_rank over the weighted tsvector times the term's bm25 IDF, summed
        (higher is better, as the SQLite side's flipped bm25).

        Trigger: ts_rank alone has no IDF. Why: with it, a common word counted as much as the rare
        one the question is about (eval, example vault: keyword file NDCG@5 0.74 against 0.83 on
        SQLite). Outcome: each term is weighted by bm25's IDF from its chunk count (counted no
        further than IDF_COUNT_CAP: bounded cost per term).
        """
        terms, op = parse_match(match)
        total = max(1, self.chunk_count())
        weights = []
        for term in terms:
            df = self.db.execute("SELECT COUNT(*) FROM (SELECT 1 FROM chunks WHERE tsv @@ phraseto_tsquery("
                                 "'english', %s) LIMIT %s) s", (term, IDF_COUNT_CAP)).fetchone()[0]
            weights.append(math.log((total - df + 0.5) / (df + 0.5) + 1.0))
        queries = [sql.SQL("phraseto_tsquery('english', %s) AS q{}").format(sql.Literal(i)) for i in range(len(terms))]
        joiner = sql.SQL(" || " if op == "OR" else " && ")
        whole = joiner.join(sql.SQL("q.q{}").format(sql.Literal(i)) for i in range(len(terms)))
        rank = sql.SQL(" + ").join(
            sql.SQL("{w} * ts_rank({weights}::float4[], c.tsv, q.q{i}, {norm})").format(
                w=sql.Literal(w), weights=sql.Literal(RANK_WEIGHTS), i=sql.Literal(i),
                norm=sql.Literal(RANK_NORMALIZATION))
            for i, w in enumerate(weights))
        statement = sql.SQL(
            "SELECT c.id, {rank} AS r FROM chunks c, (SELECT {queries}) q WHERE c.tsv @@ ({whole}) "
            "ORDER BY r DESC, c.id LIMIT %s"
        ).format(rank=rank, queries=sql.SQL(", ").join(queries), whole=whole)
        return [(i, float(r)) for i, r in self.db.execute(statement, (*terms, limit))]

    def term_doc_count(self, match: str, cap: int) -> int:
        query, terms = _tsquery(match)
        statement = sql.SQL("SELECT COUNT(*) FROM (SELECT 1 FROM chunks WHERE tsv @@ ({query}) LIMIT %s) s").format(
            query=query)
        return self.db.execute(statement, (*terms, cap)).fetchone()[0]

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
        services/search.py re-checks each hit's exact path)."""
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

    def chunk_count(self) -> int:
        """Chunks in the index, counted again only when the generation moved.

        Trigger: every keyword and hybrid search asks twice (rare-term pruning, IDF). Why:
        PostgreSQL counts by scanning the table, tens of milliseconds at 100k chunks and ten times
        that at 1M, where SQLite's count is cheap. Outcome: one indexed meta read per call; every
        write that adds or drops chunks bumps the generation, in this process or another.
        """
        generation = self.get_meta("generation", "0")
        if self._chunk_count is None or self._chunk_count[0] != generation:
            self._chunk_count = (generation, self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        return self._chunk_count[1]

    def counts(self) -> dict[str, int]:
        one = lambda statement: self.db.execute(statement).fetchone()[0]  # noqa: E731
        return {
            "sources": one("SELECT COUNT(*) FROM sources"),
            "files": one("SELECT COUNT(*) FROM files"),
            "chunks": one("SELECT COUNT(*) FROM chunks"),
        }


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
        if allowed is None and self.store.has_vector_index(self.model):
            return self._approximate(query, limit)
        return self.exact(query, limit, allowed)

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

    def _approximate(self, query, limit: int) -> list[tuple[int, float]]:
        """HNSW over the model's vectors (by hash), then the chunks that hold them."""
        wanted = limit * 2  # a vector shared by several chunks, or not yet pruned, takes one slot
        nearest = self._nearest(query, wanted)
        distance = dict(nearest)
        rows = self.store.db.execute("SELECT id, hash FROM chunks WHERE hash = ANY(%s)", (list(distance),)).fetchall()
        return _scores(sorted(((cid, distance[h]) for cid, h in rows), key=lambda r: (r[1], r[0])), limit)

    def _nearest(self, query, wanted: int, explain: bool = False):
        """(hash, distance) of the `wanted` nearest vectors through the HNSW index (or the plan).

        The model and dimension are literals, not parameters: the planner must see that the
        query's WHERE matches the partial index's predicate and its ORDER BY the index expression.
        Sequential scans are off inside: with the index built, a small or unanalysed table must not
        make the planner sort every vector instead.
        """
        db, dims = self.store.db, self.store.vector_dims(self.model)
        statement = sql.SQL(
            "SELECT hash, vector::vector({dims}) <=> %s AS d FROM embeddings WHERE model = {model} "
            "ORDER BY vector::vector({dims}) <=> %s LIMIT %s"
        ).format(dims=sql.Literal(dims), model=sql.Literal(self.model))
        with db.transaction():
            db.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                sql.Literal(ef_search_for(wanted))))
            db.execute("SET LOCAL enable_seqscan = off")
            if explain:
                return "\n".join(r[0] for r in db.execute(sql.SQL("EXPLAIN ") + statement, (query, query, wanted)))
            return db.execute(statement, (query, query, wanted)).fetchall()

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
