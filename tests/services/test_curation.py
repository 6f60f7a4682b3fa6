"""Curation: decay, each lint check, the dashboard, the tension log format, and `init`'s scaffold."""

from __future__ import annotations

import datetime as dt
import subprocess

import pytest
from helpers import write
from vault_index.engine.parsing.parse import parse_note
from vault_index.errors import UsageError
from vault_index.services.curation import curation
from vault_index.services.curation.curation import NoteFacts
from vault_index.services.curation.scaffold import scaffold

TODAY = dt.date(2026, 12, 1)


def facts(path, links=(), problems=(), **fm) -> NoteFacts:
    fm.setdefault("status", "canonical")
    return NoteFacts(path, path.split("/")[0] if "/" in path else "", fm, tuple(problems),
                     curation.decay(fm, TODAY), tuple(links))


def by_check(issues):
    found: dict[str, set[str]] = {}
    for issue in issues:
        found.setdefault(issue["check"], set()).add(issue["path"])
    return found


@pytest.mark.parametrize(("updated", "state"), [("2026-11-30", "fresh"), ("2026-09-01", "aging"),
                                                 ("2026-01-01", "stale")])
def test_decay_from_updated_and_ttl(updated, state):
    found = curation.decay({"ttl_days": 100, "updated": updated, "created": "2020-01-01"}, TODAY)
    assert found["state"] == state and found["ttl_days"] == 100
    assert found["age_days"] == (TODAY - dt.date.fromisoformat(updated)).days


def test_decay_is_none_without_ttl_or_date_and_accepts_yaml_dates():
    assert curation.decay({"updated": "2026-01-01"}, TODAY) is None
    assert curation.decay({"ttl_days": 10}, TODAY) is None
    assert curation.decay({"ttl_days": 10, "updated": "not a date"}, TODAY) is None
    assert curation.decay({"ttl_days": True, "updated": "2026-01-01"}, TODAY) is None
    assert curation.decay({"ttl_days": 10, "updated": dt.date(2026, 11, 1)}, TODAY)["state"] == "stale"


def test_each_lint_check_finds_its_case_and_only_it():
    notes = [
        facts("a/hub.md", links=["fresh", "old-draft", "Gone"], updated="2026-11-30",
              questions_answered=["Does it float?"]),
        facts("a/fresh.md", links=["hub"], updated="2026-11-30", ttl_days=30,
              questions_raised=["does it float", "Who pays?"]),
        facts("a/stale.md", links=["hub"], updated="2026-01-01", ttl_days=30),
        facts("b/old-draft.md", links=["a/hub"], status="draft", created="2026-09-01", updated="2026-09-01"),
        facts("b/gone.md", links=["hub"], status="deprecated", updated="2026-11-01"),
        facts("b/unsure.md", links=["hub"], confidence="low", updated="2026-08-01"),
        facts("b/broken.md", links=["hub"], problems=[{"field": "status", "rule": "enum", "message": "x"}]),
    ]
    found = by_check(curation.lint_notes(notes, TODAY))
    assert found["stale"] == {"a/stale.md"}
    assert found["old_draft"] == {"b/old-draft.md"}
    assert found["deprecated_linked"] == {"b/gone.md"}  # linked from the canonical hub ([[Gone]], any case)
    assert found["low_confidence"] == {"b/unsure.md"}
    assert found["invalid_frontmatter"] == {"b/broken.md"}
    assert found["orphan"] == {"a/stale.md", "b/unsure.md", "b/broken.md"}  # nobody links to them
    assert found["unanswered_question"] == {"a/fresh.md"}  # "does it float" is answered, "Who pays?" is not
    unanswered = [i for i in curation.lint_notes(notes, TODAY) if i["check"] == "unanswered_question"]
    assert [i["message"] for i in unanswered] == ["no note answers: Who pays?"]


def test_fail_on_thresholds():
    warning = [{"check": "orphan", "severity": "warning", "path": "x", "message": ""}]
    error = [{"check": "stale", "severity": "error", "path": "x", "message": ""}]
    assert not curation.failed(warning + error, "never")
    assert curation.failed(warning, "warning") and not curation.failed(warning, "error")
    assert curation.failed(error, "error") and not curation.failed([], "warning")


