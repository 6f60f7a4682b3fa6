"""Migration m004: an index made before sources had names gets them on open."""

from __future__ import annotations

import sqlite3

from vault_index.engine.stores.store import MIGRATIONS, Store


def test_old_index_gets_unique_folder_names_on_open(tmp_path):
    db_path = tmp_path / "old.db"
    db = sqlite3.connect(db_path)
    for number, migration in enumerate(MIGRATIONS[:3], start=1):  # the schema before names
        migration(db)
        db.execute(f"PRAGMA user_version = {number}")
    for path in ("/x/notes", "/y/notes", "/z/My Vault"):
        db.execute("INSERT INTO sources(path, added_at) VALUES (?, 0)", (path,))
    db.commit()
    db.close()

    store = Store(db_path)
    try:
        assert {s["path"]: s["name"] for s in store.source_stats()} == {
            "/x/notes": "notes", "/y/notes": "notes-2", "/z/My Vault": "My-Vault"}
        assert store.source_root("notes-2") == "/y/notes"
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    finally:
        store.close()
