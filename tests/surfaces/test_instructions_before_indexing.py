"""Issue 39 (the fresh walkthrough): a server started in a fresh project told the agent "0 markdown
notes in 0 sources" before its first search or sync, though the project's docs/ held fifty notes:
the count was of what was indexed, and nothing was yet. The instructions say what is not indexed
yet, and count what is in the number it takes."""

from __future__ import annotations

from helpers import fresh_machine, note
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.surfaces.tools import build_server


def test_instructions_say_the_projects_folders_are_not_indexed_yet(monkeypatch, tmp_path):
    home = fresh_machine(monkeypatch, tmp_path)
    project = tmp_path / "orders"
    (project / ".git").mkdir(parents=True)
    for n in range(3):
        note(project / "docs", f"page{n}.md", f"the orders page {n}")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.chdir(project)
    app = App.open(Settings.from_env())
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
