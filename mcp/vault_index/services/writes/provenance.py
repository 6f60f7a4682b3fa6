"""Provenance that travels with the repository: one git commit per write, read back with its trailers.

A write is committed with `git commit --only -- ':(literal)<path>'`, so files someone else staged
stay staged and out of the commit, and a path with glob characters means itself. The author is
the caller; trailers carry what git has no field for:

    Vault-Agent: claude-code           (the agent's own claim: recorded, not trusted)
    Vault-Role: analyst
    Vault-Request-Id: 7f3c...          (a retry with this id is answered from the first outcome)
    Vault-Operation: replace

`history(root, path)` reads them back with `git log`, following the note's renames (never copies),
and `request_commit` finds the commit of one request id (how a write cut short learns whether
its commit landed). Request ids, the writes in flight and rejected (stale) writes are kept in
services/writes/journal.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path

from vault_index.errors import VaultIndexError
from vault_index.services.vault.safe_git import git_argv  # the repository's hooks, fsmonitor and filters never run

TRAILERS = ("Vault-Agent", "Vault-Role", "Vault-Request-Id", "Vault-Operation")
GIT_TIMEOUT_S = 30.0
MAX_HISTORY = 500
MAX_RENAMES_FOLLOWED = 50  # a note moved more often than this shows its history from the 50th move on
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


def commit_many(root: Path, rels: list[str], *, identity: str, agent: str | None, role: str | None,
                request_id: str, why: str, subject: str) -> str:
    """One commit of several paths (a move: the old name's removal, the new name, the rewritten links),
    with the trailers of `commit`; a path gone and never committed is left out."""
    name, email = split_identity(identity)
    env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
           "GIT_COMMITTER_EMAIL": email, "GIT_TERMINAL_PROMPT": "0"}
    trailers = "\n".join(f"{key}: {_line(value)}" for key, value in zip(
        TRAILERS, (agent, role, request_id, "move"), strict=True))
    why = "".join(c for c in " ".join(why.split()) if c.isprintable())  # one line: no control character forges one
    message = f"{_line('vault: ' + subject)[:120]}\n\n{why}\n\n{trailers}\n"
    literal = [f":(literal){r}" for r in rels]
    indexed = set(_git(root, env, "ls-files", "-z", "--", *literal).split("\0"))
    tracked = set(indexed)
    with contextlib.suppress(ProvenanceError):  # no HEAD yet: nothing committed to remove
        # Trigger: a move cut short after `git add` had staged the old name's removal; finishing it
        # left that removal staged (the index no longer lists the name). Outcome: HEAD's names count.
        tracked |= set(_git(root, env, "ls-tree", "-z", "-r", "--name-only", "HEAD", "--", *literal).split("\0"))
    # a path that is gone and was never committed (an untracked note moved) names nothing git knows
    specs = [f":(literal){r}" for r in dict.fromkeys(rels) if r in tracked or (root / r).exists()]
    # `add` refuses a name neither on disk nor in the index (its removal is staged already): commit it only
    _git(root, env, "add", "-A", "--", *[f":(literal){r}" for r in dict.fromkeys(rels)
                                          if r in indexed or (root / r).exists()])
    _git(root, env, "-c", "commit.gpgsign=false", "commit", "--only", "--quiet", "--no-edit", "-F", "-",
         "--", *specs, stdin=message)
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
    moved another file to it (_renamed_from: never a copy), it goes on with the old name from
    before that commit.
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
        path = _renamed_from(root, made, path, moved=found[-1]["operation"] == "move")
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


def _renamed_from(root: Path, commit: str, rel: str, moved: bool = False) -> str | None:
    """The path `commit` renamed to `rel` (renames only, never copies), else None.

    Paths are relative to `root` (`--relative`), as `rel` is; a merge or root commit renames nothing here.
    Trigger: one commit that deleted a note and added another made from the same template was a
    rename to git (walkthrough I), so the new note showed the old one's commits; also one of the
    same name in another folder (walkthrough K: sprints/s1/retro.md -> s2/retro.md). Outcome: a
    rename counts when it is the vault's own move (`moved`) or keeps the content whole (`git mv`
    alone); a file moved and edited in one commit starts its history there."""
    out = _git(root, dict(os.environ), "diff-tree", "-z", "-r", "-M", "--relative", "--name-status",
               "--no-commit-id", "--root", commit)
    items = out.split("\0")
    index = 0
    while index < len(items) - 1:
        status = items[index]
        if status[:1] in ("R", "C"):
            before, after = items[index + 1], items[index + 2] if index + 2 < len(items) else ""
            kept = moved or status[1:] == "100"
            if status[0] == "R" and after == rel and kept:
                return before
            index += 3
        else:
            index += 2
    return None


def request_commit(root: Path, rel: str, request_id: str, identity: str) -> str | None:
    """The commit holding `rel` whose Vault-Request-Id trailer is `request_id`, by `identity`; else None.

    A write cut short after its commit (before its journal row was closed) must not commit again;
    one cut short before must. git's --grep finds candidates, the trailer and author decide.
    """
    name, email = split_identity(identity)
    wanted = _line(request_id)
    out = _git(root, dict(os.environ), "log", "-z", "--max-count=50", "-F", f"--grep=Vault-Request-Id: {wanted}",
               "--format=%H%x00%an%x00%ae%x00%(trailers:key=Vault-Request-Id,valueonly,separator=%x20,unfold)",
               "--", f":(literal){rel}")
    values = out.split("\0")
    for start in range(0, len(values) - 3, 4):
        commit_id, author, mail, trailer = (v.strip("\n") for v in values[start:start + 4])
        if trailer.strip() == wanted and (author, mail) == (name, email):
            return commit_id.strip()
    return None
