"""What `sources`, `files` and `status` say about the index (issue 39): project folders named so a
person can tell them apart, a list of the indexed files, and vector counts that add up."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import CLI, FakeEmbedder, cli_env, write
from vault_index.config import Settings
from vault_index.engine.embedding.models import Models
from vault_index.engine.files.source_names import SOURCE_NAME, default_name, free_name
from vault_index.services.app import App


def test_a_folder_right_inside_its_workspace_is_named_after_both():
    assert default_name("/work/orders/docs", "/work/orders") == "orders/docs"
    assert default_name("/work/orders/docs") == "docs"  # personal: the folder's name, as before
    # deeper: its parts joined; walkthrough I saw a second project's doc/adr named `adr-2`
    assert default_name("/work/orders/doc/adr", "/work/orders") == "orders/doc-adr"
    # walkthrough J: a second project in a folder of the same name got `svc/docs-2`
    assert free_name("svc/docs", "/w/x2/svc", {"svc/docs"}) == "x2-svc/docs"
    assert free_name("svc/docs", "/w/x2/svc", {"svc/docs", "x2-svc/docs"}) == "w-x2-svc/docs"
    assert free_name("svc/docs", "/x2/svc", {"svc/docs", "x2-svc/docs"}) == "x2-svc/docs-2"  # no folder above
    assert free_name("docs", "", {"docs"}) == "docs-2"  # personal: numbered, as before
    assert free_name("svc/docs", "/w/x1/svc", set()) == "svc/docs"
    # walkthrough K: a third, /w/x3/x2/svc, was `x2-svc/docs-2`
    assert free_name("svc/docs", "/w/x3/x2/svc", {"svc/docs", "x2-svc/docs"}) == "x3-x2-svc/docs"
    long = default_name("/w/o/" + "d" * 70, "/w/o")
    assert long.startswith("o/ddd") and len(long) <= 64 and SOURCE_NAME.fullmatch(long)
    assert default_name("/work/My Orders/docs", "/work/My Orders") == "My-Orders/docs"
    assert len(default_name("/w/" + "p" * 80 + "/notes", "/w/" + "p" * 80)) <= 64
    assert all(SOURCE_NAME.fullmatch(n) for n in ("docs", "orders/docs", "a.b_c-d/e"))
    assert not any(SOURCE_NAME.fullmatch(n) for n in ("/docs", "docs/", "a/b/c", "a//b", "x" * 65, "a b"))


@pytest.fixture
def projects(tmp_path, monkeypatch):
    for name in ("VAULT_PROJECT", "VAULT_CONTENT_DIR", "VAULT_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VAULT_INDEX_HOME", str(tmp_path / "home" / ".mcp-memory"))
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "index.db"))
    found = {}
    for project in ("orders", "billing"):
        root = tmp_path / project
        (root / ".git").mkdir(parents=True)
        write(root, "docs/setup.md",
              f"# Setup\n\n## Run\n\nstart the {project} service\n\n## Test\n\nrun the {project} tests\n")
        write(root, "notes/log.md", f"# Log\n\n{project} log entry\n")
        found[project] = root
    return found


def _open(root, monkeypatch, embedder=None) -> App:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    monkeypatch.chdir(root)
    return App.open(Settings.from_env(), models=Models.fixed(embedder))


def test_project_folders_are_named_by_project_listed_file_by_file_and_counted_honestly(projects, monkeypatch):
    orders, billing = projects["orders"], projects["billing"]
    first = _open(orders, monkeypatch, FakeEmbedder())
    try:
        first.adopt_workspace()
    finally:
        first.close()
    app = _open(billing, monkeypatch)  # no model here: billing's chunks wait for vectors
    try:
        app.adopt_workspace()
        assert {s["name"] for s in app.sources()} == {"billing/docs", "billing/notes"}
        assert {s["name"] for s in app.store.source_stats()} == {
            "orders/docs", "orders/notes", "billing/docs", "billing/notes"}  # never docs, docs-2
        hits = app.search("service", mode="keyword", source="billing/docs").hits
        assert [h.path for h in hits] == [str(billing / "docs" / "setup.md")]

        listed = app.files()
        assert [(f["source"], f["path"]) for f in listed] == [
            ("billing/docs", str(billing / "docs" / "setup.md")), ("billing/notes", str(billing / "notes" / "log.md"))]
        assert [f["path"] for f in app.files("billing/notes")] == [str(billing / "notes" / "log.md")]
        with pytest.raises(Exception, match="no source is named 'orders/docs'.*billing/docs"):
            app.files("orders/docs")  # another project's source is not this workspace's

        # orders' chunks have vectors of the fake model, billing's none: status counts this workspace
        app.store.set_meta(app.store.db, "embed_model", FakeEmbedder().fingerprint)
        app.store.db.commit()
        status = app.status()
        assert status["chunks"] == 3 and status["vectors"] == 0
        # no model here (as VAULT_EMBED_MODEL=none): nothing waits, since nothing would embed them
        assert status["embed_off"] and status["vectors_pending"] == 0 and not status["vectors_live"]
    finally:
        app.close()
    back = _open(orders, monkeypatch, FakeEmbedder())
    try:
        status = back.status()
        assert status["vectors"] == status["chunks"] == 3 and status["vectors_pending"] == 0
        assert all(f["vectors"] == f["chunks"] for f in back.files())
    finally:
        back.close()


def test_files_and_status_at_the_terminal(projects, tmp_path):
    orders = projects["orders"]
    env = cli_env(tmp_path / "index.db", CLAUDE_PROJECT_DIR=str(orders), HOME=str(tmp_path / "home"),
                  VAULT_INDEX_HOME=str(tmp_path / "home" / ".mcp-memory"))

    def run(*args):
        return subprocess.run([CLI, *args], env=env, cwd=orders, capture_output=True, text=True, timeout=60)

    assert "orders/docs" in run("sources").stdout
    listed = run("files")
    assert listed.returncode == 0 and listed.stdout.splitlines() == [
        f"orders/docs  {orders / 'docs' / 'setup.md'}  (2 chunks)",
        f"orders/notes  {orders / 'notes' / 'log.md'}  (1 chunk)"]
    as_json = json.loads(run("files", "--source", "orders/notes", "--json").stdout)
    assert as_json == [{"path": str(orders / "notes" / "log.md"), "source": "orders/notes", "chunks": 1, "vectors": 0}]
    unknown = run("files", "--source", "docs")
    assert unknown.returncode == 3 and "orders/docs" in unknown.stderr
