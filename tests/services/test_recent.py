"""Recent activity: git where the folder is a repository (commits and uncommitted edits), mtimes
elsewhere; each note once, newest first, only what the caller may read."""

from __future__ import annotations

import os
import subprocess
import time

from helpers import write
from vault_index.services.curation.recent import recent_activity


def git(root, *args, when: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Pat", "GIT_AUTHOR_EMAIL": "p@p", "GIT_COMMITTER_NAME": "Pat",
           "GIT_COMMITTER_EMAIL": "p@p"}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    return subprocess.run(["git", "-C", str(root), *args], env=env, capture_output=True, text=True,
                          check=True).stdout


def everyone(_path) -> bool:
    return True


def test_a_plain_folder_answers_from_modification_times(tmp_path):
    root = tmp_path / "notes"
    old, new = write(root, "old.md", "old"), write(root, "sub/new.md", "new")
    write(root, "image.png", "not a note")
    month_ago = time.time() - 30 * 86400
    os.utime(old, (month_ago, month_ago))
    found = recent_activity(root, everyone, days=7)
    assert [(e["path"], e["source"]) for e in found] == [("sub/new.md", "mtime")]
    assert {e["path"] for e in recent_activity(root, everyone, days=60)} == {"sub/new.md", "old.md"}
    assert new.exists()


def test_a_repository_answers_from_git_with_uncommitted_edits_first(tmp_path):
    root = tmp_path / "repo"
    write(root, "a.md", "a")
    write(root, "b.md", "b")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "long ago", when="2020-01-01T00:00:00+00:00")
    write(root, "b.md", "b changed")
    git(root, "commit", "-q", "-am", "recent change")
    write(root, "c.md", "not committed yet")
    found = recent_activity(root, everyone, days=7)
    assert [(e["path"], e["source"]) for e in found] == [("c.md", "uncommitted"), ("b.md", "git")]
    assert found[1]["subject"] == "recent change" and found[1]["author"] == "Pat <p@p>"
    # the last N commits whatever their age (and what is newer than any commit: the uncommitted)
    assert {e["path"] for e in recent_activity(root, everyone, commits=2)} == {"a.md", "b.md", "c.md"}
    assert {e["path"] for e in recent_activity(root, everyone, commits=1)} == {"b.md", "c.md"}
    # a deleted note is not recent activity
    git(root, "rm", "-q", "b.md")
    git(root, "commit", "-q", "-m", "remove b")
    assert "b.md" not in {e["path"] for e in recent_activity(root, everyone, days=7)}


def test_only_notes_the_caller_may_read_are_listed(tmp_path):
    root = tmp_path / "notes"
    write(root, "public/a.md", "a")
    write(root, "private/b.md", "b")
    found = recent_activity(root, lambda path: "/public/" in str(path), days=1)
    assert [e["path"] for e in found] == ["public/a.md"]


def test_a_folder_inside_a_larger_repository_lists_its_own_notes(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "outside.md", "x")
    write(repo, "notes/inside.md", "y")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "both")
    write(repo, "notes/draft.md", "z")
    found = recent_activity(repo / "notes", everyone, days=1)
    assert {e["path"] for e in found} == {"inside.md", "draft.md"}
