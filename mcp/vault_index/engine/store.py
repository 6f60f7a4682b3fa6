"""The SQLite index: one file (WAL), FTS5 for keywords, vectors as blobs keyed by content hash.

Everything here is derived from the notes and can be rebuilt: a damaged index is moved aside and
a fresh one made with the same sources, never "repaired" in place; an index that cannot be
written is opened read-only (engine/recovery.py, docs/adr/0009-index-recovery.md).
"""

from __future__ import annotations

import functools
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vault_index import locations
from vault_index.engine import checkouts, link_index, private, recovery
from vault_index.engine.parse import alias_title
from vault_index.engine.source_names import fill_missing
from vault_index.errors import (
    IndexBusyError,
    IndexReadOnlyError,
    IndexRebuiltError,
    IndexUnavailableError,
    NotFoundError,
)

BUSY_TIMEOUT_S = 30.0
LINK_QUERIES = ("backlinks", "outgoing", "neighbors", "unresolved")


def m001_initial(db: sqlite3.Connection) -> None:
    # Statement by statement, not executescript: executescript commits first, which would drop
    # the write lock _migrate holds.
    script = (
        """
        CREATE TABLE sources(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, added_at REAL);
        CREATE TABLE files(
            id INTEGER PRIMARY KEY, source_id INTEGER NOT NULL, path TEXT UNIQUE NOT NULL,
            mtime REAL, size INTEGER, hash TEXT, title TEXT, tags TEXT, status TEXT,
            frontmatter TEXT, indexed_at REAL);
        CREATE INDEX files_source ON files(source_id);
        CREATE TABLE chunks(
            id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, ordinal INTEGER, heading TEXT,
            line_start INTEGER, line_end INTEGER, text TEXT, hash TEXT);
        CREATE INDEX chunks_file ON chunks(file_id);
        CREATE INDEX chunks_hash ON chunks(hash);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, heading, body, tokenize='porter unicode61 remove_diacritics 2');
        CREATE TABLE embeddings(
            hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL,
            PRIMARY KEY(hash, model)) WITHOUT ROWID;
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE problems(path TEXT PRIMARY KEY, message TEXT, seen_at REAL);
        """
    )
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def m002_embeddings_rowid(db: sqlite3.Connection) -> None:
    """Vectors in a rowid table: as WITHOUT ROWID, each 1.6 KB row spilled to a mostly empty
    overflow page (bench, 100k chunks: 468 MB of pages for 163 MB of vectors)."""
    for statement in (
        "CREATE TABLE embeddings_new(id INTEGER PRIMARY KEY, hash TEXT NOT NULL, model TEXT NOT NULL, "
        "vector BLOB NOT NULL, UNIQUE(hash, model))",
        "INSERT INTO embeddings_new(hash, model, vector) SELECT hash, model, vector FROM embeddings",
        "DROP TABLE embeddings",
        "ALTER TABLE embeddings_new RENAME TO embeddings",
    ):
        db.execute(statement)


def m003_links(db: sqlite3.Connection) -> None:
    """The link graph (engine/link_index.py). Files indexed before it get mtime 0, so the next
    sync reads them again and fills their edges (chunk hashes are unchanged: nothing re-embeds)."""
    link_index.migrate(db)
    db.execute("UPDATE files SET mtime = 0, hash = ''")


def m004_source_names(db: sqlite3.Connection) -> None:
    """Named sources (ADR 0012): each existing source gets its folder's base name, made unique."""
    db.execute("ALTER TABLE sources ADD COLUMN name TEXT")
    fill_missing(db)
    db.execute("CREATE UNIQUE INDEX sources_name ON sources(name)")


def m005_checkouts(db: sqlite3.Connection) -> None:
    """Team vaults (ADR 0019): each source's folder becomes its first checkout, and each stored
    note that checkout's copy as last looked at, so nothing is read again or re-embedded."""
    for statement in CHECKOUT_TABLES:
        db.execute(statement)
    db.execute("INSERT INTO checkouts(source_id, root, added_at) SELECT id, path, added_at FROM sources ORDER BY id")
    db.execute("INSERT INTO copies(checkout_id, path, mtime, size, hash, gone) SELECT c.id, f.path, f.mtime, "
               "f.size, COALESCE(f.hash, ''), 0 FROM files f JOIN checkouts c ON c.source_id = f.source_id")


