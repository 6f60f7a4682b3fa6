"""Undo one committed write of a note, through the write service, and read each write's diff.

A revert is a write like any other (authorize, lock, version check, validate, replace, re-index,
commit as the person who asked): the note gets back the text it had before that commit. It is
refused as `stale` unless the note still holds exactly what that commit wrote (someone edited it
since: undoing would throw their edit away) and, when the page names one, the version it showed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from vault_index.engine.files import fileio
from vault_index.services.vault.safe_git import git_argv
from vault_index.services.writes import provenance
from vault_index.services.writes.write_types import Caller, Target, WriteOutcome

MAX_DIFF_CHARS = 60_000  # a page shows at most this much of one write's diff


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(git_argv(root, *args), capture_output=True, text=True, timeout=provenance.GIT_TIMEOUT_S,
                          check=False)


def _repo_rel(root: Path, rel: str) -> tuple[Path, str] | None:
    """(the repository holding the vault, `rel` relative to it); None outside git."""
    repo = provenance.repo_root(Path(root))
    if repo is None:
        return None
    return repo, (Path(os.path.realpath(root)) / rel).relative_to(os.path.realpath(repo)).as_posix()


def text_at(root: Path, rel: str, commit: str) -> str | None:
    """The note's text as `commit` left it (`<commit>^` before it); None where it did not exist."""
    found = _repo_rel(root, rel)
    if found is None or not commit or commit.startswith("-"):
        return None
    done = _git(found[0], "show", f"{commit}:{found[1]}")
    return done.stdout if done.returncode == 0 else None


def diff(root: Path, rel: str, commit: str) -> str:
    """The unified diff `commit` made to the note (empty when git has none)."""
    found = _repo_rel(root, rel)
    if found is None or not commit or commit.startswith("-"):
        return ""
    done = _git(found[0], "show", "--format=", "--no-color", "--no-ext-diff", commit, "--", f":(literal){found[1]}")
    return done.stdout[:MAX_DIFF_CHARS] if done.returncode == 0 else ""


def revert(writer, caller: Caller, rel: str, commit: str, shown_version: str | None = None) -> WriteOutcome:
    """Put back the text the note had before `commit`, as `caller`'s own committed write."""
    wrote, before = text_at(writer.vault.root, rel, commit), text_at(writer.vault.root, rel, f"{commit}^")
    if wrote is None:
        return WriteOutcome("not_found", rel, f"{commit[:12]} did not write {rel}")
    if before is None:
        return WriteOutcome("refused", rel, f"{commit[:12]} created {rel}: there is no earlier text to go back to "
                                            "(deprecate or delete the note instead)")

    def compose(target: Target, old: str | None, version: str | None, alive) -> str | WriteOutcome:
        if shown_version is not None and version != shown_version:
            return WriteOutcome("stale", target.rel, f"{target.rel} changed since the page showed it; reload",
                                version=version)
        if old != wrote.removeprefix("\ufeff"):
            return WriteOutcome("stale", target.rel, f"{target.rel} was edited after {commit[:12]}: reverting "
                                "would throw that edit away; revert the newer write first, or edit by hand",
                                version=version)
        return before.removeprefix("\ufeff")

    return writer._pipeline(caller, rel, "revert", None, f"revert {commit[:12]}", action="write",  # noqa: SLF001
                            compose=compose)


def current_version(root: Path, rel: str) -> str | None:
    """The note's version now (fileio.file_version of its bytes); None when it is gone."""
    try:
        return fileio.file_version((Path(root) / rel).read_bytes())
    except OSError:
        return None