def test_dashboard_counts():
    notes = [facts("a/x.md", updated="2026-11-30", ttl_days=30), facts("a/y.md", status="draft"),
             facts("b/z.md", problems=[{"field": "title"}], updated="2025-01-01", ttl_days=10)]
    tensions = [{"id": "T-0001", "a": "a/x.md", "b": "b/z.md", "status": "open"},
                {"id": "T-0002", "a": "a/x.md", "b": "b/z.md", "status": "resolved"}]
    data = curation.dashboard(notes, tensions, [{"commit": "c"}])
    assert data["notes"] == 3 and data["invalid_frontmatter"] == 1 and data["open_tensions"] == 1
    assert data["collections"] == {"a": {"canonical": 1, "draft": 1}, "b": {"canonical": 1}}
    assert data["decay"] == {"fresh": 1, "aging": 0, "stale": 1, "none": 1}
    assert data["recent_writes"] == [{"commit": "c"}]


def test_tension_entries_number_themselves_and_parse_back():
    now = dt.datetime(2026, 12, 1, 5, 0, tzinfo=dt.timezone.utc)
    first = curation.tension_entry(None, "a/x.md", "b/y.md", "x says 3, y says 4", "Ann <a@x>", now)
    second = curation.tension_entry(first, "a/x.md", "a/z.md", "line one\nline two", "Bob", now)
    assert second.startswith(first.rstrip("\n"))  # appended, the old entries untouched
    found = curation.parse_tensions(second.replace("- status: open", "- status: resolved", 1))
    assert found == [{"id": "T-0001", "a": "a/x.md", "b": "b/y.md", "status": "resolved"},
                     {"id": "T-0002", "a": "a/x.md", "b": "a/z.md", "status": "open"}]


def test_note_paths_skip_control_hidden_secrets_and_symlinks(tmp_path):
    write(tmp_path, "a/one.md", "x")
    write(tmp_path, ".git/x.md", "x")
    write(tmp_path, ".vault-index/y.md", "x")
    write(tmp_path, "Secrets/k.md", "x")
    write(tmp_path, "tensions.md", "x")
    write(tmp_path, "a/two.txt", "x")
    (tmp_path / "a" / "link.md").symlink_to(tmp_path / "a" / "one.md")
    assert list(curation.note_paths(tmp_path)) == ["a/one.md"]


def test_scaffold_makes_a_committed_valid_vault(tmp_path):
    from vault_index.services.vault import frontmatter
    from vault_index.services.vault.vault import Vault

    root = tmp_path / "new"
    result = scaffold(root, TODAY)
    vault = Vault.open(root)
    assert set(vault.config["roles"]) == {"editor", "reader"} and vault.config["local_role"] == "editor"
    assert vault.collections == ("research", "decisions", "drafts")
    for rel in result["created"]:
        if rel.endswith(".md"):
            fields, _, problems = frontmatter.parse((root / rel).read_text())
            assert problems == [] and frontmatter.validate(fields, vault.note_schema) == [], rel
    tracked = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True)
    assert sorted(tracked.stdout.split()) == sorted(result["created"]) and result["commit"]
    notes = []
    for rel in (r for r in result["created"] if r.endswith(".md")):
        text = (root / rel).read_text()
        notes.append(facts(rel, links=parse_note(rel, text).links, **frontmatter.parse(text)[0]))
    assert "orphan" not in by_check(curation.lint_notes(notes, TODAY))  # the examples link each other


def test_scaffold_never_overwrites(tmp_path):
    root = tmp_path / "busy"
    write(root, "research/how-this-vault-works.md", "mine")
    write(root, "unrelated.md", "also mine")
    with pytest.raises(UsageError, match="never overwrites"):
        scaffold(root, TODAY)
    assert (root / "research/how-this-vault-works.md").read_text() == "mine"
    assert not (root / ".vault-index").exists()  # refused before writing anything
    other = tmp_path / "other"
    write(other, "unrelated.md", "kept")
    assert scaffold(other, TODAY)["created"]  # a non-empty folder without conflicts is fine
    assert (other / "unrelated.md").read_text() == "kept"
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "drafts").symlink_to(tmp_path)
    with pytest.raises(UsageError, match="drafts/"):
        scaffold(linked, TODAY)


def test_recent_writes_are_the_vaults_own_notes_relative_to_it(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=T", "-c", "user.email=t@x", *args],
                       check=True, capture_output=True, timeout=30)

    git("init", "-q")
    write(tmp_path, "vault/a/x.md", "x")
    write(tmp_path, "vault/a/code.py", "x")
    write(tmp_path, "elsewhere/y.md", "y")
    git("add", "-A")
    git("commit", "-qm", "first")
    write(tmp_path, "vault/b/z.md", "z")
    git("add", "-A")
    git("commit", "-qm", "second")
    found = curation.recent_writes(tmp_path / "vault", lambda path: "/b/" not in path)
    assert [(w["message"], w["paths"]) for w in found] == [("first", ["a/x.md"])]
    assert curation.recent_writes(tmp_path / "elsewhere" / "none", lambda p: True) == []
