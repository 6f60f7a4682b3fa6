"""SQLite's batch writes its keyword rows at its end (engine/stores/fts_stage.py): what happens
when SQLite itself rolls the batch's transaction back, as it may on a full disk or an I/O error."""

from __future__ import annotations

from vault_index.engine.parsing.chunk import chunk_note
from vault_index.engine.parsing.parse import parse_note
from vault_index.engine.stores.store import Store


def _put(store, source_id: int, path: str, text: str) -> None:
    note = parse_note(path, text)
    store.replace_file(source_id, path, (1.0, len(text)), f"h-{path}", note, chunk_note(note))


def test_a_transaction_rolled_back_whole_takes_its_staged_keyword_rows_with_it(tmp_path):
    store = Store(tmp_path / "i.db")
    sid = store.add_source("/v")
    with store.batch():
        _put(store, sid, "/v/a.md", "# A\n\napple\n\n## More\n\napricot\n")  # chunks 1 and 2
        store.db.rollback()  # what SQLite does itself on SQLITE_FULL or SQLITE_IOERR mid-transaction
        _put(store, sid, "/v/b.md", "# B\n\nbanana\n")  # chunk 1 again: rowids are reused
    assert store.keyword('"apple"', 10) == [] and store.keyword('"apricot"', 10) == []
    [(banana, _)] = store.keyword('"banana"', 10)
    assert store.chunk_rows([banana])[banana].path == "/v/b.md"
    assert store.counts()["chunks"] == 1 == store.db.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0]
    assert not store.db.in_transaction  # the batch ended with its commit
    store.db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    store.close()
