"""The index stores, SQLite and PostgreSQL alike: file swaps, filters, source removal, vector
pruning, schema version (each test runs on both backends; conftest `backend`)."""

from __future__ import annotations

import pytest
from helpers import BACKENDS
from vault_index.engine.parsing.chunk import chunk_note
from vault_index.engine.parsing.parse import parse_note
from vault_index.engine.stores.store import MIGRATIONS, Store

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def _put(store, source_id: int, path: str, text: str) -> None:
    note = parse_note(path, text)
    store.replace_file(source_id, path, (1.0, len(text)), f"h-{path}-{len(text)}", note, chunk_note(note))


def _fts_rows(store) -> int:
    """Rows the keyword side searches: SQLite's FTS5 table; PostgreSQL's chunks with postings, which
    its kept total must equal (each test's chunks hold terms)."""
    if store.kind == "sqlite":
        return store.db.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0]
    with_postings = store.db.execute("SELECT COUNT(DISTINCT chunk_id) FROM postings").fetchone()[0]
    assert store.chunk_count() == with_postings
    return with_postings


def test_fresh_store_is_migrated_to_the_latest_version(tmp_path, backend, store_factory):
    if backend == "postgresql":
        from vault_index.engine.stores import pg_store

        store = store_factory()
        assert store.schema_version() == len(pg_store.MIGRATIONS)
        store.close()
        again = store_factory()  # reopening does not re-run migrations
        assert again.schema_version() == len(pg_store.MIGRATIONS)
        assert again.counts() == {"sources": 0, "files": 0, "chunks": 0}
        return
    store = Store(tmp_path / "deep" / "dir" / "i.db")
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.recovered_from is None
    store.close()
    again = Store(tmp_path / "deep" / "dir" / "i.db")  # reopening does not re-run migrations
    assert again.counts() == {"sources": 0, "files": 0, "chunks": 0}
    again.close()


