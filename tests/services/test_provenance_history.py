"""A note's history is its own commits and those of the names it was moved from: never another note's
(issue 39: `git log --follow` took a new note made from a template for a copy of an older one). Real git."""

from __future__ import annotations

import subprocess

from vault_index.services.writes import provenance

TEMPLATE = ("---\ntype: meeting\nstatus: draft\n---\n# Meeting\n\n## Attendees\n\n- \n\n## Agenda\n\n1. \n\n"
            "## Decisions\n\n- \n\n## Actions\n\n- [ ] \n")


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=T", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout


def commit(root, message) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def repo(tmp_path):
    """A fresh git repository with an empty notes/ folder."""
    root = tmp_path / "repo"
    (root / "notes").mkdir(parents=True)
    git(root, "init", "-q")
    return root


def test_a_note_from_the_same_template_does_not_inherit_an_older_notes_history(tmp_path):
    root = repo(tmp_path)
    (root / "notes" / "monday.md").write_text(TEMPLATE)
    commit(root, "monday from the template")
    (root / "notes" / "monday.md").write_text(TEMPLATE.replace("- \n\n## Agenda", "- Ann\n\n## Agenda"))
    commit(root, "monday: attendees")
    (root / "notes" / "tuesday.md").write_text(TEMPLATE.replace("1. \n", "1. budget\n"))
    commit(root, "tuesday from the template")
    assert [e["subject"] for e in provenance.history(root, "notes/tuesday.md")] == ["tuesday from the template"]
    assert [e["subject"] for e in provenance.history(root, "notes/monday.md")] == [
        "monday: attendees", "monday from the template"]


def test_a_moved_note_keeps_the_history_of_its_old_names_and_only_theirs(tmp_path):
    root = tmp_path / "repo"
    vault = root / "vault"  # the vault is a folder inside the repository: paths stay relative to it
    (vault / "drafts").mkdir(parents=True)
    git(root, "init", "-q")
    (vault / "drafts" / "plan.md").write_text("# Plan\n\nfirst\n")
    commit(root, "plan")
    (vault / "drafts" / "plan.md").write_text("# Plan\n\nfirst\nsecond\n")
    commit(root, "plan: second")
    (vault / "research").mkdir()
    git(root, "mv", "vault/drafts/plan.md", "vault/research/plan.md")
    commit(root, "move plan")
    git(root, "mv", "vault/research/plan.md", "vault/research/roadmap.md")
    commit(root, "rename to roadmap")
    (vault / "research" / "roadmap.md").write_text("# Plan\n\nfirst\nsecond\nthird\n")
    commit(root, "roadmap: third")
    (vault / "drafts" / "plan.md").write_text("# Plan\n\na new plan at the old name\n")
    commit(root, "a new plan")
    assert [e["subject"] for e in provenance.history(vault, "research/roadmap.md")] == [
        "roadmap: third", "rename to roadmap", "move plan", "plan: second", "plan"]
    assert [e["subject"] for e in provenance.history(vault, "drafts/plan.md")] == ["a new plan"]  # not the old file
    assert len(provenance.history(vault, "research/roadmap.md", limit=2)) == 2


def test_a_note_from_a_template_added_where_another_was_deleted_in_one_commit_is_new(tmp_path):
    """Walkthroughs I and J: one commit dropped notes/2026-01-26.md and added notes/2026-02-02.md
    from the same template; git calls it a rename (about one line differs), and the new note showed
    the old one's commits. A rename counts when the vault moved it or the content stayed whole."""
    root = repo(tmp_path)
    (root / "notes" / "2026-01-26.md").write_text(TEMPLATE)
    commit(root, "meeting 26 from the template")
    (root / "notes" / "2026-01-26.md").write_text(TEMPLATE.replace("- [ ] \n", "- [ ] call Ann\n"))
    commit(root, "meeting 26: actions")
    (root / "notes" / "2026-01-26.md").unlink()
    (root / "notes" / "2026-02-02.md").write_text(TEMPLATE.replace("1. \n", "1. budget\n"))
    commit(root, "meeting 02-02 from the template; 26 dropped")
    assert "R" in git(root, "show", "-M", "--name-status", "--format=", "HEAD")[:1]  # git: a rename
    assert [e["subject"] for e in provenance.history(root, "notes/2026-02-02.md")] == [
        "meeting 02-02 from the template; 26 dropped"]
    (root / "sprints" / "s1").mkdir(parents=True)  # walkthrough K: the same name in another folder
    (root / "sprints" / "s1" / "retro.md").write_text(TEMPLATE)
    commit(root, "sprint 1 retro")
    git(root, "rm", "-q", "-r", "sprints/s1")
    (root / "sprints" / "s2").mkdir(parents=True)
    (root / "sprints" / "s2" / "retro.md").write_text(TEMPLATE.replace("1. \n", "1. velocity\n"))
    commit(root, "sprint 2 retro; s1 archived away")
    assert [e["subject"] for e in provenance.history(root, "sprints/s2/retro.md")] == [
        "sprint 2 retro; s1 archived away"]
    (root / "archive").mkdir()
    git(root, "mv", "notes/2026-02-02.md", "archive/2026-02-02.md")  # a folder move, content kept: followed
    commit(root, "archive 02-02")
    assert [e["subject"] for e in provenance.history(root, "archive/2026-02-02.md")] == [
        "archive 02-02", "meeting 02-02 from the template; 26 dropped"]
