"""services/workspace.py: which workspace a process is in, and what each workspace sees (ADR 0020)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO
from vault_index.config import Settings
from vault_index.errors import VaultIndexError
from vault_index.services import workspace
from vault_index.services.app import App
from vault_index.services.search.search import Filters


@pytest.fixture
def env(monkeypatch, tmp_path):
    for name in ("VAULT_PROJECT", "CLAUDE_PROJECT_DIR", "VAULT_CONTENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("VAULT_INDEX_HOME", str(tmp_path / "home" / ".mcp-memory"))
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "index.db"))
    monkeypatch.setenv("VAULT_EMBED_MODEL", "none")
    return tmp_path


def note(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    return path


def project(root: Path, marker: str = ".git") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / marker).mkdir() if marker in (".git", ".claude") else (root / marker).write_text("{}")
    return root


def test_the_workspace_comes_from_the_project_variable_else_the_working_folder(env, monkeypatch):
    proj = project(env / "code" / "app")
    (proj / "src").mkdir()
    monkeypatch.chdir(proj / "src")
    assert workspace.find() == workspace.Workspace("project", proj)  # the nearest marker above
    monkeypatch.chdir(env / "home")
    assert workspace.find().kind == "personal"  # the home folder is never a project
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(env / "plain"))
    (env / "plain").mkdir()
    assert workspace.find() == workspace.Workspace("project", env / "plain")  # named: a project, marker or not
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(REPO))
    assert workspace.find().kind == "personal"  # a clone of vault-index is no project


def test_an_init_vault_wins_over_the_project_markers_around_it(env, monkeypatch):
    vault = project(env / "vault")
    (vault / ".vault-index").mkdir()
    (vault / ".vault-index" / "config.yaml").write_text("roles: {}\n")
    (vault / "notes").mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(vault / "notes"))
    assert workspace.find() == workspace.Workspace("vault", vault)


def test_a_project_sees_personal_notes_and_its_own_docs_never_another_projects(env, monkeypatch):
    personal = note(env / "home" / "notes", "backup.md", "the zebrafish backup runs nightly")
    a, b = project(env / "a"), project(env / "b")
    note(a / "docs", "adr.md", "alpha decided to use zebrafish queues")
    note(b / "docs", "adr.md", "beta decided zebrafish storage is forbidden")
    monkeypatch.chdir(env / "home")
    with _open() as app:  # the terminal, no project: personal
        app.index([str(personal.parent)])
    for proj, other in ((a, b), (b, a)):
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(proj))
        with _open() as app:
            assert app.workspace == workspace.Workspace("project", proj)
            app.adopt_workspace()
            paths = {h.path for h in app.search("zebrafish", "keyword", 10).hits}
            assert str(personal) in paths and str(proj / "docs" / "adr.md") in paths
            assert not any(p.startswith(str(other)) for p in paths)
            assert {s["path"] for s in app.sources()} == {str(personal.parent), str(proj / "docs")}
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    with _open() as app:  # personal: neither project's docs
        assert {h.path for h in app.search("zebrafish", "keyword", 10).hits} == {str(personal)}


def test_an_agents_resync_without_paths_touches_and_counts_its_own_workspace_only(env, monkeypatch):
    """Issue 36 item 13: index_paths with no paths re-synced every workspace and counted their files."""
    personal = note(env / "home" / "notes", "n.md", "personal")
    a, b = project(env / "a"), project(env / "b")
    note(a / "docs", "x.md", "alpha")
    theirs = note(b / "docs", "y.md", "beta")
    note(b / "docs", "z.md", "beta too")
    monkeypatch.chdir(env / "home")
    with _open() as app:
        app.index([str(personal.parent)])
    for proj in (a, b):
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(proj))
        with _open() as app:
            app.adopt_workspace()
    theirs.write_text("# y.md\n\nbeta, edited by b's person\n")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(a))
    with _open() as app:
        report = app.index(None, by_agent=True)
        # old code: 4 scanned, b's edit indexed (1) and counted in a's answer
        assert (report.scanned, report.indexed, report.unchanged) == (2, 0, 2)
        stored = app.store.file_state(str(theirs))
        assert stored is not None and stored.hash != _sha(theirs)  # b's note waits for b's own sync
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(b))
    with _open() as app:
        assert app.index(None, by_agent=True).indexed == 1


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("folder", ["docs", "notes"])
def test_a_write_that_makes_the_projects_folder_is_found_by_the_next_search(env, monkeypatch, folder):
    """The first lesson of a new project makes docs/lessons.md: that folder did not exist when the
    session adopted the project's folders, and the lesson was found only in the next session."""
    proj = project(env / "fresh")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(proj))
    with _open() as app:
        assert app.adopt_workspace() is None  # nothing to adopt yet
        written = note(proj / folder, "lessons.md", "pin the wombat version in CI")
        assert app.reindex_file(str(written)) is not None  # old code: None, outside every source
        assert [h.path for h in app.search("wombat version", "keyword", 5).hits] == [str(written)]
        assert str(proj / folder) in {s["path"] for s in app.sources()}
        elsewhere = note(proj / "src", "readme.md", "wombat build notes")
        assert app.reindex_file(str(elsewhere)) is None  # only the project's own folders join
        picture = proj / folder / "diagram.svg"
        picture.write_text("<svg/>")
        assert app.reindex_file(str(picture)) is None  # not a note of an adopted folder: no sync