def test_replace_file_swaps_chunks_and_fts_rows(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/a.md", "# A\n\nfirst apple\n\n## B\n\nbanana\n")
    assert store.counts()["chunks"] == 2 and _fts_rows(store) == 2
    generation = store.generation()
    _put(store, sid, "/v/a.md", "# A\n\ncherry only\n")
    assert store.counts() == {"sources": 1, "files": 1, "chunks": 1}
    assert _fts_rows(store) == 1
    assert store.keyword('"apple"', 10) == []
    assert len(store.keyword('"cherry"', 10)) == 1
    assert store.generation() > generation
    store.close()


def test_a_batch_of_replaces_a_removal_and_a_failed_step_leaves_keywords_matching_the_chunks(store_factory):
    # SQLite writes a batch's keyword rows at its end (engine/stores/fts_stage.py): rowids deleted
    # and reused inside it, and a step that failed after staging a row, must come out as if each
    # step had written its rows at once
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/a.md", "# A\n\nalpha apple\n\n## B\n\nbeta banana\n")
    _put(store, sid, "/v/b.md", "# B\n\ngone grapefruit\n")
    failing = parse_note("/v/f.md", "# F\n\nfailing fig\n")
    with store.batch():
        _put(store, sid, "/v/a.md", "# A\n\ncherry\n\n## C\n\ncitrus\n")
        _put(store, sid, "/v/a.md", "# A\n\ndamson\n\n## D\n\ndate\n")  # replaced twice
        store.delete_file("/v/b.md")
        _put(store, sid, "/v/c.md", "# C\n\ncranberry\n")
        _put(store, sid, "/v/e.md", "# E\n\nelder\n")
        store.delete_file("/v/c.md")  # staged and dropped again, its rowid not reused
        with pytest.raises(AttributeError):  # its first chunk is staged, the second is no chunk
            store.replace_file(sid, "/v/f.md", (1.0, 1), "h-f", failing, [*chunk_note(failing), None])
    for gone in ("apple", "banana", "cherry", "citrus", "grapefruit", "cranberry", "fig"):
        assert store.keyword(f'"{gone}"', 10) == [], gone
    [(damson, _)] = store.keyword('"damson"', 10)
    [(elder, _)] = store.keyword('"elder"', 10)
    rows = store.chunk_rows([damson, elder])
    assert (rows[damson].path, rows[damson].text, rows[elder].path) == ("/v/a.md", "damson", "/v/e.md")
    assert store.counts() == {"sources": 1, "files": 2, "chunks": 3} and _fts_rows(store) == 3
    if store.kind == "sqlite":
        store.db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        assert store.db.execute("SELECT COUNT(*) FROM chunks c JOIN chunks_fts t ON t.rowid = c.id "
                                "WHERE t.body = c.text").fetchone()[0] == 3
    store.close()


def test_path_prefix_filter_is_literal_and_stops_at_folder_boundaries(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    for path in ("/v/a_b/x.md", "/v/aXb/y.md", "/v/a_bc/z.md", "/v/100%/p.md", "/v/100x/q.md"):
        _put(store, sid, path, f"# {path}\n\ntext\n")
    rows = lambda ids: {r.path for r in store.chunk_rows(ids).values()}  # noqa: E731
    assert rows(store.chunk_ids_matching("/v/a_b", (), None)) == {"/v/a_b/x.md"}
    assert rows(store.chunk_ids_matching("/v/a_b/", (), None)) == {"/v/a_b/x.md"}
    assert rows(store.chunk_ids_matching("/v/100%", (), None)) == {"/v/100%/p.md"}
    assert rows(store.chunk_ids_matching("/v/aXb/y.md", (), None)) == {"/v/aXb/y.md"}
    store.close()


def test_tag_and_status_filters_combine(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/1.md", "---\ntags: [red, blue]\nstatus: draft\n---\none\n")
    _put(store, sid, "/v/2.md", "---\ntags: [red]\nstatus: canonical\n---\ntwo\n")
    _put(store, sid, "/v/3.md", "three #Red\n")
    paths = lambda ids: sorted(r.path for r in store.chunk_rows(ids).values())  # noqa: E731
    assert paths(store.chunk_ids_matching(None, ("red",), None)) == ["/v/1.md", "/v/2.md", "/v/3.md"]
    assert paths(store.chunk_ids_matching(None, ("#RED", "blue"), None)) == ["/v/1.md"]
    assert paths(store.chunk_ids_matching(None, ("red",), "canonical")) == ["/v/2.md"]
    assert store.chunk_ids_matching(None, ("green",), None) == set()
    store.close()


def test_remove_source_drops_its_files_chunks_fts_rows_and_problems_only(store_factory):
    store = store_factory()
    keep, drop = store.add_source("/keep"), store.add_source("/drop")
    _put(store, keep, "/keep/k.md", "# K\n\nkept words\n")
    _put(store, drop, "/drop/d.md", "# D\n\ndropped words\n\n## E\n\nmore\n")
    store.record_problem("/drop/bad.md", "skipped: binary file")
    store.record_problem("/dropped-sibling.md", "unrelated")
    assert store.remove_source("/drop") == 1
    assert store.sources() == [(keep, "/keep")]
    assert store.counts() == {"sources": 1, "files": 1, "chunks": 1} and _fts_rows(store) == 1
    assert store.problems() == [("/dropped-sibling.md", "unrelated")]
    store.close()


def test_prune_vectors_keeps_only_vectors_of_live_chunks(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/a.md", "# A\n\nalpha\n")
    live_hash = store.chunk_keys()[0][2]
    store.put_vectors("m1", [(live_hash, b"\x00" * 8), ("orphan", b"\x01" * 8)])
    store.put_vectors("m2", [(live_hash, b"\x02" * 8)])
    assert store.prune_vectors() == 1
    assert store.vector_count("m1") == 1 and store.vector_count("m2") == 1
    assert [h for (h, *_) in store.chunks_missing_vectors("m3")] == [live_hash]
    store.close()


def test_any_missing_vectors_answers_what_chunks_missing_vectors_lists(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/a.md", "# A\n\nalpha\n")
    _put(store, sid, "/v/b.md", "# B\n\nbeta\n\n## C\n\ngamma\n")
    hashes = {path: [h for (_, fid, h) in store.chunk_keys() if fid == file_id]
              for file_id, path in store.db.execute("SELECT id, path FROM files")}
    store.put_vectors("m", [(h, b"\x00" * 8) for h in hashes["/v/a.md"]])
    store.put_vectors("m", [(hashes["/v/b.md"][0], b"\x00" * 8)])  # one of b's two chunks
    for model, path in (("m", None), ("m", "/v/a.md"), ("m", "/v/b.md"), ("other", None), ("m", "/v/none.md")):
        assert store.any_missing_vectors(model, path) == bool(store.chunks_missing_vectors(model, path)), (model, path)
    assert store.any_missing_vectors("m") and not store.any_missing_vectors("m", "/v/a.md")
    store.put_vectors("m", [(hashes["/v/b.md"][1], b"\x00" * 8)])
    assert not store.any_missing_vectors("m")
    store.close()


def test_collection_filter_reads_the_frontmatter_collection(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/1.md", "---\ncollection: garden\n---\none\n")
    _put(store, sid, "/v/2.md", "---\ncollection: work\ntags: [red]\n---\ntwo\n")
    _put(store, sid, "/v/3.md", "three, no frontmatter\n")
    paths = lambda ids: sorted(r.path for r in store.chunk_rows(ids).values())  # noqa: E731
    assert paths(store.chunk_ids_matching(None, (), None, collection="garden")) == ["/v/1.md"]
    assert paths(store.chunk_ids_matching(None, ("red",), None, collection="work")) == ["/v/2.md"]
    assert store.chunk_ids_matching(None, ("red",), None, collection="garden") == set()
    store.close()


def test_vectors_come_back_as_the_float32_bytes_that_went_in(store_factory):
    import numpy as np

    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/a.md", "# A\n\nalpha\n\n## B\n\nbeta\n")
    keys = store.chunk_keys()
    vectors = {h: np.random.default_rng(i).normal(size=6).astype(np.float32).tobytes() for i, (_, _, h) in
               enumerate(keys)}
    store.put_vectors("m", vectors.items())
    assert store.vectors_by_hash("m") == vectors
    assert store.vectors_by_hash("m", [keys[0][2]]) == {keys[0][2]: vectors[keys[0][2]]}
    assert dict(store.iter_vectors("m")) == vectors
    assert store.file_vectors("m", [keys[0][0]]) == [(c, f, vectors[h]) for c, f, h in keys]
    store.close()


def test_the_chunk_count_follows_writes_of_another_connection(store_factory):
    writer = store_factory("shared")
    reader = store_factory("shared")  # a second connection to the same index (another process)
    source = writer.add_source("/v")
    _put(writer, source, "/v/a.md", "# A\n\nalpha text\n\n## More\n\nbeta text\n")
    assert reader.chunk_count() == 2
    assert reader.chunk_count() == 2  # counted once while the generation stays
    _put(writer, source, "/v/b.md", "# B\n\ngamma text\n")
    assert reader.chunk_count() == 3
    writer.delete_file("/v/a.md")
    assert reader.chunk_count() == 1
    writer.remove_source("/v")
    assert reader.chunk_count() == 0


def test_missing_vectors_narrow_to_the_sources_asked_for(store_factory):
    """Issue 39: a sync embeds only the sources it synced; the store lists what those lack, not
    every chunk of the shared index (another project's pending chunks are that project's)."""
    store = store_factory()
    ours, theirs = store.add_source("/ours"), store.add_source("/theirs")
    _put(store, ours, "/ours/a.md", "# A\n\nalpha\n")
    _put(store, theirs, "/theirs/b.md", "# B\n\nbeta\n")
    hashes = {fid: h for (_, fid, h) in store.chunk_keys()}
    by_path = dict(store.db.execute("SELECT path, id FROM files"))
    assert [h for (h, *_) in store.chunks_missing_vectors("m", sources=[ours])] == [hashes[by_path["/ours/a.md"]]]
    assert len(store.chunks_missing_vectors("m", sources=[ours, theirs])) == 2
    assert store.chunks_missing_vectors("m", sources=[]) == []
    assert store.any_missing_vectors("m", sources=[theirs]) and not store.any_missing_vectors("m", sources=[])
    store.put_vectors("m", [(hashes[by_path["/ours/a.md"]], b"\x00" * 8)])
    assert not store.any_missing_vectors("m", sources=[ours]) and store.any_missing_vectors("m")
    assert store.chunks_missing_vectors("m", sources=[ours]) == []
    store.close()
