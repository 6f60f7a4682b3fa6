"""Telling damage from permission problems, and what survives a rebuild of the index.

The index is derived data, so a damaged one is replaced, never repaired in place. Two things
must not go wrong on the way (docs/adr/0009-index-recovery.md):
- a healthy index must never be moved aside because it could not be *written* (a read-only
  file, folder or mount, EACCES/EPERM): only SQLite's own verdicts "not a database" and
  "malformed" count as damage;
- the registered sources must survive: they are kept in `<db>.sources.json`, rewritten
  atomically whenever they change, and read back (with whatever the old file still yields)
  when a fresh index is made.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from vault_index.engine.files import private, source_names
from vault_index.errors import IndexUnavailableError

SOURCES_SUFFIX = ".sources.json"
# quick_check reads every page (about 2 ms per MB here): its verdict is remembered against the
# main file's size, mtime and inode, which change whenever pages are written (a checkpoint, a
# copy, a truncation), so a search on an unchanged index does not pay for it again.
CHECKED_SUFFIX = ".checked"
_SQLITE_CORRUPT, _SQLITE_NOTADB, _SQLITE_READONLY = 11, 26, 8


def is_damage(exc: BaseException) -> bool:
    """SQLite says the file is not an index or its pages are malformed; nothing else counts."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:  # SQLite's own code decides: "malformed JSON" is a plain SQLITE_ERROR
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def is_read_only(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF == _SQLITE_READONLY) or "readonly" in str(exc).lower()


def unwritable_part(db_path: Path) -> str | None:
    """Why an index that opened cannot be written: a read-only mount, file, -wal or -shm file."""
    try:
        if os.statvfs(db_path.parent).f_flag & os.ST_RDONLY:
            return f"{db_path.parent} is on a read-only file system"
    except (OSError, AttributeError):
        pass
    if db_path.exists() and not os.access(db_path, os.W_OK):
        return f"{db_path} is not writable"
    for suffix in ("-wal", "-shm"):
        part = Path(str(db_path) + suffix)
        if os.path.lexists(part) and (not part.is_file() or not os.access(part, os.R_OK | os.W_OK)):
            return f"{part} cannot be opened for reading and writing"
    return None


def why_read_only(db_path: Path, cause: BaseException) -> str:
    """The reason in the person's terms; SQLite's own words when nothing on disk explains it."""
    found = unwritable_part(db_path)
    if found:
        return found
    if not os.access(db_path.parent, os.W_OK):
        return f"its folder {db_path.parent} is not writable"
    return str(cause)


def read_only_message(db_path: Path, reason: str) -> str:
    return (f"the index at {db_path} is read-only: {reason}. Search works; to index or remove sources, "
            "make it writable or point VAULT_INDEX_DB at a writable place")


def connect_read_only(db_path: Path, flag: str, timeout: float) -> sqlite3.Connection:
    uri = f"file:{quote(str(db_path))}?{flag}"
    db = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
    db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # fails here, not in the first search
    return db


def _identity(db_path: Path) -> list[int] | None:
    try:
        info = db_path.stat()
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def quick_check(db: sqlite3.Connection, db_path: Path, remember: bool = True) -> None:
    """Raise sqlite3.DatabaseError ("malformed") when PRAGMA quick_check finds damage.

    A valid header says nothing about the pages behind it: without this, a damaged index
    opened fine and crashed status, index, search and the server start later.
    """
    marker = Path(str(db_path) + CHECKED_SUFFIX)
    identity = _identity(db_path)
    try:
        if identity is not None and json.loads(marker.read_text(encoding="utf-8")) == identity:
            return
    except (OSError, ValueError):
        pass
    rows = db.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        raise sqlite3.DatabaseError(f"database disk image is malformed (quick_check: {rows[0][0]})")
    if remember and identity is not None:
        _write_atomic(marker, json.dumps(identity))


def remember_checked(db_path: Path) -> None:
    """Record the file as checked as it is now (after writes made through SQLite only)."""
    identity = _identity(db_path)
    if identity is not None:
        _write_atomic(Path(str(db_path) + CHECKED_SUFFIX), json.dumps(identity))


def sources_file(db_path: Path) -> Path:
    return Path(str(db_path) + SOURCES_SUFFIX)


