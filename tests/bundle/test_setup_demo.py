"""setup.py and an index from before 0012: the example vault still in it is reported, never removed."""

from __future__ import annotations

import sqlite3

from helpers import load_setup

setup = load_setup()


def _index(path, *sources: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sources(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, added_at REAL)")
        conn.executemany("INSERT INTO sources(path, added_at) VALUES (?, 0)", [(s,) for s in sources])


def test_an_old_index_with_the_example_vault_is_recognised_and_left_as_it_was(tmp_path):
    old, mine = tmp_path / "old.db", tmp_path / "mine.db"
    _index(old, "/home/u/vault-index/example-vault", "/home/u/vault-index/notes")
    _index(mine, "/home/u/notes")
    before = old.read_bytes()
    assert setup.demo_in_index(old) is True
    assert old.read_bytes() == before  # opened read-only
    assert setup.demo_in_index(mine) is False
    assert setup.demo_in_index(tmp_path / "missing.db") is False
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert setup.demo_in_index(tmp_path / "junk.db") is False


def test_the_demo_and_personal_paths_follow_the_home_setting(tmp_path, monkeypatch):
    monkeypatch.delenv("VAULT_INDEX_DB", raising=False)
    monkeypatch.delenv("VAULT_CONTENT_DIR", raising=False)
    monkeypatch.setenv("VAULT_INDEX_HOME", str(tmp_path))
    assert setup.personal_db() == tmp_path / "vault-index.db"
    assert setup.demo_db() == tmp_path / "demo" / "vault-index.db"
    assert setup.personal_folder() == tmp_path / "personal"
    assert "example-vault" not in setup.SOURCES
