"""The write journal: a write's intent, recorded durably before it changes a file, and its answer after.

    intent (fsync'd) -> replace (or rename, rewrite links) -> re-index -> commit -> answer stored, intent gone

One SQLite file per vault, `.vault-index/requests.sqlite` (git-ignored, local), three tables:

- `journal`: the writes in flight. Each row names the request (the caller's identity and request
  id), the operation, every file it changes with the version before and after, and what a later
  process needs to finish it (who asked, why, the new text of each note a move rewrites). The row
  is written before the first file changes and removed, in the same transaction that stores the
  answer, once the write is re-indexed and committed. A row that outlives its writer is a write
  cut short: services/writes/recovery.py finishes it (or finds it never landed) on a retry with
  the same request id, on the next write of the vault, or when a server opens the vault.
- `requests`: each request id's answer, so a retry is answered without writing again.
- `rejections`: stale and lost-race writes, for the person to read.

Trigger: the answer used to be stored right after the replace, before the index and the commit.
A writer killed there left a change no commit held, and its retry answered `written` from that
record; a retry of a write killed before the record applied it a second time (issue 36).
Why: the file, the index and the commit are three places with no record tying them together.
Outcome: the journal row ties them, and it is on disk (fsync'd) before the file changes.
docs/adr/0035-write-journal.md says why here and not in the index or beside .git.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vault_index.engine.files.fileio import STATE_DIR
from vault_index.errors import VaultIndexError

REQUESTS_DB = "requests.sqlite"
FAULT_ENV = "VAULT_INDEX_FAULT_AT"  # tests: "replaced" kills the writer there, "replaced:0.2" sleeps 0.2 s
INTENT, UNCOMMITTED = "intent", "uncommitted"  # a row's state: cut short, or its commit failed
# a row whose commit failed (git's index.lock left behind) is tried again by ordinary writes at most
# this often: a broken repository must not cost every write a failing git call
RETRY_UNCOMMITTED_S = 60.0


class JournalError(VaultIndexError):
    """The journal could not be read or written (a symlink in its place, a broken file)."""


@dataclass(frozen=True)
class Intent:
    """One write in flight: enough for another process to finish it or to tell it never landed."""

    key: str  # the caller's identity and request id (WriteService._request_key)
    request_id: str
    operation: str
    paths: tuple[str, ...]  # every file it changes; a move: source, target, then the linking notes
    versions: dict[str, list[str | None]]  # rel -> [version before, version after]
    caller: tuple[str, str | None, str | None]  # identity, role, agent: the commit's author and trailers
    why: str
    commit: bool  # whether this write commits (the vault's rule, or update_file's commit=False)
    digest: str | None = None  # the request's digest: a retry must be the same request
    result: dict | None = None  # what the caller computed under the lock (a lesson id, an ADR number)
    texts: dict[str, str] = field(default_factory=dict)  # a move: the new text of each file it rewrites
    state: str = INTENT
    pid: int = 0
    at: float = 0.0


def checkpoint(step: str) -> None:
    """A named step of a write: the fault tests kill or stall the writer here (FAULT_ENV).

    Costs one environment lookup when unset. Steps: intent, replaced, renamed, rewritten,
    reindexed, committed (services/writes/write.py and move.py call them in that order).
    """
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    for item in wanted.split(","):
        name, _, pause = item.partition(":")
        if name == step:
            if pause:
                time.sleep(float(pause))
            else:
                os.kill(os.getpid(), signal.SIGKILL)


class RequestLog:
    """The journal, the answers to request ids and the rejected writes of one vault.

    SQLite in WAL mode under `.vault-index/` (git-ignored): it survives a restart and is shared by
    every process writing the vault. One connection per thread, kept open.

    Trigger: opening SQLite and declaring the tables cost ~20 ms a write on this machine.
    Why: the record is a stage inside the document lock, so it adds to every writer's wait.
    Outcome: connections are cached per thread. An intent is written with synchronous=FULL (the
    WAL fsync'd: on disk before the file it names changes); the rest with NORMAL, which a power cut
    can undo but a crash cannot. A lost answer is harmless: its row is still there, and finishing it
    again finds the file already written and the commit by its request-id trailer.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / STATE_DIR / REQUESTS_DB
        self._local = threading.local()

    def _connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is not None:
            return db
        if self.path.is_symlink():
            raise JournalError(f"{self.path} is a symlink; remove it (vault-index keeps its state there)")
        db = sqlite3.connect(self.path, timeout=15.0, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS requests (request_id TEXT PRIMARY KEY, path TEXT NOT NULL, "
                   "outcome TEXT NOT NULL, at REAL NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS rejections (at REAL NOT NULL, path TEXT NOT NULL, status TEXT NOT NULL, "
                   "request_id TEXT, caller TEXT, base_version TEXT, current_version TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS journal (request_key TEXT PRIMARY KEY, intent TEXT NOT NULL, "
                   "state TEXT NOT NULL, at REAL NOT NULL)")
        self._local.db = db
        return db

    def _exists(self) -> bool:
        return getattr(self._local, "db", None) is not None or self.path.exists()

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # --- answers ------------------------------------------------------------------------------

    def get(self, request_id: str) -> dict | None:
        if not self._exists():
            return None
        row = self._connect().execute("SELECT outcome FROM requests WHERE request_id = ?", (request_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, request_id: str, path: str, outcome: dict) -> None:
        self._connect().execute("INSERT OR REPLACE INTO requests VALUES (?, ?, ?, ?)",
                                (request_id, path, json.dumps(outcome), time.time()))

    # --- the journal --------------------------------------------------------------------------

    def begin(self, intent: Intent) -> None:
        """Record `intent` durably (before any file changes); replaces a row of the same key."""
        row = {**asdict(intent), "pid": os.getpid(), "at": time.time()}
        db = self._connect()
        db.execute("PRAGMA synchronous=FULL")  # this one transaction reaches the disk before we go on
        try:
            db.execute("INSERT OR REPLACE INTO journal VALUES (?, ?, ?, ?)", (intent.key, json.dumps(row), INTENT,
                                                                              row["at"]))
        finally:
            db.execute("PRAGMA synchronous=NORMAL")

    def finish(self, key: str, path: str, outcome: dict | None) -> None:
        """The write is done: its answer stored (None: none to store) and its intent removed, at once."""
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            if outcome is not None:
                db.execute("INSERT OR REPLACE INTO requests VALUES (?, ?, ?, ?)",
                           (key, path, json.dumps(outcome), time.time()))
            db.execute("DELETE FROM journal WHERE request_key = ?", (key,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def mark(self, key: str, state: str) -> None:
        """A row's new state; its time is now (an `uncommitted` row waits RETRY_UNCOMMITTED_S)."""
        self._connect().execute("UPDATE journal SET state = ?, at = ? WHERE request_key = ?", (state, time.time(), key))

    def drop(self, key: str) -> None:
        """The intent never landed (refused at the replace, a lost race): nothing to finish."""
        self._connect().execute("DELETE FROM journal WHERE request_key = ?", (key,))

    def intent(self, key: str) -> Intent | None:
        if not self._exists():
            return None
        row = self._connect().execute("SELECT intent, state FROM journal WHERE request_key = ?", (key,)).fetchone()
        return _intent(*row) if row else None

    def pending(self, uncommitted_before: float | None = None) -> list[Intent]:
        """The writes in flight or cut short, oldest first (normally none). `uncommitted_before`: of
        the rows whose commit failed, only those last tried before that time (None: all of them)."""
        if not self._exists():
            return []
        cutoff = float("inf") if uncommitted_before is None else uncommitted_before
        rows = self._connect().execute("SELECT intent, state FROM journal WHERE state = ? OR (state = ? AND at < ?) "
                                       "ORDER BY at", (INTENT, UNCOMMITTED, cutoff)).fetchall()
        return [_intent(*row) for row in rows]

    # --- rejections ---------------------------------------------------------------------------

    def reject(self, path: str, status: str, request_id: str | None, caller: str, base_version: str | None,
               current_version: str | None) -> None:
        self._connect().execute("INSERT INTO rejections VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (time.time(), path, status, request_id, caller, base_version, current_version))

    def rejections(self, path: str | None = None) -> list[dict]:
        if not self._exists():
            return []
        query = "SELECT at, path, status, request_id, caller, base_version, current_version FROM rejections"
        rows = self._connect().execute(query + (" WHERE path = ?" if path else "") + " ORDER BY at",
                                       (path,) if path else ())
        keys = ("at", "path", "status", "request_id", "caller", "base_version", "current_version")
        return [dict(zip(keys, row, strict=True)) for row in rows]


def _intent(text: str, state: str) -> Intent:
    data = json.loads(text)
    return Intent(**{**data, "paths": tuple(data["paths"]), "caller": tuple(data["caller"]), "state": state})
