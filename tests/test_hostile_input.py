"""What an agent or a hostile note could try: every way in applies the same skip rules, and no
note, heading or frontmatter can crash or blow up the index."""

from __future__ import annotations

import os
import time

import pytest
from helpers import snapshot, write
from vault_index.engine.files import sources
from vault_index.errors import OutsideSourcesError, UsageError
from vault_index.services.search import fusion


def _paths(result) -> set[str]:
    return {hit.path for hit in result.hits}


@pytest.mark.parametrize(
    "rel", ["secrets/key.md", ".hidden/h.md", "drafts/ignored.md", "creds.json", "node_modules/x.md"]
)
def test_single_file_reindex_skips_what_the_folder_walk_skips(tmp_path, open_app, fake_embedder, rel):
    vault = tmp_path / "vault"
    write(vault, "ok.md", "# Ok\n\nplain note\n")
    write(vault, ".indexignore", "drafts/\n")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    target = write(vault, rel, "# Leak\n\nzzsecretpass\n")
    assert app.reindex_file(str(target)) is None
    assert app.search("zzsecretpass", mode="keyword").hits == ()
    assert str(target) not in {p for p in app.store.file_paths(app.store.sources()[0][0])}


def test_single_file_reindex_indexes_a_new_note_once_even_through_a_linked_folder(tmp_path, open_app, fake_embedder):
    vault = tmp_path / "vault"
    write(vault, "real/x.md", "# X\n\nfirst text\n")
    os.symlink(vault / "real", vault / "link")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    keyed = app.store.file_paths(app.store.sources()[0][0])
    assert len(keyed) == 1  # the walk reads the real folder once
    (only,) = keyed
    write(vault, "real/x.md", "# X\n\nedited quokka text\n")
    report = app.reindex_file(str(vault / "real" / "x.md"))
    assert report is not None and report.indexed == 1
    report = app.reindex_file(str(vault / "link" / "x.md"))
    assert app.store.file_paths(app.store.sources()[0][0]) == {only}  # still one row
    assert [h.path for h in app.search("quokka", mode="keyword").hits] == [only]


def test_get_note_serves_only_notes_the_index_would_take(tmp_path, open_app):
    vault = tmp_path / "vault"
    write(vault, "ok.md", "# Ok\n\nfine\n")
    write(vault, "creds.json", '{"password": "hunter2"}')
    write(vault, ".indexignore", "private.md\n")
    write(vault, "private.md", "# Private\n\nnot for agents\n")
    write(vault, "big.md", "# Big\n\n" + "x" * 1_999_000)
    write(vault, "huge.md", "# Huge\n\n" + "x" * 2_000_001)
    app = open_app(None)
    app.index([str(vault)])
    assert app.get_note("ok.md")["content"].startswith("# Ok")
    for rel in ("creds.json", "private.md"):
        with pytest.raises(OutsideSourcesError, match="never served"):
            app.get_note(rel)
    big = app.get_note("big.md")  # windowed and capped
    assert big["truncated"] and len(big["content"]) <= 100_000
    with pytest.raises(UsageError, match="over the"):  # too big to index, so not served either
        app.get_note("huge.md")


@pytest.mark.parametrize("folder", [".ssh", "secrets", "vault/.obsidian"])
def test_hidden_or_secret_folders_cannot_become_sources(tmp_path, open_app, folder):
    target = tmp_path / folder
    write(target, "id_rsa.md", "PRIVATE KEY\n")
    app = open_app(None)
    with pytest.raises(OutsideSourcesError, match="never indexes"):
        app.index([str(target)])
    assert app.store.sources() == []


def test_huge_headings_and_titles_index_without_crashing(tmp_path, open_app, fake_embedder):
    vault = tmp_path / "vault"
    write(vault, "heading.md", "# " + "h" * 3000 + "\n\nbody under a giant heading\n")
    write(vault, "title.md", "---\ntitle: " + "t" * 1700 + "\n---\n## Part\n\ntext under a giant title\n")
    write(vault, "ok.md", "# Ok\n\nstill indexed after the others\n")
    fake_embedder.max_tokens = 64
    app = open_app(fake_embedder)
    report = app.index([str(vault)])
    assert report.indexed == 3
    assert _paths(app.search("giant heading", mode="keyword")) >= {str(vault / "heading.md")}
    assert str(vault / "ok.md") in _paths(app.search("still indexed", mode="keyword"))


def test_yaml_alias_bombs_are_refused_quickly_and_the_body_still_indexed(tmp_path, open_app):
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    vault = tmp_path / "vault"
    bomb = write(vault, "bomb.md", "---\n" + "\n".join(levels) + "\ntags: [*h]\n---\n# Bomb\n\nbody survives\n")
    before = snapshot(vault)
    app = open_app(None)
    started = time.perf_counter()
    report = app.index([str(vault)])
    assert time.perf_counter() - started < 5
    assert any(p == str(bomb) and "aliases" in m for p, m in report.problems)
    assert _paths(app.search("survives", mode="keyword")) == {str(bomb)}
    assert app.store.path.stat().st_size < 5_000_000
    assert snapshot(vault) == before


def test_an_unlistable_folder_keeps_its_notes_instead_of_dropping_them(tmp_path, open_app, monkeypatch):
    vault = tmp_path / "vault"
    write(vault, "sub/kept.md", "# Kept\n\npangolin\n")
    app = open_app(None)
    app.index([str(vault)])
    real_scandir = os.scandir

    def failing(path):  # the OS refusing to list one folder (root reads everything, so simulate)
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(sources.os, "scandir", failing)
    report = app.index()
    assert report.removed == 0
    assert any("cannot list" in m for _, m in report.problems)
    assert _paths(app.search("pangolin", mode="keyword")) == {str(vault / "sub" / "kept.md")}


def test_deprecated_penalty_lowers_negative_scores_too():
    order = fusion.demote([(1, -0.05), (2, -0.06), (3, 0.4)], {1: "deprecated", 3: "deprecated"})
    assert [cid for cid, _ in order] == [3, 2, 1]
    assert dict(order)[1] < -0.05 and dict(order)[3] < 0.4
