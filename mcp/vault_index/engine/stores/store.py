"""The SQLite index: one file (WAL), FTS5 for keywords, vectors as blobs keyed by content hash.

Everything here is derived from the notes and can be rebuilt: a damaged index is moved aside and
a fresh one made with the same sources, never "repaired" in place; an index that cannot be
written is opened read-only (engine/stores/recovery.py, docs/adr/0009-index-recovery.md).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vault_index import locations
from vault_index.engine.files import checkouts, private
from vault_index.engine.parsing import link_index
from vault_index.engine.parsing.parse import alias_title
from vault_index.engine.stores import recovery
from vault_index.engine.stores import rows as sql_rows
from vault_index.engine.stores.fts_stage import FtsStage
from vault_index.engine.stores.rows import BUSY_TIMEOUT_S, LINK_QUERIES, FileState, _finite, _like_prefix
from vault_index.engine.stores.sqlite_reads import SqliteReads
from vault_index.engine.stores.sqlite_schema import MIGRATIONS, _is_busy, _open
from vault_index.engine.stores.sqlite_vectors import SqliteVectors
from vault_index.errors import (
    IndexBusyError,
    IndexReadOnlyError,
    IndexRebuiltError,
    IndexUnavailableError,
    NotFoundError,
)


class _Batch:
    """Store.batch's state: whether its transaction has begun (at its first write), and its
    keyword rows, written at its end (engine/stores/fts_stage.py)."""

    def __init__(self):
        self.open = False
        self.fts = FtsStage()


class Store(SqliteReads, SqliteVectors):
    """A connection to the index file. One per process and use case; not shared across threads.

    Opening never loses the registered sources and never takes a permission problem for damage
    (docs/adr/0009-index-recovery.md): a damaged index (SQLite says "not a database" or
    "malformed", at open through quick_check or later in any call) is moved aside and recreated
    with its sources; an index that cannot be written is opened read-only; one that cannot be
    opened at all is left where it is, with an error that says why.

    The contract it shares with the PostgreSQL store is engine/stores/store_contract.IndexStore.
    """

    kind = "sqlite"
    database_errors: tuple[type[BaseException], ...] = (sqlite3.DatabaseError,)
    vector_backend: str | None = None  # the settings choose: numpy or sqlite-vec (engine/embedding/vectors.py)

    def __init__(self, path: Path, busy_timeout: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.location = str(self.path)
        self.busy_timeout = busy_timeout
        self.recovered_from: Path | None = None
        self.read_only: str | None = None  # why writes are refused, when they are
        self.notices: list[str] = []
        self._chunk_count: tuple[str, int] | None = None  # (generation, count): chunk_count()
        self._batch: _Batch | None = None  # inside batch(): transactions are savepoints of one
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
        if self._batch is not None:
            self._batch.open = False  # its transaction went with the damaged file
            self._batch.fts = FtsStage()
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
        """None: the in-process indexes of engine/embedding/vectors.py search this store's vectors."""
        return None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise IndexReadOnlyError(recovery.read_only_message(self.path, self.read_only))
        try:
            if self._batch is not None:
                with self._savepoint(self._batch) as db:
                    yield db
                return
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

    @contextmanager
    def batch(self) -> Iterator[None]:
        """The transactions made inside commit together, once, at the end.

        Trigger: a sync committed three times per note (its rows, its links, its problem line).
        Why: each commit writes WAL frames and makes FTS5 flush a segment; a keyword index of
        many small notes spent more on commits than on inserting their text (issue 26).
        Outcome: each transaction inside is a savepoint (a failure still undoes that one
        transaction, whole); the write lock is taken at the first and held to the end, so the
        caller keeps a batch short (the indexer writes notes it has already parsed). Keyword
        rows go into FTS5 just before the commit (a savepoint would flush them as a segment).
        """
        if self._batch is not None or self.read_only:
            yield
            return
        self._batch = batch = _Batch()
        try:
            yield
        finally:
            self._batch = None
            if batch.open:
                try:
                    if self.db.in_transaction:  # else SQLite rolled it back whole, its staged rows with it
                        batch.fts.write(self.db)
                    self.db.commit()  # every savepoint inside was released or rolled back: whole ones only
                except BaseException:
                    self.db.rollback()
                    raise

    @contextmanager
    def _savepoint(self, batch: _Batch) -> Iterator[sqlite3.Connection]:
        if not batch.open or not self.db.in_transaction:
            # the batch's first write, or SQLite rolled its transaction back whole (disk full, I/O
            # error): the rows staged for it are gone with it, and a savepoint alone would commit
            batch.fts = FtsStage()
            self.db.execute("BEGIN IMMEDIATE")
            batch.open = True
        self.db.execute("SAVEPOINT step")
        mark = batch.fts.mark()
        try:
            yield self.db
        except BaseException:
            batch.fts.undo(mark)
            self.db.execute("ROLLBACK TO step")
            self.db.execute("RELEASE step")
            raise
        self.db.execute("RELEASE step")

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

    def source_stats(self, model: str = "") -> list[dict]:
        return sql_rows.source_stat_rows(self.db.execute(sql_rows.SOURCE_STATS, (model,)))

    def file_stats(self, model: str = "") -> list[dict]:
        return sql_rows.file_stat_rows(self.db.execute(sql_rows.FILE_STATS, (model,)))

    def checkouts(self) -> list[tuple[int, int, str]]:
        """(checkout id, source id, root) of every checkout, on any machine (engine/files/checkouts.py)."""
        return checkouts.checkout_rows(self.db)

    def add_source(self, path: str, name: str | None = None, checkout: bool = False, scope: str = "") -> int:
        """Register `path` (already there: kept, renamed when `name` is given). A name another
        source uses is a UsageError unless `checkout` says this folder is another checkout of it;
        no name: the folder's base name, made unique (engine/files/checkouts.register). `scope`: the
        workspace a NEW source belongs to (ADR 0020); a source already there keeps its own."""
        with self.transaction() as db:
            known = db.execute("SELECT 1 FROM checkouts WHERE root = ?", (path,)).fetchone()
            source_id = checkouts.register(db, path, name, checkout, os.path.isfile(path), scope)
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
        with others goes alone (engine/files/checkouts.drop_checkout). Returns the notes that left."""
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
        """What the checkout's copy of `path` was at its last look (engine/files/checkouts.py)."""
        return checkouts.copy_state(self.db, checkout_id, path)

    def copy_states(self, checkout_id: int) -> dict[str, checkouts.Copy]:
        """Every copy the checkout recorded at its last looks, by path."""
        return checkouts.copy_states(self.db, checkout_id)

    def file_paths(self, source_id: int) -> set[str]:
        """Every note of the source."""
        return {p for (p,) in self.db.execute("SELECT path FROM files WHERE source_id = ?", (source_id,))}

    def record_copy(self, checkout_id: int, path: str, mtime: float, size: int, digest: str) -> None:
        """The checkout's copy is the stored content, or older: remember it, write nothing else."""
        with self.transaction() as db:
            checkouts.record_copy(db, checkout_id, path, mtime, size, digest)

    def replace_file(self, source_id: int, path: str, stat: tuple[float, int], digest: str, note, chunks,
                     checkout_id: int | None = None) -> bool:
        """Swap a file's rows for new ones in one transaction: readers see old or new, never half.

        With `checkout_id`, only when that checkout's copy may replace what is stored (a newer
        version or removal from another checkout wins: engine/files/checkouts.accept); False: nothing
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
            title = alias_title(note)
            for chunk in chunks:
                cid = db.execute(
                    "INSERT INTO chunks(file_id, ordinal, heading, line_start, line_end, text, hash) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (file_id, chunk.ordinal, chunk.heading, chunk.line_start, chunk.line_end,
                     chunk.text, chunk.hash),
                ).lastrowid
                self._fts_insert(db, (cid, title, chunk.heading, chunk.text))
            self.bump_generation(db)
        return True

    def remove_copy(self, checkout_id: int, path: str) -> bool:
        """The checkout's copy of `path` is gone: the note leaves only if the index holds the very
        version that checkout had (engine/files/checkouts.remove_copy); True when it left."""
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
        """Replace the links of an indexed note (after its chunks are written; engine/parsing/link_index.py)."""
        with self.transaction() as db:
            link_index.update_note(db, path, root, text, note.frontmatter, note.title, body_start)

    def links(self, query: str, path: str, **options) -> list[dict]:
        """A link-graph query of engine/parsing/link_index.py: backlinks, outgoing, neighbors or unresolved."""
        if query not in LINK_QUERIES:
            raise ValueError(f"unknown link query {query!r}")
        if query == "unresolved":
            return link_index.unresolved(self.db)
        return getattr(link_index, query)(self.db, path, **options)

    def _delete_file(self, db: sqlite3.Connection, path: str) -> None:
        row = db.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if not row:
            return
        if self._batch is not None:
            self._batch.fts.delete(rowid for (rowid,) in db.execute("SELECT id FROM chunks WHERE file_id = ?", row))
        else:
            db.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id = ?)", row)
        db.execute("DELETE FROM chunks WHERE file_id = ?", row)
        db.execute("DELETE FROM files WHERE id = ?", row)

    def _fts_insert(self, db: sqlite3.Connection, row: tuple) -> None:
        if self._batch is not None:
            self._batch.fts.insert(row)  # written at the batch's end (engine/stores/fts_stage.py)
        else:
            db.execute("INSERT INTO chunks_fts(rowid, title, heading, body) VALUES (?,?,?,?)", row)

    def record_problem(self, path: str, message: str | None) -> None:
        with self.transaction() as db:
            if message:
                db.execute("INSERT OR REPLACE INTO problems VALUES (?,?,?)", (path, message, time.time()))
            else:
                db.execute("DELETE FROM problems WHERE path = ?", (path,))

    def problems(self) -> list[tuple[str, str]]:
        return list(self.db.execute("SELECT path, message FROM problems ORDER BY path"))

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


# Every public method, the mixins' too (inspect.getattr_static: the function as its class defines it).
for _name in sorted({name for cls in Store.__mro__[:-1] for name in vars(cls)}):
    _method = inspect.getattr_static(Store, _name)
    if not _name.startswith("_") and callable(_method) and _name not in ("close", "transaction", "recover_now",
                                                                         "batch"):
        setattr(Store, _name, _recovering(_method))
