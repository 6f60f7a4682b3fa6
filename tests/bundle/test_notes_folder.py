"""Where a person's notes live (issue 21): the clone's notes/ tracks only its README, so notes put
there are never changes of the tool; since `git clean -fdx` deletes ignored files too, setup
makes the personal folder's notes/ (outside the clone, indexed) their home and says so when it
finds notes in the clone."""

from __future__ import annotations

import subprocess

from helpers import copy_checkout, load_setup

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]


def _clone(tmp_path):
    clone = tmp_path / "clone"
    copy_checkout(clone)  # the working tree as a fresh clone would have it, .gitignore included
    subprocess.run([*GIT, "init", "-q"], cwd=clone, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=clone, check=True)
    subprocess.run([*GIT, "commit", "-qm", "clone"], cwd=clone, check=True)
    return clone


def _git(clone, *args) -> str:
    return subprocess.run(["git", *args], cwd=clone, check=True, capture_output=True, text=True).stdout


def test_notes_written_into_the_clone_are_never_a_change_of_the_tool(tmp_path):
    clone = _clone(tmp_path)
    assert _git(clone, "ls-files", "notes").split() == ["notes/README.md"]
    (clone / "notes" / "idea.md").write_text("# Idea\n\nA person's own note.\n")
    (clone / "notes" / "work").mkdir()
    (clone / "notes" / "work" / "plan.md").write_text("# Plan\n")
    assert _git(clone, "status", "--porcelain") == ""  # before: ?? notes/idea.md, ?? notes/work/
    _git(clone, "add", "-A")
    assert _git(clone, "diff", "--cached", "--name-only") == ""
    (clone / "notes" / "README.md").write_text("changed\n")
    assert _git(clone, "status", "--porcelain").split() == ["M", "notes/README.md"]  # the README stays tracked


def test_setup_says_where_notes_in_the_clone_belong_and_the_personal_notes_survive_git_clean(tmp_path):
    setup = load_setup()
    clone, personal = _clone(tmp_path), tmp_path / "home" / ".mcp-memory" / "personal"
    assert setup.clone_notes_notice(clone, personal) is None  # only the README: nothing to say
    (clone / "notes" / "idea.md").write_text("# Idea\n")
    notice = setup.clone_notes_notice(clone, personal)
    assert "1 file(s)" in notice and "git clean -fdx" in notice and str(personal / "notes") in notice
    (personal / "notes").mkdir(parents=True)
    (personal / "notes" / "kept.md").write_text("# Kept\n")
    _git(clone, "clean", "-fdx")
    assert not (clone / "notes" / "idea.md").exists() and (personal / "notes" / "kept.md").is_file()
