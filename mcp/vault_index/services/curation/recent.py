"""Recent activity: which notes changed lately, newest first (basic-memory's recent_activity).

Where the folder is in a git repository the answer comes from git: the commits of the last N days
(or the last N commits) that touched a note, plus the notes changed and not yet committed (a
person's own edits, marked `uncommitted`, dated by their mtime). Elsewhere (a plain folder that is
not a repository) it is the files' modification times. Each note appears once, at its newest
change; notes since deleted are left out, and so is every note the caller may not read.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from vault_index.services.vault.safe_git import git_argv
from vault_index.services.writes import provenance

DEFAULT_DAYS = 7
MAX_RECENT = 200
GIT_TIMEOUT_S = 30.0


def recent_activity(root: Path, can_read: Callable[[str], bool], *, days: int | None = None,
                    commits: int | None = None, limit: int = 50,
                    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)) -> list[dict]:
    """[{path, date, source: git|uncommitted|mtime, commit, author, subject}], newest first.

    `commits` (git only) counts commits back from HEAD; otherwise `days` (default 7) back from now.
    `can_read(absolute path)` is the caller's read scope (services/access/access.py).
    """
    root = Path(root)
    limit = max(1, min(limit, MAX_RECENT))
    since = now() - dt.timedelta(days=days if days is not None else DEFAULT_DAYS)
    if provenance.repo_root(root) is not None:
        found = _uncommitted(root, since if commits is None else None) + _from_git(root, since, commits)
    else:
        found = _from_mtime(root, since)
    seen: dict[str, dict] = {}
    for entry in sorted(found, key=lambda e: e["date"], reverse=True):
        path = entry["path"]
        if path in seen or not path.endswith(".md") or not (root / path).is_file() or not can_read(str(root / path)):
            continue
        seen[path] = entry
        if len(seen) >= limit:
            break
    return list(seen.values())


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(git_argv(root, *args), capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _from_git(root: Path, since: dt.datetime, commits: int | None) -> list[dict]:
    """Notes added or changed by the commits in the window (`--relative`: paths below `root`)."""
    window = [f"-n{commits}"] if commits else [f"--since={since.isoformat()}"]
    out = _git(root, "log", *window, "--no-renames", "--diff-filter=d", "--relative", "--name-only",
               "--format=%x1e%H%x1f%aI%x1f%an <%ae>%x1f%s", "--", ".")
    found = []
    for record in out.split("\x1e")[1:]:
        head, _, names = record.partition("\n")
        commit, when, author, subject = (head.split("\x1f") + ["", "", "", ""])[:4]
        for name in filter(None, names.split("\n")):
            found.append({"path": name, "date": _utc(when), "source": "git", "commit": commit, "author": author,
                          "subject": subject})
    return found


def _uncommitted(root: Path, since: dt.datetime | None) -> list[dict]:
    """Notes changed in the work tree and not committed (modified, added, untracked), by mtime."""
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    prefix = _git(root, "rev-parse", "--show-prefix").strip()
    found = []
    for item in filter(None, out.split("\0")):
        code, name = item[:2], item[3:]
        if "D" in code or len(item) < 4:
            continue
        rel = name[len(prefix):] if prefix and name.startswith(prefix) else name
        entry = _mtime_entry(root, rel, "uncommitted")
        if entry and (since is None or entry["date"] >= since.isoformat(timespec="seconds")):
            found.append(entry)
    return found


def _from_mtime(root: Path, since: dt.datetime) -> list[dict]:
    from vault_index.services.vault.walk import note_paths

    found = []
    for rel in note_paths(root):
        entry = _mtime_entry(root, rel, "mtime")
        if entry and entry["date"] >= since.isoformat(timespec="seconds"):
            found.append(entry)
    return found


def _mtime_entry(root: Path, rel: str, source: str) -> dict | None:
    try:
        stamp = os.stat(root / rel, follow_symlinks=False).st_mtime
    except OSError:
        return None
    when = dt.datetime.fromtimestamp(stamp, dt.timezone.utc).isoformat(timespec="seconds")
    return {"path": rel, "date": when, "source": source, "commit": None, "author": None, "subject": None}


def _utc(when: str) -> str:
    """An ISO date from git as UTC, so git and mtime entries sort together."""
    try:
        return dt.datetime.fromisoformat(when).astimezone(dt.timezone.utc).isoformat(timespec="seconds")
    except ValueError:
        return when
