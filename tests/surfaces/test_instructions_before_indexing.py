"""Issue 39 (the fresh walkthrough): a server started in a fresh project told the agent "0 markdown
notes in 0 sources" before its first search or sync, though the project's docs/ held fifty notes:
the count was of what was indexed, and nothing was yet. The instructions say what is not indexed
yet, and count what is in the number it takes."""

from __future__ import annotations

from helpers import fresh_machine, note
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.surfaces.tools import build_server


def _orders(monkeypatch, tmp_path):
    """(home, project, app): a fresh machine in a project whose docs/ holds three notes, unindexed."""
    home = fresh_machine(monkeypatch, tmp_path)
    project = tmp_path / "orders"
    (project / ".git").mkdir(parents=True)
    for n in range(3):
        note(project / "docs", f"page{n}.md", f"the orders page {n}")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.chdir(project)
    return home, project, App.open(Settings.from_env())


def test_instructions_say_the_projects_folders_are_not_indexed_yet(monkeypatch, tmp_path):
    home, project, app = _orders(monkeypatch, tmp_path)
    try:
        told = build_server(app, home / "memory.jsonl").instructions or ""
        assert "0 markdown notes" not in told, told
        assert f"{project / 'docs'} is not indexed yet" in told and "the first search" in told, told
        app.adopt_workspace()
        told = build_server(app, home / "memory.jsonl").instructions or ""
        assert "3 markdown notes in 1 source (" in told and "not indexed yet" not in told, told
    finally:
        app.close()


def test_the_guide_resource_says_so_too(monkeypatch, tmp_path):
    import threading

    from vault_index.surfaces.resources import guide

    fresh_machine(monkeypatch, tmp_path)
    project = tmp_path / "orders"
    (project / ".git").mkdir(parents=True)
    note(project / "docs", "page.md", "the orders page")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.chdir(project)
    app = App.open(Settings.from_env())
    try:
        page = guide(app, threading.Lock())
        assert f"Not indexed yet (the first search or recall indexes them): {project / 'docs'}." in page, page
        app.adopt_workspace()
        page = guide(app, threading.Lock())
        assert "Not indexed yet" not in page and "1 markdown note in 1 source," in page, page
    finally:
        app.close()


def test_folders_registered_but_not_indexed_are_said_so_too(monkeypatch, tmp_path):
    """Walkthrough I: `claude mcp list`'s health check started a server that registered the project's
    docs/ and stopped before indexing it; the next server's instructions counted what other sources
    held ("2 markdown notes in 2 sources") and said hybrid search was live."""
    home, project, app = _orders(monkeypatch, tmp_path)
    try:
        app.store.add_source(str(project / "docs"), scope=app.workspace.key)  # registered, nothing indexed
        told = build_server(app, home / "memory.jsonl").instructions or ""
        assert f"{project / 'docs'} is not indexed yet" in told, told
        assert "hybrid keyword + vector search is live" not in told, told
        app.adopt_workspace()
        told = build_server(app, home / "memory.jsonl").instructions or ""
        assert "3 markdown notes in 1 source (" in told and "not indexed yet" not in told, told
    finally:
        app.close()


def test_hybrid_is_said_live_only_once_most_chunks_have_vectors():
    from vault_index.surfaces.tools import instructions

    def said(pending: int, live: bool = True, off: bool = False) -> str:
        status = {"sources": [{"path": "/p/docs"}], "files": 3, "chunks": 10, "vectors_pending": pending,
                  "vectors_live": live, "embed_off": off}
        return instructions(status)

    assert "keyword search is live and vectors are still being built" in said(9)
    assert "hybrid keyword + vector search is live" in said(4)
    assert "only keyword search is live (no vectors yet)" in said(0, live=False, off=True)
