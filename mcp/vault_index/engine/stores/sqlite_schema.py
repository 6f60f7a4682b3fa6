"""The SQLite index's schema as numbered migrations (m001, m002, ...) and how a file is opened:
connect with WAL, migrate under the write lock, wait out other processes that hold the file.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from vault_index.engine.files.source_names import fill_missing
from vault_index.engine.parsing import link_index
from vault_index.engine.stores.rows import BUSY_TIMEOUT_S
from vault_index.errors import (
    IndexBusyError,
)


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
    """The link graph (engine/parsing/link_index.py). Files indexed before it get mtime 0, so the next
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


# The tables of engine/files/checkouts.py (PostgreSQL's m002_checkouts makes the same ones).
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


def _is_busy(exc: Exception) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