# The tables of engine/checkouts.py (PostgreSQL's m002_checkouts makes the same ones).
CHECKOUT_TABLES = (
    "CREATE TABLE checkouts(id INTEGER PRIMARY KEY, source_id INTEGER NOT NULL, root TEXT UNIQUE NOT NULL, "
    "added_at REAL)",
    "CREATE INDEX checkouts_source ON checkouts(source_id)",
    "CREATE TABLE copies(checkout_id INTEGER NOT NULL, path TEXT NOT NULL, mtime REAL, size INTEGER, "
    "hash TEXT NOT NULL, gone INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(checkout_id, path))",
    "CREATE INDEX copies_path ON copies(path)",
    "CREATE TABLE removed_notes(path TEXT PRIMARY KEY, source_id INTEGER NOT NULL, mtime REAL, "
    "hash TEXT NOT NULL, removed_at REAL)",
)

def m006_source_scopes(db: sqlite3.Connection) -> None:
    """Workspaces (ADR 0020): each source belongs to one; '' is the personal one every project sees."""
    db.execute(SCOPE_COLUMN)


SCOPE_COLUMN = "ALTER TABLE sources ADD COLUMN scope TEXT NOT NULL DEFAULT ''"

MIGRATIONS = (m001_initial, m002_embeddings_rowid, m003_links, m004_source_names, m005_checkouts,
              m006_source_scopes)


@dataclass(frozen=True)
class FileState:
    id: int
    mtime: float
    size: int
    hash: str


@dataclass(frozen=True)
class ChunkRow:
    id: int
    path: str
    title: str
    heading: str
    line_start: int
    line_end: int
    text: str
    status: str