def save_sources(db_path: Path, sources: dict[str, str | None], checkouts: dict[str, str] | None = None,
                 scopes: dict[str, str] | None = None) -> None:
    """Best effort: a folder that cannot be written keeps the last list (the index says why).

    `sources` maps each registered path to its name (ADR 0012), so a rebuild keeps `--name`s;
    `checkouts` maps every further checkout's root to its source's name (ADR 0019); `scopes` each
    non-personal source's workspace (ADR 0020), so a rebuild never shows a project's notes everywhere."""
    paths = sorted(sources)
    names = {p: sources[p] for p in paths if sources[p]}
    data = {"sources": paths, "names": names, "checkouts": dict(sorted((checkouts or {}).items())),
            "scopes": dict(sorted((scopes or {}).items()))}
    _write_atomic(sources_file(db_path), json.dumps(data, indent=1, ensure_ascii=False))


def _load_map(db_path: Path, key: str) -> dict[str, str]:
    """The sources file's `key` object as str -> str (empty when absent, unreadable or malformed)."""
    try:
        data = json.loads(sources_file(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = data.get(key) if isinstance(data, dict) else None
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and k and isinstance(v, str)}


def load_checkouts(db_path: Path) -> dict[str, str]:
    """root -> source name of the further checkouts the sources file lists (none before ADR 0019)."""
    return _load_map(db_path, "checkouts")


def load_scopes(db_path: Path) -> dict[str, str]:
    """path -> workspace of the non-personal sources the sources file lists (none before ADR 0020)."""
    return _load_map(db_path, "scopes")


def load_sources(db_path: Path) -> dict[str, str | None]:
    """path -> name (None where the file, or an older one that listed paths only, names none)."""
    try:
        data = json.loads(sources_file(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = data.get("sources") if isinstance(data, dict) else None
    names = data.get("names") if isinstance(data, dict) else None
    names = names if isinstance(names, dict) else {}
    if not isinstance(found, list):
        return {}
    return {s: (names.get(s) if isinstance(names.get(s), str) else None)
            for s in found if isinstance(s, str) and s}


def _damaged_scopes(db_path: Path) -> dict[str, str]:
    """The workspaces the damaged index itself still yields (none when it is too damaged to read)."""
    try:
        old = sqlite3.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True, timeout=1)
        try:
            rows = list(old.execute("SELECT path, scope FROM sources WHERE scope != ''"))
        finally:
            old.close()
    except sqlite3.Error:
        return {}
    return {p: s for p, s in rows if isinstance(p, str) and isinstance(s, str)}


def recoverable_sources(db_path: Path) -> dict[str, str | None]:
    """The sources file's paths and names, plus what the damaged index itself still yields."""
    found = load_sources(db_path)
    try:
        old = sqlite3.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True, timeout=1)
        try:
            try:
                rows = list(old.execute("SELECT path, name FROM sources"))
            except sqlite3.OperationalError:  # an index from before source names (m004)
                rows = [(p, None) for (p,) in old.execute("SELECT path FROM sources")]
            for path, name in rows:
                if isinstance(path, str):
                    found[path] = found.get(path) or (name if isinstance(name, str) else None)
        finally:
            old.close()
    except sqlite3.Error:
        pass  # too damaged to read: the sources file is what we have
    return found


REBUILD_LOCK_WAIT_S = 60.0  # a rebuild moves three files and creates an empty index: well under a second


def rebuild_lock(db_path: Path):
    """One process at a time moves a damaged index aside (filelock: portable, maintained)."""
    from filelock import FileLock

    return FileLock(str(db_path) + ".rebuild.lock", timeout=REBUILD_LOCK_WAIT_S, mode=private.FILE_MODE)


def still_damaged(db_path: Path, timeout: float) -> bool:
    """Re-check under the rebuild lock: another process may have rebuilt the index meanwhile.

    Without this, the second of two processes that found the same damage moved the first one's
    fresh index aside while the first went on writing into it.
    """
    try:
        db = sqlite3.connect(str(db_path), timeout=timeout, check_same_thread=False)
    except sqlite3.Error:
        return True
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
        return rows != [("ok",)]
    except sqlite3.DatabaseError as exc:
        return is_damage(exc)
    finally:
        db.close()


def open_read_only(db_path: Path, cause: sqlite3.DatabaseError, timeout: float,
                   schema_version: int) -> tuple[sqlite3.Connection, str]:
    """(connection, why it is read-only) for an index that cannot be opened for writing.

    mode=ro first; where SQLite cannot even create the WAL's shared-memory file (a read-only
    folder or mount), immutable=1: nothing can write there, so nothing changes under us.
    """
    failure: Exception = cause
    for flag in ("mode=ro", "immutable=1"):
        db = None
        try:
            db = connect_read_only(db_path, flag, timeout)
            if db.execute("PRAGMA user_version").fetchone()[0] < schema_version:
                db.close()
                raise IndexUnavailableError(
                    f"the index at {db_path} is read-only and from an older version; "
                    "open it once with write access (`vault-index status`) to upgrade it"
                )
            quick_check(db, db_path, remember=False)
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            if is_damage(exc):
                raise IndexUnavailableError(
                    f"the index at {db_path} is damaged ({exc}) and cannot be replaced ({cause}); "
                    "delete it or make its folder writable, then run `vault-index index`"
                ) from exc
            failure = exc
            continue
        return db, why_read_only(db_path, cause)
    raise IndexUnavailableError(
        f"the index at {db_path} cannot be opened ({cause}; read-only: {failure}). Nothing was moved "
        f"or deleted: check the permissions of {db_path.parent} and of the index and its -wal/-shm files"
    ) from cause


def rebuild(db_path: Path, damage: sqlite3.DatabaseError,
            open_fresh: Callable[[], sqlite3.Connection]) -> tuple[sqlite3.Connection, Path | None, int]:
    """(fresh connection, where the damaged file went, sources kept); None: another process rebuilt it."""
    try:
        with rebuild_lock(db_path):
            if db_path.exists() and not still_damaged(db_path, REBUILD_LOCK_WAIT_S):
                return open_fresh(), None, 0
            sources = recoverable_sources(db_path)
            extra = load_checkouts(db_path)
            scopes = {**_damaged_scopes(db_path), **load_scopes(db_path)}
            try:
                moved_to = _move_aside(db_path)
            except OSError as exc:
                raise IndexUnavailableError(
                    f"the index at {db_path} is damaged ({damage}) and cannot be moved aside "
                    f"({exc.strerror or exc}); delete it or fix the folder's permissions, then run `vault-index index`"
                ) from exc
            db = open_fresh()
            with db:
                db.execute("BEGIN IMMEDIATE")
                taken: set[str] = set()
                for source, name in sorted(sources.items()):
                    # a name is kept when it is still valid and unique; fill_missing names the rest
                    keep = name if name and source_names.SOURCE_NAME.fullmatch(name) and name not in taken else None
                    taken.add(keep or "")
                    db.execute("INSERT OR IGNORE INTO sources(path, added_at, name) VALUES (?, ?, ?)",
                               (source, time.time(), keep))
                source_names.fill_missing(db)
                # every source's folder is its first checkout; further checkouts join by name
                db.execute("INSERT INTO checkouts(source_id, root, added_at) SELECT id, path, added_at FROM sources")
                for path, scope in sorted(scopes.items()):
                    db.execute("UPDATE sources SET scope = ? WHERE path = ?", (scope, path))
                for root, name in sorted(extra.items()):
                    db.execute("INSERT OR IGNORE INTO checkouts(source_id, root, added_at) "
                               "SELECT id, ?, ? FROM sources WHERE name = ?", (root, time.time(), name))
                db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('recovery', ?)", (json.dumps({
                    "from": str(moved_to), "at": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "why": str(damage), "sources": len(sources)}),))
                # a generation no cache of the old file can hold (caches key on the generation)
                db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('generation', ?)",
                           (str(time.time_ns() // 1000),))
            save_sources(db_path, sources, extra, {p: s for p, s in scopes.items() if s and p in sources})
            return db, moved_to, len(sources)
    except OSError as exc:  # the lock file beside the index cannot be made or taken
        raise IndexUnavailableError(
            f"the index at {db_path} is damaged ({damage}) and could not be rebuilt ({exc}); "
            "delete it, then run `vault-index index`"
        ) from exc


def _move_aside(db_path: Path) -> Path:
    """Rename the file and its -wal/-shm to `<db>.corrupt-<time>`; kept for inspection."""
    target = db_path.with_name(f"{db_path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        part = Path(str(db_path) + suffix)
        if part.exists():
            part.rename(Path(str(target) + suffix))
    return target


def rebuilt_notice(db_path: Path, old: object, why: str, sources: int, at: str | None = None) -> str:
    when = f" at {at}" if at else ""
    return (f"the index at {db_path} was damaged ({why}) and rebuilt{when}; the old file is at {old}. "
            f"{sources} registered source(s) were kept: run `vault-index index` (or index_paths with no "
            "paths) to index them again")


def _write_atomic(path: Path, text: str) -> None:
    try:  # 0600 whatever the umask: the sources list names every indexed folder
        private.write_private_text(path, text)
    except OSError:
        pass
