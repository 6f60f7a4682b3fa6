"""Sources nested in one another's folders (ADR 0020): the deepest source holding a note decides
which workspaces see it, for the notes and the memory graph alike (services/workspace.path_rule)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import found, fresh_machine, note, opened
from vault_index.errors import NotFoundError, VaultIndexError


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.chdir(fresh_machine(monkeypatch, tmp_path))
    return tmp_path


def project(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def test_a_projects_docs_inside_a_personal_folder_stay_that_projects(env, monkeypatch):
    """Project B lives in ~/Documents, which the person indexed; B's docs are B's source. Another
    project sees neither B's notes nor their graph facts; a personal source inside B's folder is
    seen by every project, its notes and its facts alike."""
    documents = env / "home" / "Documents"
    b = project(documents / "B")
    secret = note(b / "docs", "plan.md", "beta private okapi plan")
    research = note(b / "research", "r.md", "shared okapi research")
    readme = note(b, "README.md", "okapi readme in the personal folder")
    a = project(env / "A")
    own = note(a / "docs", "a.md", "alpha okapi")
    app = opened(monkeypatch, b)
    app.adopt_workspace()
    app.close()
    app = opened(monkeypatch, None)  # the terminal at home: personal sources
    app.index([str(documents), str(b / "research")])
    app.close()
    app = opened(monkeypatch, a)
    try:
        app.adopt_workspace()
        # B's docs: not (old code: shown); B's README.md is B's own too, like its docs (issue 39)
        assert found(app, "okapi") == {str(own), str(research)}
        for private in (secret, readme):
            with pytest.raises(VaultIndexError):
                app.get_note(str(private))
        facts = app.fact_visible()
        assert not facts(str(secret))
        assert facts(str(research))  # the graph as the notes: a personal note (old code: hidden)
    finally:
        app.close()
    app = opened(monkeypatch, b)
    try:
        assert {str(secret), str(readme)} <= found(app, "okapi")  # B itself still sees its docs and README
    finally:
        app.close()


def test_a_vault_inside_a_personal_folder_is_seen_only_in_the_vault(env, monkeypatch):
    notes = env / "home" / "notes"
    mine = note(notes, "mine.md", "my tapir note")
    vault = notes / "team"
    (vault / ".vault-index").mkdir(parents=True)
    (vault / ".vault-index" / "config.yaml").write_text("roles: {}\n")
    inside = note(vault / "notes", "v.md", "the team tapir note")
    a = project(env / "A")
    app = opened(monkeypatch, None)
    app.index([str(notes)])
    app.index([str(vault)])  # as `init` registers it: the vault's own workspace
    app.close()
    app = opened(monkeypatch, a)
    try:
        assert found(app, "tapir") == {str(mine)}  # old code: the vault's note too
        with pytest.raises(VaultIndexError):
            app.get_note(str(inside))
        assert not app.fact_visible()(str(inside))
    finally:
        app.close()
    monkeypatch.chdir(vault)
    app = opened(monkeypatch, None)
    try:
        assert app.workspace.kind == "vault"
        assert found(app, "tapir") == {str(inside)}
    finally:
        app.close()


def test_a_subfolder_of_personal_notes_added_by_an_agent_stays_personal(env, monkeypatch):
    """An agent in project A adds ~/notes/sub (inside the personal source): project B must still
    see those notes and their facts, as it did before A's agent touched them."""
    notes = env / "home" / "notes"
    sub = note(notes / "sub", "s.md", "the gecko note")
    a, b = project(env / "A"), project(env / "B")
    app = opened(monkeypatch, None)
    app.index([str(notes)])
    app.close()
    app = opened(monkeypatch, a)
    app.index([str(notes / "sub")], by_agent=True)
    app.close()
    app = opened(monkeypatch, b)
    try:
        assert found(app, "gecko") == {str(sub)}
        facts = app.fact_visible()
        assert facts is None or facts(str(sub))  # old code: hidden from B's graph
    finally:
        app.close()


def test_init_on_a_folder_indexed_before_makes_it_the_vaults(env, monkeypatch):
    """`index kb` then `init kb` (the same App.index call `init` makes): old code kept the source
    personal, so the vault saw none of its notes and every project saw all of them."""
    kb = env / "home" / "kb"
    fact = note(kb, "k.md", "the lemur fact")
    app = opened(monkeypatch, None)
    app.index([str(kb)])
    app.close()
    (kb / ".vault-index").mkdir()
    (kb / ".vault-index" / "config.yaml").write_text("roles: {}\n")
    app = opened(monkeypatch, None)
    app.index([str(kb)])
    app.close()
    monkeypatch.chdir(kb)
    app = opened(monkeypatch, None)
    try:
        assert app.workspace.kind == "vault"
        assert found(app, "lemur") == {str(fact)}
    finally:
        app.close()
    monkeypatch.chdir(env / "home")
    app = opened(monkeypatch, project(env / "A"))
    try:
        assert found(app, "lemur") == set()
    finally:
        app.close()


def test_an_agent_adding_a_vault_inside_the_personal_notes_does_not_make_it_personal(env, monkeypatch):
    notes = env / "home" / "notes"
    note(notes, "mine.md", "my note")
    vault = notes / "team"
    (vault / ".vault-index").mkdir(parents=True)
    (vault / ".vault-index" / "config.yaml").write_text("roles: {}\n")
    note(vault / "notes", "v.md", "the team ferret note")
    app = opened(monkeypatch, None)
    app.index([str(notes)])
    app.close()
    app = opened(monkeypatch, project(env / "A"))
    try:
        # inside a source A sees, but A does not see a vault: refused as a missing path is (issue 36);
        # the code before that registered it as the vault's, never as personal
        with pytest.raises(NotFoundError):
            app.index([str(vault)], by_agent=True)
        assert str(vault) not in app.store.source_scopes()
        with pytest.raises(NotFoundError):  # nor does A read the vault's notes through the personal source
            app.get_note(str(vault / "notes" / "v.md"))
    finally:
        app.close()


def test_links_from_a_personal_note_do_not_lead_into_a_nested_projects_docs(env, monkeypatch):
    """A link inside ~/Documents to B's docs (B's source, nested in it) resolves within the outer
    source; old code gave its path to project A's links, backlinks and neighbors."""
    from vault_index.services.graph.linkgraph import note_links

    documents = env / "home" / "Documents"
    b = project(documents / "B")
    secret = note(b / "docs", "plan.md", "beta plan, see [hub](../../hub.md)")
    hub = note(documents, "hub.md", "see [the plan](B/docs/plan.md)")
    app = opened(monkeypatch, b)
    app.adopt_workspace()
    app.close()
    app = opened(monkeypatch, None)
    app.index([str(documents)])
    app.close()
    app = opened(monkeypatch, project(env / "A"))
    try:
        shown = [str(note_links(app, way, str(hub))) for way in ("links", "backlinks", "neighbors")]
        assert not [s for s in shown if str(secret) in s], shown
    finally:
        app.close()