def _connect(path: Path, busy_timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=busy_timeout, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA journal_size_limit = 67108864")  # 64 MB: a truncated WAL stays small
    return db


def _migrate(db: sqlite3.Connection) -> None:
    if db.execute("PRAGMA user_version").fetchone()[0] >= len(MIGRATIONS):
        return
    # Two processes may open a fresh file at once: under the write lock one migrates, the other
    # waits, re-reads the version and finds nothing to do (instead of failing on CREATE TABLE
    # and moving a healthy index aside as corrupt).
    with db:
        db.execute("BEGIN IMMEDIATE")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for number, migration in enumerate(MIGRATIONS, start=1):
            if number > version:
                migration(db)
                db.execute(f"PRAGMA user_version = {number}")


def _open(path: Path, busy_timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Connect and migrate, waiting out other processes that hold the file.

    Switching a fresh file to WAL can answer "locked" at once, without SQLite's busy handler
    (seen with two indexers starting together), so busy errors here are retried until
    `busy_timeout` (BUSY_TIMEOUT_S unless the caller must not wait, as the edit hook) has passed.
    """
    deadline = time.monotonic() + busy_timeout
    while True:
        db = None
        try:
            db = _connect(path, busy_timeout)
            _migrate(db)
            return db
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            if not _is_busy(exc):
                raise
            if time.monotonic() > deadline:
                raise IndexBusyError(f"index {path} stayed busy for {busy_timeout:g} s; try again") from exc
            time.sleep(0.05)


class Store:
    """A connection to the index file. One per process and use case; not shared across threads.

    Opening never loses the registered sources and never takes a permission problem for damage
    (docs/adr/0009-index-recovery.md): a damaged index (SQLite says "not a database" or
    "malformed", at open through quick_check or later in any call) is moved aside and recreated
    with its sources; an index that cannot be written is opened read-only; one that cannot be
    opened at all is left where it is, with an error that says why.

    The contract it shares with the PostgreSQL store is engine/store_contract.IndexStore.
    """

    kind = "sqlite"
    database_errors: tuple[type[BaseException], ...] = (sqlite3.DatabaseError,)
    vector_backend: str | None = None  # the settings choose: numpy or sqlite-vec (engine/vectors.py)

    def __init__(self, path: Path, busy_timeout: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.location = str(self.path)
        self.busy_timeout = busy_timeout
        self.recovered_from: Path | None = None
        self.read_only: str | None = None  # why writes are refused, when they are
        self.notices: list[str] = []
        self._chunk_count: tuple[str, int] | None = None  # (generation, count): chunk_count()
        try:  # the index holds every note's text: 0600 in 0700 folders, whatever the umask (issue 22)
            private.private_index(self.path, Path(locations.index_home()))
        except OSError as exc:
            if not self.path.parent.is_dir():
                raise IndexUnavailableError(
                    f"cannot create the folder of the index {self.path} ({exc.strerror or exc}); "
                    "point VAULT_INDEX_DB at a writable place"
                ) from exc
        self.db = self._connect()
        if not self.read_only and not recovery.sources_file(self.path).exists():
            self._save_sources(self.db)

    def _connect(self) -> sqlite3.Connection:
        """Open read-write, check, and fall back as the failure says (damaged, read-only, neither)."""
        try:
            db = _open(self.path, self.busy_timeout)
        except sqlite3.DatabaseError as exc:
            if recovery.is_damage(exc):
                return self._rebuild(exc)
            return self._connect_read_only(exc)
        try:
            recovery.quick_check(db, self.path)
        except sqlite3.DatabaseError as exc:
            db.close()
            if recovery.is_damage(exc):
                return self._rebuild(exc)
            raise
        # SQLite opens a file it cannot write (or whose -wal/-shm it cannot) read-only without a
        # word; say so now rather than at the first write.
        blocked = recovery.unwritable_part(self.path)
        if blocked:
            self._mark_read_only(blocked)
        return db

    def _mark_read_only(self, reason: str) -> None:
        self.read_only = reason
        self.notices.append(f"the index at {self.path} is read-only ({reason}): search works; "
                            "indexing and removing sources do not")

    def _connect_read_only(self, cause: sqlite3.DatabaseError) -> sqlite3.Connection:
        db, reason = recovery.open_read_only(self.path, cause, self.busy_timeout, len(MIGRATIONS))
        self._mark_read_only(reason)
        return db

    def _rebuild(self, damage: sqlite3.DatabaseError) -> sqlite3.Connection:
        """Move the damaged file aside, create a fresh index and register the old sources in it."""
        db, moved_to, sources = recovery.rebuild(self.path, damage, lambda: _open(self.path, self.busy_timeout))
        if moved_to is not None:  # None: another process had rebuilt it just now
            self.recovered_from = moved_to
            self.notices.append(recovery.rebuilt_notice(self.path, moved_to, str(damage), sources))
        return db

    def recover_now(self, damage: sqlite3.DatabaseError) -> None:
        """The index turned out damaged in the middle of a call: rebuild it at once."""
        try:
            self.db.close()
        except sqlite3.Error:
            pass
        self.db = self._rebuild(damage)
        self._chunk_count = None  # a new file: its generation says nothing about the old count

    def recovery_notice(self) -> str | None:
        """What a rebuild left for every later process to say, while the fresh index is empty."""
        if self.recovered_from is not None:
            return None  # this process already said it (self.notices)
        raw = self.get_meta("recovery")
        if not raw or self.db.execute("SELECT 1 FROM files LIMIT 1").fetchone():
            return None
        try:
            info = json.loads(raw)
            return recovery.rebuilt_notice(self.path, info["from"], info["why"], info["sources"], info["at"])
        except (ValueError, KeyError, TypeError):
            return None

    def close(self) -> None:
        self.db.close()
        if not self.read_only:
            # Trigger: closing checkpoints the WAL into the file, which changes its mtime. Why:
            # the next open (the edit hook's, on every edit) would pay a full quick_check again.
            # Outcome: the file was checked at open and only SQLite wrote to it since: still clean.
            recovery.remember_checked(self.path)

    def size_bytes(self) -> int:
        """The file and its WAL, as status reports them."""
        return sum(os.path.getsize(p) for p in (str(self.path), str(self.path) + "-wal") if os.path.exists(p))

    def embedding_lock(self):
        """A filelock beside the file: one embedder at a time (indexer._embedding_turn)."""
        from filelock import FileLock

        return FileLock(str(self.path) + ".embed.lock", mode=private.FILE_MODE)

    def open_vector_index(self, model: str) -> None:
        """None: the in-process indexes of engine/vectors.py search this store's vectors."""
        return None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise IndexReadOnlyError(recovery.read_only_message(self.path, self.read_only))
        try:
            with self.db:
                # Take the write lock up front: reads inside (a file's old id) stay valid until
                # commit even when another process indexes the same files at the same time.
                self.db.execute("BEGIN IMMEDIATE")
                yield self.db
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise IndexBusyError(
                    f"index {self.path} stayed locked by another process for "
                    f"{self.busy_timeout:g} s; try again when it has finished"
                ) from exc
            if recovery.is_read_only(exc):
                raise IndexReadOnlyError(recovery.read_only_message(self.path, str(exc))) from exc
            raise

    # --- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str, default: str = "") -> str:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """Bumped whenever chunks or vectors change; in-memory vector caches key on it."""
        return int(self.get_meta("generation", "0"))

    def bump_generation(self, db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT(key) "
            "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    # --- sources ----------------------------------------------------------------------------

    def sources(self) -> list[tuple[int, str]]:
        return list(self.db.execute("SELECT id, path FROM sources ORDER BY path"))

    def source_names(self) -> dict[str, str]:
        """name -> root path of every source."""
        return dict(self.db.execute("SELECT name, path FROM sources ORDER BY name"))

    def source_root(self, name: str) -> str:
        """The root path of the source called `name`; an unknown name lists the known ones."""
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
        """(checkout id, source id, root) of every checkout, on any machine (engine/checkouts.py)."""
        return checkouts.checkout_rows(self.db)

    def add_source(self, path: str, name: str | None = None, checkout: bool = False, scope: str = "") -> int:
        """Register `path` (already there: kept, renamed when `name` is given). A name another
        source uses is a UsageError unless `checkout` says this folder is another checkout of it;
        no name: the folder's base name, made unique (engine/checkouts.register). `scope`: the
        workspace a NEW source belongs to (ADR 0020); a source already there keeps its own."""
        with self.transaction() as db:
            known = db.execute("SELECT 1 FROM checkouts WHERE root = ?", (path,)).fetchone()
            source_id = checkouts.register(db, path, name, checkout, os.path.isfile(path))
            if not known and not checkout:
                db.execute("UPDATE sources SET scope = ? WHERE id = ?", (scope, source_id))
            # under the write lock, so concurrent writers leave the file with the last committed list
            self._save_sources(db)
        return source_id

    def _save_sources(self, db: sqlite3.Connection) -> None:
        recovery.save_sources(self.path, dict(db.execute("SELECT path, name FROM sources")), dict(db.execute(
            "SELECT c.root, s.name FROM checkouts c JOIN sources s ON s.id = c.source_id WHERE c.root != s.path")),
            dict(db.execute("SELECT path, scope FROM sources WHERE scope != ''")))

    def source_scopes(self) -> dict[str, str]:
        """Each source's path -> its workspace ('' personal, else the project's or vault's folder)."""
        return dict(self.db.execute("SELECT path, scope FROM sources"))

    def set_source_scope(self, path: str, scope: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE sources SET scope = ? WHERE path = ?", (scope, path))
            self._save_sources(db)

    def remove_source(self, path: str) -> int:
        """Unregister the source whose path, checkout root or name is `path`; a checkout of a source
        with others goes alone (engine/checkouts.drop_checkout). Returns the notes that left."""
        with self.transaction() as db:
            source_id, checkout_id = checkouts.target(db, path)
            if checkout_id is not None:
                removed = checkouts.drop_checkout(db, checkout_id, self._forget_note)
            else:
                root = db.execute("SELECT path FROM sources WHERE id = ?", (source_id,)).fetchone()[0]
                paths = [p for (p,) in db.execute("SELECT path FROM files WHERE source_id = ?", (source_id,))]
                for file_path in paths:
                    self._forget_note(db, file_path)
                checkouts.drop_source(db, source_id)
                db.execute("DELETE FROM sources WHERE id = ?", (source_id,))
                db.execute("DELETE FROM problems WHERE path = ? OR path LIKE ? ESCAPE '\\'", (root, _like_prefix(root)))
                removed = len(paths)
            self._save_sources(db)
            self.bump_generation(db)
        return removed

    # --- files and chunks -------------------------------------------------------------------

    def file_state(self, path: str) -> FileState | None:
        """The stored version of the note at `path` (mtime: of the copy that brought it in)."""
        row = self.db.execute(
            "SELECT id, mtime, size, hash FROM files WHERE path = ?", (path,)
        ).fetchone()
        return FileState(*row) if row else None

    def copy_state(self, checkout_id: int, path: str) -> checkouts.Copy | None:
        """What the checkout's copy of `path` was at its last look (engine/checkouts.py)."""
        return checkouts.copy_state(self.db, checkout_id, path)

    def file_paths(self, source_id: int, checkout_id: int | None = None) -> set[str]:
        """Every note of the source; with `checkout_id`, those that checkout had at its last look."""
        if checkout_id is not None:
            return checkouts.paths_of(self.db, checkout_id)
        return {p for (p,) in self.db.execute("SELECT path FROM files WHERE source_id = ?", (source_id,))}

    def record_copy(self, checkout_id: int, path: str, mtime: float, size: int, digest: str) -> None:
        """The checkout's copy is the stored content, or older: remember it, write nothing else."""
        with self.transaction() as db:
            checkouts.record_copy(db, checkout_id, path, mtime, size, digest)

    def replace_file(self, source_id: int, path: str, stat: tuple[float, int], digest: str, note, chunks,
                     checkout_id: int | None = None) -> bool:
        """Swap a file's rows for new ones in one transaction: readers see old or new, never half.

        With `checkout_id`, only when that checkout's copy may replace what is stored (a newer
        version or removal from another checkout wins: engine/checkouts.accept); False: nothing
        was written but the copy is recorded."""
        status = str(note.frontmatter.get("status") or "")
        frontmatter = json.dumps(_finite(note.frontmatter), default=str, ensure_ascii=False)
        with self.transaction() as db:
            if checkout_id is not None and not checkouts.accept(db, checkout_id, path, stat, digest):
                return False
            self._delete_file(db, path)
            cursor = db.execute(
                "INSERT INTO files(source_id, path, mtime, size, hash, title, tags, status, "
                "frontmatter, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (source_id, path, stat[0], stat[1], digest, note.title, json.dumps(list(note.tags)),
                 status, frontmatter, time.time()),
            )
            file_id = cursor.lastrowid
            for chunk in chunks:
                cid = db.execute(
                    "INSERT INTO chunks(file_id, ordinal, heading, line_start, line_end, text, hash) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (file_id, chunk.ordinal, chunk.heading, chunk.line_start, chunk.line_end,
                     chunk.text, chunk.hash),
                ).lastrowid
                db.execute(
                    "INSERT INTO chunks_fts(rowid, title, heading, body) VALUES (?,?,?,?)",
                    (cid, alias_title(note), chunk.heading, chunk.text),
                )
            self.bump_generation(db)
        return True

    def remove_copy(self, checkout_id: int, path: str) -> bool:
        """The checkout's copy of `path` is gone: the note leaves only if the index holds the very
        version that checkout had (engine/checkouts.remove_copy); True when it left."""
        with self.transaction() as db:
            removed = checkouts.remove_copy(db, checkout_id, path, self._forget_note)
            if removed:
                self.bump_generation(db)
        return removed

    def delete_file(self, path: str) -> None:
        """The note leaves the index for every checkout, whatever they hold."""
        with self.transaction() as db:
            self._forget_note(db, path)
            checkouts.forget(db, path)
            self.bump_generation(db)

    def _forget_note(self, db: sqlite3.Connection, path: str) -> None:
        self._delete_file(db, path)
        link_index.forget_note(db, path)

    def update_links(self, path: str, root: str, text: str, note, body_start: int | None = None) -> None:
        """Replace the links of an indexed note (after its chunks are written; engine/link_index.py)."""
        with self.transaction() as db:
            link_index.update_note(db, path, root, text, note.frontmatter, note.title, body_start)

    def links(self, query: str, path: str, **options) -> list[dict]:
        """A link-graph query of engine/link_index.py: backlinks, outgoing, neighbors or unresolved."""
        if query not in LINK_QUERIES:
            raise ValueError(f"unknown link query {query!r}")
        if query == "unresolved":
            return link_index.unresolved(self.db)
        return getattr(link_index, query)(self.db, path, **options)

    def _delete_file(self, db: sqlite3.Connection, path: str) -> None:
        row = db.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if not row:
            return
        db.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id = ?)", row)
        db.execute("DELETE FROM chunks WHERE file_id = ?", row)
        db.execute("DELETE FROM files WHERE id = ?", row)

    def record_problem(self, path: str, message: str | None) -> None:
        with self.transaction() as db:
            if message:
                db.execute("INSERT OR REPLACE INTO problems VALUES (?,?,?)", (path, message, time.time()))
            else:
                db.execute("DELETE FROM problems WHERE path = ?", (path,))

    def problems(self) -> list[tuple[str, str]]:
        return list(self.db.execute("SELECT path, message FROM problems ORDER BY path"))

    # --- embeddings -------------------------------------------------------------------------

    def chunks_missing_vectors(self, model: str, path: str | None = None) -> list[tuple[str, str, str, str]]:
        """(hash, title, heading, text) of every distinct chunk with no vector for `model`.

        With `path`, only that file's chunks: a single-file re-index must not scan the whole
        index (bench, 100k chunks: about 1 s for the full scan).
        """
        where, args = "e.hash IS NULL", [model]
        if path is not None:
            where += " AND f.path = ?"
            args.append(path)
        return list(
            self.db.execute(
                # The title as indexed (with aliases, chunks_fts), as chunk_note hashed it.
                "SELECT c.hash, MIN(t.title), MIN(c.heading), MIN(c.text) FROM chunks c "
                "JOIN files f ON f.id = c.file_id JOIN chunks_fts t ON t.rowid = c.id LEFT JOIN embeddings e "
                f"ON e.hash = c.hash AND e.model = ? WHERE {where} GROUP BY c.hash",
                args,
            )
        )

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
            return db.execute(
                "DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)"
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

    def vector_count(self, model: str) -> int:
        return self.db.execute(
            "SELECT COUNT(*) FROM chunks c JOIN embeddings e ON e.hash = c.hash AND e.model = ?",
            (model,),
        ).fetchone()[0]

    # --- reads ------------------------------------------------------------------------------

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


def _finite(value):
    """`value` with NaN and infinities (YAML `.nan`, `.inf`) as text: SQLite's JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _recovering(method):
    """Wrap a Store method: "malformed" at any time moves the damaged index aside and rebuilds it.

    Trigger: damage that quick_check at open could not see yet (or that came later). Why: the
    call cannot finish on a damaged file, and failing every later call is worse. Outcome: the
    call fails once with IndexRebuiltError saying what happened and what to run; the next
    sync fills the fresh index (its sources kept).
    """

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if self.read_only or not recovery.is_damage(exc):
                raise
            before = len(self.notices)
            self.recover_now(exc)
            if len(self.notices) == before:  # not damaged after all (or rebuilt by another process)
                raise
            raise IndexRebuiltError(self.notices[-1]) from exc

    return guarded


for _name, _method in list(vars(Store).items()):
    if not _name.startswith("_") and callable(_method) and _name not in ("close", "transaction", "recover_now"):
        setattr(Store, _name, _recovering(_method))


def _like_prefix(path: str) -> str:
    """A LIKE pattern (ESCAPE '\\') for everything below the folder `path`."""
    return path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"


def _is_busy(exc: Exception) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
