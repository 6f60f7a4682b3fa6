"""Provenance that travels with the repository: one git commit per write, read back with its trailers.

A write is committed with `git commit --only -- ':(literal)<path>'`, so files someone else staged
stay staged and out of the commit, and a path with glob characters means itself. The author is
the caller; trailers carry what git has no field for:

    Vault-Agent: claude-code           (the agent's own claim: recorded, not trusted)
    Vault-Role: analyst
    Vault-Request-Id: 7f3c...          (a retry with this id is answered from the first outcome)
    Vault-Operation: replace

`history(root, path)` reads them back with `git log`, following the note's renames. Request ids and rejected (stale)
writes are also kept in a small SQLite file under `.vault-index/` (git-ignored, local) so a
retry after a restart is answered without writing again, even where commits are off.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

from vault_index.engine.files.fileio import STATE_DIR
from vault_index.errors import VaultIndexError
from vault_index.services.vault.safe_git import git_argv  # the repository's hooks, fsmonitor and filters never run

TRAILERS = ("Vault-Agent", "Vault-Role", "Vault-Request-Id", "Vault-Operation")
GIT_TIMEOUT_S = 30.0
MAX_HISTORY = 500
MAX_RENAMES_FOLLOWED = 50  # a note moved more often than this shows its history from the 50th move on
REQUESTS_DB = "requests.sqlite"
_IDENTITY = re.compile(r"^\s*(?P<name>[^<>]*?)\s*(?:<(?P<email>[^<>]*)>)?\s*$")


class ProvenanceError(VaultIndexError):
    """git refused or failed a commit or a log; the write itself has already happened."""


def repo_root(root: Path) -> Path | None:
    """The git work tree holding `root`, or None (a `.git` folder or file in it or an ancestor)."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return None


def split_identity(identity: str) -> tuple[str, str]:
    """'Name <email>' -> (name, email); a bare name gets name@localhost."""
    one_line = " ".join(identity.split())
    match = _IDENTITY.match(one_line)
    name = (match["name"] if match else "") or "vault-index"
    email = (match["email"] if match and match["email"] else f"{re.sub(r'[^A-Za-z0-9._-]+', '.', name)}@localhost")
    return name, email


def _line(value: str | None) -> str:
    return " ".join(str(value or "-").split())[:200] or "-"


def commit(root: Path, rel: str, *, identity: str, agent: str | None, role: str | None, request_id: str,
           operation: str, why: str) -> str:
    """Commit the file `rel` (relative to `root`) alone; returns the commit id. Raises ProvenanceError."""
    name, email = split_identity(identity)
    env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
           "GIT_COMMITTER_EMAIL": email, "GIT_TERMINAL_PROMPT": "0"}
    subject = _line(f"vault: {operation} {rel}")[:120]
    trailers = "\n".join(f"{key}: {_line(value)}" for key, value in zip(
        TRAILERS, (agent, role, request_id, operation), strict=True))
    message = f"{subject}\n\n{why.strip()}\n\n{trailers}\n" if why and why.strip() else f"{subject}\n\n{trailers}\n"
    spec = f":(literal){rel}"
    _git(root, env, "add", "--", spec)
    try:
        _git(root, env, "-c", "commit.gpgsign=false", "commit", "--only", "--quiet", "--no-edit", "-F", "-", "--",
             spec, stdin=message)
    except ProvenanceError:
        # the change must not wait staged for the person's next commit, under their name
        with contextlib.suppress(ProvenanceError):
            _git(root, env, "reset", "--quiet", "--", spec)
        raise
    return _git(root, env, "rev-parse", "HEAD").strip()


def _git(root: Path, env: dict, *args: str, stdin: str | None = None) -> str:
    try:
        done = subprocess.run(git_argv(root, *args), input=stdin, capture_output=True,
                              text=True, env=env, timeout=GIT_TIMEOUT_S, check=False)
    except FileNotFoundError as exc:
        raise ProvenanceError("git is not installed; install it or set git.commit: false") from exc
    except subprocess.TimeoutExpired as exc:
        raise ProvenanceError(f"git {args[0]} took over {GIT_TIMEOUT_S:g} s") from exc
    if done.returncode != 0:
        detail = " ".join((done.stderr or done.stdout).split())[:300]
        raise ProvenanceError(f"git {' '.join(a for a in args if not a.startswith(':('))[:60]} failed: {detail}")
    return done.stdout


def history(root: Path, rel: str, limit: int = MAX_HISTORY) -> list[dict]:
    """Commits that touched `rel` (following its renames), newest first, with their vault trailers.

    Trigger: the log was split on \x1e/\x1f and trailers found with a regex over the message, so
    a reason holding those characters forged whole commits (issue 22).
    Why: no commit message, name or e-mail can hold a NUL byte (git refuses one), so NUL-separated
    fields in a fixed count cannot be shifted by what a writer typed; git itself parses the trailers.
    Outcome: `git log -z` with one NUL-separated field per item, the trailers from `%(trailers:key=...)`
    (only the message's final trailer block counts, as git reads it), the free text only as `why`.

    Trigger: `git log --follow` looks for copies too (it finds copies harder), so a new note made
    from the same template as an older one was taken for a copy of it and showed that note's
    commits as its own (issue 39). Outcome: no --follow. The history runs back to the commit that
    made the file (a file that once bore the name before it is another note); where that commit
    renamed another file to it (a move: a deletion and an addition in one commit, never a copy),
    it goes on with the old name from before that commit.
    """
    entries: list[dict] = []
    path, start = rel, "HEAD"
    for _ in range(MAX_RENAMES_FOLLOWED):
        made = _made_in(root, path, start)
        found = _log(root, path, start, limit - len(entries))
        if made is not None:
            found = found[: next((i + 1 for i, e in enumerate(found) if e["commit"] == made), len(found))]
        entries += found
        if made is None or len(entries) >= limit or not found or found[-1]["commit"] != made:
            break
        path = _renamed_from(root, made, path)
        if path is None:
            break
        start = f"{made}^"
    return entries


