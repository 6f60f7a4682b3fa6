"""The one boundary (services/boundary.py, ADR 0034): every path resolved once to its real path and
checked against what the workspace sees; a hidden path answered in the words of a missing one."""

from __future__ import annotations

import os

import pytest
from helpers import found, fresh_machine, note, opened
from vault_index.errors import NotFoundError, OutsideSourcesError
from vault_index.services import boundary


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.chdir(fresh_machine(monkeypatch, tmp_path))
    return tmp_path


@pytest.fixture
def nested(env, monkeypatch):
    """Project B lives in ~/notes (a personal source) and its docs/ are B's own source; project A is
    elsewhere. B adopted its docs before the person indexed ~/notes (the order the audit used)."""
    notes = env / "home" / "notes"
    mine = note(notes, "mine.md", "my own okapi")
    b = notes / "B"
    (b / ".git").mkdir(parents=True)
    plan = note(b / "docs" / "sub", "plan.md", "beta private okapi plan")
    note(b / "docs" / "sub", "budget.md", "beta okapi budget")
    a = env / "A"
    (a / ".git").mkdir(parents=True)
    app = opened(monkeypatch, b)
    app.adopt_workspace()
    app.close()
    app = opened(monkeypatch, None)
    app.index([str(notes)])
    app.close()
    return {"notes": notes, "mine": mine, "b": b, "plan": plan, "a": a}


def test_an_agent_cannot_index_part_of_a_hidden_projects_docs_inside_a_personal_folder(nested, monkeypatch):
    """Issue 36 item 1 (High): project A's agent named a subfolder, then a single file, of project B's
    docs/ lying inside the personal ~/notes. The old code registered them as personal sources, so B's
    notes showed in every project, the terminal and HTTP, and the call answered "unchanged": 2."""
    b, plan = nested["b"], nested["plan"]
    app = opened(monkeypatch, nested["a"])
    try:
        missing = None
        try:
            app.index([str(nested["notes"] / "nothing")], by_agent=True)
        except NotFoundError as exc:
            missing = str(exc).replace(str(nested["notes"] / "nothing"), "PATH")
        for hidden in (b / "docs" / "sub", plan):
            with pytest.raises(NotFoundError) as refused:
                app.index([str(hidden)], by_agent=True)  # old code: accepted, unchanged 2 (then 1)
            assert str(refused.value).replace(str(hidden), "PATH") == missing  # the words of a missing path
        assert found(app, "okapi") == {str(nested["mine"])}
    finally:
        app.close()
    for folder in (None, nested["a"]):  # the terminal and project A still do not see B's docs
        app = opened(monkeypatch, folder)
        try:
            assert str(plan) not in found(app, "okapi")
            assert all(s["path"] != str(plan) and not s["path"].startswith(str(b / "docs"))
                       for s in app.sources() if s["path"] != str(b / "docs"))
        finally:
            app.close()
    app = opened(monkeypatch, b)
    try:
        assert str(plan) in found(app, "okapi")  # B itself still sees them
    finally:
        app.close()


def test_get_note_answers_a_hidden_note_and_a_missing_one_alike(nested, monkeypatch):
    app = opened(monkeypatch, nested["a"])
    try:
        said = []
        for path in (nested["plan"], nested["notes"] / "B" / "docs" / "sub" / "nothing.md",
                     nested["notes"] / "nothing.md"):
            with pytest.raises(NotFoundError) as refused:
                app.get_note(str(path))
            said.append(str(refused.value).replace(str(path), "PATH"))
        assert len(set(said)) == 1, said
    finally:
        app.close()


def test_a_symlink_inside_a_visible_source_is_judged_where_it_leads(nested, monkeypatch):
    link = nested["notes"] / "shortcut"
    link.symlink_to(nested["b"] / "docs" / "sub")
    app = opened(monkeypatch, nested["a"])
    try:
        with pytest.raises(NotFoundError):
            boundary.resolve(app, str(link / "plan.md"))
        with pytest.raises(NotFoundError):
            app.index([str(link)], by_agent=True)
        assert boundary.resolve(app, "mine.md") == nested["mine"]  # relative: looked up in each source
        with pytest.raises(OutsideSourcesError):
            boundary.resolve(app, "/etc/hostname")
    finally:
        app.close()


def test_letter_case_is_spelled_as_the_folder_stores_it_where_the_file_system_folds_it(tmp_path, monkeypatch):
    """On a case-insensitive file system `notes/b/DOCS` is `Notes/B/docs`; the boundary compares the
    spelling the folder stores, so a hidden source is not reached by another spelling. Linux is
    case-sensitive, so the folding is simulated (the listing is real)."""
    stored = tmp_path / "Notes" / "B" / "docs"
    stored.mkdir(parents=True)
    (stored / "Plan.md").write_text("x")
    asked = tmp_path / "notes" / "b" / "DOCS" / "plan.md"
    assert boundary.real(asked) == asked  # ext4: another name, nothing to fold
    monkeypatch.setattr(boundary, "_folds", lambda path: True)
    assert boundary.real(asked) == stored / "Plan.md"
    assert boundary.real(tmp_path / "notes" / "b" / "new.md") == tmp_path / "Notes" / "B" / "new.md"
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    (tmp_path / "Notes" / composed).mkdir()
    assert boundary.real(tmp_path / "NOTES" / decomposed / "x.md") == tmp_path / "Notes" / composed / "x.md"
    assert os.path.basename(boundary.real(tmp_path / "Notes")) == "Notes"


def test_an_agents_folder_holding_a_hidden_source_neither_touches_nor_counts_its_notes(nested, monkeypatch):
    """Project A's agent adds ~/notes/B (a visible folder that holds B's own docs/ source): B's notes
    stay B's, and the answer counts only what A sees (old code: B's two notes counted too)."""
    b = nested["b"]
    (b / "README.md").write_text("# B readme\n\nokapi readme\n")
    app = opened(monkeypatch, nested["a"])
    try:
        report = app.index([str(b)], by_agent=True)
        assert (report.indexed + report.unchanged, report.scanned) == (1, 1), report  # README.md only
        assert found(app, "okapi") == {str(nested["mine"]), str(b / "README.md")}
    finally:
        app.close()
    app = opened(monkeypatch, b)
    try:
        assert str(nested["plan"]) in found(app, "okapi")  # B still finds its own docs
    finally:
        app.close()


def test_a_writer_given_a_vault_sees_its_notes_though_the_apps_workspace_lists_it_not(env, monkeypatch):
    """A library caller (or a test) opens the App where it stands and asks it for the writer of a vault
    that workspace does not list: the vault's own notes are the writer's to see, so a move rewrites
    their links (a source nested inside the vault would still hide its notes)."""
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes.move import MoveRequest
    from vault_index.services.writes.write import Caller

    vault = env / "vault"
    (vault / ".vault-index").mkdir(parents=True)
    (vault / ".vault-index" / "config.yaml").write_text(
        "version: 1\nroles:\n  owner: {read: ['*'], write: ['*']}\n")
    note(vault / "m", "n0.md", "the mover")
    linker = note(vault / "notes", "l.md", "see [the mover](../m/n0.md)")
    app = opened(monkeypatch, None)
    try:
        app.index([str(vault)])  # the vault's own source: not one the personal workspace sees
        writer = app.writer(Vault.open(vault))
        outcome = writer.move(Caller("Pat <pat@example.org>", "owner"), MoveRequest("m/n0.md", "m/n1.md"))
        assert outcome.status == "written", outcome.message
        assert "(../m/n1.md)" in linker.read_text()
    finally:
        app.close()