def test_a_projects_readme_is_searched_in_that_project_and_no_other_root_file(env, monkeypatch):
    """Issue 39: how to run the service locally was in README.md, which no project indexed."""
    a, b = project(env / "a"), project(env / "b")
    readme = a / "README.md"
    readme.write_text("# Billing\n\n## Run it locally\n\n`make serve-local` starts the walrus service on "
                      "port 8080.\n", encoding="utf-8")
    note(a, "CONTRIBUTING.md", "walrus contributors sign here")  # another root file: stays out
    note(a / "src", "README.md", "walrus module internals")  # a README below the root: stays out
    note(b, "README.md", "the other project's walrus")
    for proj, own in ((a, readme), (b, b / "README.md")):
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(proj))
        with _open() as app:
            app.adopt_workspace()
            assert {h.path for h in app.search("walrus service locally", "keyword", 10).hits} == {str(own)}
            assert [s["path"] for s in app.sources()] == [str(own)]  # the file alone, not the project root
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    with _open() as app:  # personal: neither README
        assert app.search("walrus", "keyword", 10).hits == ()


def test_a_vault_sees_only_itself_and_a_filter_cannot_widen_it(env, monkeypatch):
    personal = note(env / "home" / "notes", "n.md", "quokka personal")
    vault = project(env / "vault")
    (vault / ".vault-index").mkdir()
    (vault / ".vault-index" / "config.yaml").write_text("roles: {}\n")
    inside = note(vault / "notes", "v.md", "quokka in the vault")
    monkeypatch.chdir(env / "home")
    with _open() as app:
        app.index([str(personal.parent)])
        app.index([str(vault)])  # a person's index of a vault: the vault's scope, not personal
    monkeypatch.chdir(vault)
    with _open() as app:
        assert app.workspace.kind == "vault"
        assert {h.path for h in app.search("quokka", "keyword", 10).hits} == {str(inside)}
        wide = Filters(path_prefix=str(env))
        assert {h.path for h in app.search("quokka", "keyword", 10, wide).hits} == {str(inside)}
        with pytest.raises(VaultIndexError):
            app.get_note(str(personal))


def test_a_rebuilt_index_keeps_each_sources_workspace(env, monkeypatch):
    from vault_index.engine.stores import recovery

    a = project(env / "a")
    note(a / "docs", "x.md", "kept private")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(a))
    with _open() as app:
        app.adopt_workspace()
    saved = recovery.load_scopes(env / "index.db")
    assert saved == {str(a / "docs"): str(a)}


class _open:
    def __enter__(self):
        self.app = App.open(Settings.from_env())
        return self.app

    def __exit__(self, *exc):
        self.app.close()


def test_upgrade_brings_an_old_project_index_in_under_its_project_and_says_so(env, monkeypatch):
    """Before ADR 0020 a project had its own file; upgrade re-registers its sources in that project's
    workspace (a migration, not a reset), gives an init vault's sources the vault's, and runs once."""
    from vault_index import config
    from vault_index.engine import indexer
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store
    from vault_index.services.upgrade import upgrade

    a = project(env / "a")
    doc = note(a / "docs", "x.md", "the capybara decision")
    old_db = config.project_home(a) / "vault-index.db"
    old_db.parent.mkdir(parents=True)
    old = Store(old_db)
    indexer.sync(old, Models.fixed(None), [str(a / "docs")], embed=False)
    [(_, _, kept)] = old.chunk_keys()  # a vector of a live chunk (one of no chunk is pruned by a sync)
    old.put_vectors("fake-model", [(kept, b"\x00" * 8)])
    old.close()
    vault = project(env / "vault")
    (vault / ".vault-index").mkdir()
    (vault / ".vault-index" / "config.yaml").write_text("roles: {}\n")
    note(vault / "notes", "v.md", "capybara in the vault")
    monkeypatch.chdir(env / "home")
    with _open() as app:
        app.store.add_source(str(vault))  # as `init` registered it before: personal
        said = upgrade(app)
        assert any("moved 1 sources" in line and str(a) in line for line in said), said
        assert any(str(vault) in line and "only in its vault" in line for line in said), said
        assert app.store.source_scopes() == {str(a / "docs"): str(a), str(vault): str(vault)}
        assert set(app.store.vectors_by_hash("fake-model", [kept])) == {kept}  # kept, not re-embedded
        assert app.search("capybara", "keyword", 10).hits == ()  # personal: neither is visible
        assert upgrade(app) == []
    assert old_db.exists()  # the old file is left for the person to delete
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(a))
    with _open() as app:
        assert {h.path for h in app.search("capybara", "keyword", 10).hits} == {str(doc)}