def _made_in(root: Path, rel: str, start: str) -> str | None:
    """The newest commit up to `start` that added `rel` (a rename counts as an addition here)."""
    out = _git(root, dict(os.environ), "log", "--no-renames", "--diff-filter=A", "-1", "--format=%H", start,
               "--", f":(literal){rel}")
    return out.strip() or None


def _log(root: Path, rel: str, start: str, limit: int) -> list[dict]:
    trailer_fields = [f"%(trailers:key={key},valueonly,separator=%x20,unfold)" for key in TRAILERS]
    fields = ["%H", "%an", "%ae", "%aI", "%s", *trailer_fields, "%(trailers:only,unfold)", "%b"]
    out = _git(root, dict(os.environ), "log", "-z", f"--max-count={limit}", "--format=" + "%x00".join(fields),
               start, "--", f":(literal){rel}")
    values = out.split("\0")
    width = len(fields)
    entries = []
    for first in range(0, len(values) - width + 1, width):
        commit_id, name, email, when, subject, *rest = (v.strip("\n") for v in values[first:first + width])
        trailers = dict(zip(TRAILERS, (v.strip() or None for v in rest[:len(TRAILERS)]), strict=True))
        block, body = rest[len(TRAILERS)], rest[len(TRAILERS) + 1]
        why = body.strip()
        if block.strip() and why.endswith(block.strip()):
            why = why[: -len(block.strip())].strip()
        entries.append({
            "commit": commit_id.strip(), "author": f"{name} <{email}>", "date": when, "subject": subject, "why": why,
            "agent": trailers["Vault-Agent"], "role": trailers["Vault-Role"],
            "request_id": trailers["Vault-Request-Id"], "operation": trailers["Vault-Operation"],
        })
    return entries


def _renamed_from(root: Path, commit: str, rel: str) -> str | None:
    """The path `commit` renamed to `rel` (renames only, never copies), else None.

    Paths are relative to `root` (`--relative`), as `rel` is; a merge or root commit renames nothing here."""
    out = _git(root, dict(os.environ), "diff-tree", "-z", "-r", "-M", "--relative", "--name-status",
               "--no-commit-id", "--root", commit)
    items = out.split("\0")
    index = 0
    while index < len(items) - 1:
        status = items[index]
        if status[:1] in ("R", "C"):
            before, after = items[index + 1], items[index + 2] if index + 2 < len(items) else ""
            if status[0] == "R" and after == rel:
                return before
            index += 3
        else:
            index += 2
    return None


class RequestLog:
    """Request ids already answered (so a retry is a no-op) and rejected stale writes, per vault.

    SQLite in WAL mode under `.vault-index/` (git-ignored): it survives a restart and is shared by
    every process writing the vault. One connection per thread, kept open.

    Trigger: opening SQLite and declaring the tables cost ~20 ms a write on this machine.
    Why: the record is a stage inside the document lock, so it adds to every writer's wait.
    Outcome: connections are cached per thread; synchronous=NORMAL (WAL) gives up only the last
    records on a power cut (a retry then writes again), never on a process crash.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / STATE_DIR / REQUESTS_DB
        self._local = threading.local()

    def _connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is not None:
            return db
        if self.path.is_symlink():
            raise ProvenanceError(f"{self.path} is a symlink; remove it (vault-index keeps its state there)")
        db = sqlite3.connect(self.path, timeout=15.0, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS requests (request_id TEXT PRIMARY KEY, path TEXT NOT NULL, "
                   "outcome TEXT NOT NULL, at REAL NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS rejections (at REAL NOT NULL, path TEXT NOT NULL, status TEXT NOT NULL, "
                   "request_id TEXT, caller TEXT, base_version TEXT, current_version TEXT)")
        self._local.db = db
        return db

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    def get(self, request_id: str) -> dict | None:
        if getattr(self._local, "db", None) is None and not self.path.exists():
            return None
        row = self._connect().execute("SELECT outcome FROM requests WHERE request_id = ?", (request_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, request_id: str, path: str, outcome: dict) -> None:
        self._connect().execute("INSERT OR REPLACE INTO requests VALUES (?, ?, ?, ?)",
                                (request_id, path, json.dumps(outcome), time.time()))

    def reject(self, path: str, status: str, request_id: str | None, caller: str, base_version: str | None,
               current_version: str | None) -> None:
        self._connect().execute("INSERT INTO rejections VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (time.time(), path, status, request_id, caller, base_version, current_version))

    def rejections(self, path: str | None = None) -> list[dict]:
        if getattr(self._local, "db", None) is None and not self.path.exists():
            return []
        query = "SELECT at, path, status, request_id, caller, base_version, current_version FROM rejections"
        rows = self._connect().execute(query + (" WHERE path = ?" if path else "") + " ORDER BY at",
                                       (path,) if path else ())
        keys = ("at", "path", "status", "request_id", "caller", "base_version", "current_version")
        return [dict(zip(keys, row, strict=True)) for row in rows]
