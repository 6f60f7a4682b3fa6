"""Issue 22 (Medium): the index, its WAL/SHM and side files are the owner's alone (0600, folders
0700), whatever the umask. On the old code the index was created 0644 in a 0755 folder."""

from __future__ import annotations

import os
import stat

import pytest
from vault_index.engine.parsing.chunk import chunk_note
from vault_index.engine.parsing.parse import parse_note
from vault_index.engine.stores.store import Store


@pytest.fixture
def open_umask():
    old = os.umask(0o022)  # the common default: files 0644, folders 0755
    yield
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def fill(store: Store, root) -> None:
    source = store.add_source(str(root))
    text = "# Secret\n\nthe private text of a note\n"
    note = parse_note("a.md", text)
    store.replace_file(source, "a.md", (1.0, len(text)), "h-a", note, chunk_note(note))


def test_a_new_index_and_its_side_files_are_private(tmp_path, monkeypatch, open_umask):
    home = tmp_path / "home"
    monkeypatch.setenv("VAULT_INDEX_HOME", str(home))
    db = home / "projects" / "p-1234" / "vault-index.db"
    store = Store(db)
    fill(store, tmp_path)
    with store.embedding_lock():
        pass
    files = sorted(p for p in db.parent.iterdir() if p.name.startswith(db.name))
    assert {p.name for p in files} >= {db.name, db.name + "-wal", db.name + "-shm", db.name + ".sources.json"}
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
    assert [mode(f) for f in (home, home / "projects", db.parent)] == [0o700] * 3
    store.close()


def test_an_index_made_open_by_an_older_version_is_tightened_on_open(tmp_path, monkeypatch, open_umask):
    home = tmp_path / "home"
    monkeypatch.setenv("VAULT_INDEX_HOME", str(home))
    db = home / "vault-index.db"
    Store(db).close()
    for path in (home, db, *home.glob("vault-index.db*")):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    Store(db).close()
    assert mode(home) == 0o700
    modes = {p.name: mode(p) for p in home.glob("vault-index.db*")}
    assert modes == dict.fromkeys(modes, 0o600)


def test_an_index_outside_the_home_keeps_its_folder_but_not_its_file_open(tmp_path, monkeypatch, open_umask):
    monkeypatch.setenv("VAULT_INDEX_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    Store(project / "index.db").close()
    assert mode(project) == 0o755  # a person's own folder: never chmod'ed
    assert mode(project / "index.db") == 0o600
