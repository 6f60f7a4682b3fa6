"""What only the PostgreSQL store has: migrations under an advisory lock, the FTS5-to-tsquery
translation, HNSW above a threshold (and exact search below it, and with filters)."""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pytest
from conftest import database_url
from vault_index.engine.parsing.chunk import chunk_note
from vault_index.engine.parsing.parse import parse_note

# Every test here needs the postgres extra (a server, or engine/stores/pg_store, which imports psycopg):
# they get it through fixtures that skip without it, so the module collects on a machine without it.
pytestmark = pytest.mark.extras


@pytest.fixture
def pg_store(pg_store_module):
    return pg_store_module  # engine/stores/pg_store, or a skip without the postgres extra


@pytest.fixture
def backend() -> str:
    return "postgresql"  # store_factory gives PostgreSQL stores in this module


def _put(store, source_id: int, path: str, text: str) -> None:
    note = parse_note(path, text)
    store.replace_file(source_id, path, (1.0, len(text)), f"h-{path}-{len(text)}", note, chunk_note(note))


def test_processes_opening_a_fresh_database_at_once_migrate_it_once(pg_server_url, pg_store):
    import psycopg  # the postgres extra: present, since pg_server_url did not skip

    name = f"t_fresh_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url, errors, stores = database_url(pg_server_url, name), [], []
    start = threading.Barrier(4)

    def open_one():
        start.wait()
        try:
            stores.append(pg_store.PgStore(url))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == [] and len(stores) == 4
        rows = stores[0].db.execute("SELECT number, name FROM schema_migrations").fetchall()
        assert rows == [(1, "m001_initial"), (2, "m002_checkouts"), (3, "m003_source_scopes"),
                        (4, "m004_keyword_terms")]
    finally:
        for store in stores:
            store.close()
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_the_keyword_query_text_is_read_term_by_term_and_nothing_else_is_accepted(pg_store):
    from vault_index.engine.stores import pg_keywords

    assert pg_keywords.parse_match('"apple"') == (["apple"], "OR")
    assert pg_keywords.parse_match('"a" OR "b c"') == (["a", "b c"], "OR")
    assert pg_keywords.parse_match('"o""neil" AND "x"') == (['o"neil', "x"], "AND")
    for bad in ("", "apple", '"a" NEAR "b"', '"a" OR "b" AND "c"', '"a" "b"'):
        with pytest.raises(ValueError):
            pg_keywords.parse_match(bad)


def test_a_term_in_title_and_heading_ranks_above_one_in_the_body_and_and_needs_every_term(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/body.md", "# Misc\n\nsome notes mention a sprocket once, among many other words here\n")
    _put(store, sid, "/v/title.md", "# Sprocket\n\nmany other words here, about nothing in particular\n")
    _put(store, sid, "/v/both.md", "# Chain\n\nsprocket and chain\n")
    rows = store.chunk_rows(i for i, _ in store.keyword('"sprocket"', 10))
    ranked = [rows[i].path for i, _ in store.keyword('"sprocket"', 10)]
    assert ranked[0] == "/v/title.md" and set(ranked) == {"/v/body.md", "/v/title.md", "/v/both.md"}
    both = store.keyword('"sprocket" AND "chain"', 10)
    assert [store.chunk_rows([i])[i].path for i, _ in both] == ["/v/both.md"]
    assert store.term_doc_count('"sprocket"', 2) == 2  # counted no further than the cap
    assert store.keyword('"the"', 10) == [] and store.term_doc_count('"the"', 10) == 0  # a stopword: no error
    assert store.keyword('"o""neil"', 10) == []  # a quote inside a term is a literal, not syntax


def test_a_rare_term_outweighs_a_common_one_as_bm25_idf_would(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    for i in range(8):
        _put(store, sid, f"/v/common{i}.md", f"# C{i}\n\nwidget widget widget number {i}\n")
    _put(store, sid, "/v/rare.md", "# R\n\nwidget and a flange\n")
    (top, _), *_ = store.keyword('"widget" OR "flange"', 10)
    assert store.chunk_rows([top])[top].path == "/v/rare.md"  # by IDF; ts_rank alone favours "widget widget widget"


def test_a_nul_past_the_binary_sniff_is_stored_as_a_replacement_character(store_factory):
    store = store_factory()
    sid = store.add_source("/v")
    _put(store, sid, "/v/nul.md", "# Nul\n\nbefore\x00after zebraword\n")
    (cid, _), = store.keyword('"zebraword"', 10)
    assert "before\ufffdafter" in store.chunk_rows([cid])[cid].text


def _vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    points = centres[rng.integers(0, 20, n)] + 0.3 * rng.normal(size=(n, dim))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def test_hnsw_is_built_above_the_threshold_used_by_search_and_agrees_with_exact_search(pg_database, pg_store,
                                                                                     monkeypatch):
    from vault_index.engine.stores import pg_schema, pg_vectors

    store = pg_store.PgStore(pg_database(), hnsw_min_vectors=300)
    try:
        sid = store.add_source("/v")
        for i in range(60):
            _put(store, sid, f"/v/n{i}.md", "\n\n".join(f"## S{j}\n\nnote {i} part {j} words" for j in range(6)))
        hashes = [h for _, _, h in store.chunk_keys()]
        vectors = _vectors(len(hashes), 32)
        store.put_vectors("m", ((h, v.tobytes()) for h, v in zip(hashes, vectors, strict=True)))
        index = store.open_vector_index("m")
        queries = _vectors(20, 32, seed=1)
        exact = [index.search(q, 10) for q in queries]
        assert not store.has_vector_index("m")
        store.checkpoint()  # after a sync: 360 vectors >= 300, so the HNSW index is built
        assert store.has_vector_index("m")
        assert store.vector_index_name("m") in index.plan(queries[0])
        (definition,) = store.db.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                                         (store.vector_index_name("m"),)).fetchone()
        assert f"m='{pg_schema.HNSW_M}', ef_construction='{pg_schema.HNSW_EF_CONSTRUCTION}'" in definition, definition
        assert store.vector_search_factor("m") == pg_schema.HNSW_EF_SEARCH_FACTOR == 4
        approximate = [index.search(q, 10) for q in queries]
        recall = np.mean([len({c for c, _ in a} & {c for c, _ in e}) / 10 for a, e in zip(approximate, exact,
                                                                                            strict=True)])
        assert recall >= 0.9
        # scores are true cosines either way
        cid, score = approximate[0][0]
        row = hashes.index(store.chunk_keys()[cid - 1][2])
        assert abs(score - float(vectors[row] @ queries[0])) < 1e-5
        # a filter is applied in SQL, exactly, whatever the index
        allowed = {c for c, _, _ in store.chunk_keys()[:30]}
        filtered = index.search(queries[0], 5, allowed)
        assert {c for c, _ in filtered} <= allowed and len(filtered) == 5
        by_hand = sorted(((float(vectors[hashes.index(h)] @ queries[0]), c) for c, _, h in store.chunk_keys()
                          if c in allowed), reverse=True)[:5]
        assert [c for c, _ in filtered] == [c for _, c in by_hand]
        assert index.search(queries[0], 5, set()) == []
        # a broad filter (over FILTER_EXACT_MAX chunks) filters the index's nearest in the same query
        monkeypatch.setattr(pg_vectors, "FILTER_EXACT_MAX", 10)
        monkeypatch.setattr(index, "exact", lambda *a: pytest.fail("the index should have found enough"))
        broad = {c for c, _, _ in store.chunk_keys()[::2]}
        found = index.search(queries[0], 5, broad)
        assert len(found) == 5 and {c for c, _ in found} <= broad
        assert found == [p for p in approximate[0] if p[0] in broad][:5]
    finally:
        store.close()


def test_note_similarity_is_the_cosine_to_the_centroid_of_the_note(pg_database, pg_store):
    store = pg_store.PgStore(pg_database())
    try:
        sid = store.add_source("/v")
        _put(store, sid, "/v/a.md", "## One\n\nalpha\n\n## Two\n\nbeta\n")
        _put(store, sid, "/v/b.md", "## Three\n\ngamma\n")
        keys = store.chunk_keys()
        vectors = _vectors(len(keys), 8)
        store.put_vectors("m", ((h, v.tobytes()) for (_, _, h), v in zip(keys, vectors, strict=True)))
        query = vectors[2]
        got = store.open_vector_index("m").note_similarity(query, [c for c, _, _ in keys])
        centroid = vectors[:2].sum(axis=0)
        assert got[keys[0][0]] == pytest.approx(float(centroid @ query / np.linalg.norm(centroid)), abs=1e-5)
        assert got[keys[2][0]] == pytest.approx(1.0, abs=1e-5)
    finally:
        store.close()


def test_an_index_built_with_pgvectors_ef_construction_64_is_searched_with_the_wider_list(pg_database, pg_store):
    from vault_index.engine.stores import pg_schema

    store = pg_store.PgStore(pg_database(), hnsw_min_vectors=10**9)
    try:
        sid = store.add_source("/v")
        _put(store, sid, "/v/n.md", "# A\n\none note")
        [(_, _, digest)] = store.chunk_keys()
        store.put_vectors("m", [(digest, _vectors(1, 8)[0].tobytes())])
        store.db.execute(f"CREATE INDEX {store.vector_index_name('m')} ON embeddings USING hnsw "
                         "((vector::vector(8)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                         "WHERE model = 'm'")
        assert store.vector_search_factor("m") == pg_schema.HNSW_EF_SEARCH_FACTOR_EF64 == 8
    finally:
        store.close()


def test_ef_search_is_the_factor_times_the_wanted_vectors_within_pgvectors_bounds(pg_store):
    from vault_index.engine.stores.pg_schema import HNSW_EF_SEARCH_FACTOR, HNSW_EF_SEARCH_MAX
    from vault_index.engine.stores.pg_sql import ef_search_for

    assert ef_search_for(100) == HNSW_EF_SEARCH_FACTOR * 100  # what the fusion asks: 2 x 50
    assert ef_search_for(1) == 40  # pgvector's default is the floor
    assert ef_search_for(10_000) == HNSW_EF_SEARCH_MAX == 1000  # pgvector refuses more


_NOTES = {
    "/v/rust.md": "# Ownership\n\nRust's borrow checker can't be fooled: a borrow ends where its last use is. "
                  "Running the borrow checker runs at compile time.\n\n## Borrowing\n\nstd::fs::read borrows "
                  "nothing; x-ray vision of the borrow checker.",
    "/v/xray.md": "# X-ray machines\n\nAn x-ray machine can't see through lead. X ray, ray x, x-ray x-ray.",
    "/v/cafe.md": "---\ntitle: Café notes\n---\n# Naïve café\n\nThe café can't open; rock'n'roll at the café. "
                  "Running, runs, ran.",
    "/v/long.md": "# Long\n\n" + " ".join(f"word{i % 37} borrow" if i % 5 == 0 else f"word{i % 37}"
                                          for i in range(300)),
}
_MATCHES = ['"borrow"', '"can\'t" OR "borrow"', '"x-ray" AND "machine"', '"run" OR "running" OR "runs"',
            '"borrow" AND "checker"', '"nothing"', '"absent"', '"x-ray"', '"cafe" OR "café"', '"ray x"',
            '"word3" OR "borrow" OR "x"', '"_" OR "borrow"', '"rock\'n\'roll"']


def _keyed(store, pairs):
    rows = store.chunk_rows(cid for cid, _ in pairs)
    return [((rows[cid].path, rows[cid].line_start), score) for cid, score in pairs]


def test_keyword_results_counts_and_scores_are_sqlites_to_the_bit(tmp_path, store_factory, pg_database, pg_store):
    """ADR 0028: FTS5's terms, document counts and bm25 on PostgreSQL, so both rank alike, after
    writes, rewrites and deletes alike."""
    from vault_index.engine.stores.migrate_store import copy_index
    from vault_index.engine.stores.store import Store

    lite, pg = Store(tmp_path / "lite.db"), store_factory()
    found = 0
    try:
        for rewrite in (False, True):
            for store in (lite, pg):
                sid = store.add_source("/v")
                for path, text in _NOTES.items():
                    _put(store, sid, path, text + (" Borrow again." if rewrite else ""))
                if rewrite:
                    store.delete_file("/v/cafe.md")
            assert pg.chunk_count() == lite.chunk_count() > 0
            for match in _MATCHES:
                want = _keyed(lite, lite.keyword(match, 50))
                assert _keyed(pg, pg.keyword(match, 50)) == want, match
                found += len(want)
                for term in match.split(" OR " if " OR " in match else " AND "):
                    assert pg.term_doc_count(term, 1000) == lite.term_doc_count(term, 1000), term
        assert found > 40  # the queries do find chunks
        stats = pg.db.execute("SELECT term, df FROM term_stats ORDER BY term").fetchall()
        recount = pg.db.execute("SELECT term, COUNT(*) FROM postings GROUP BY term ORDER BY term").fetchall()
        tokens = pg.db.execute("SELECT tokens FROM keyword_stats").fetchone()[0]
        assert stats == recount and tokens == pg.db.execute("SELECT SUM(length) FROM chunks").fetchone()[0]
        # migrate's bulk copy makes the same terms, postings and counts as the writes did
        copied = pg_store.PgStore(pg_database("copy"))
        try:
            copy_index(lite, copied)
            for table in ("term_stats", "keyword_stats"):
                assert copied.db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() == \
                    pg.db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for match in _MATCHES:
                assert _keyed(copied, copied.keyword(match, 50)) == _keyed(lite, lite.keyword(match, 50)), match
        finally:
            copied.close()
    finally:
        lite.close()


def test_an_index_of_schema_3_gets_fts5s_terms_and_counts_for_its_chunks_on_first_open(pg_database, pg_store,
                                                                                       tmp_path):
    """m004_keyword_terms on a database written before it: the tsvector goes, every stored chunk gets
    its terms, postings and counts, and keyword search then agrees with SQLite's."""
    import psycopg
    from vault_index.engine.stores import pg_schema
    from vault_index.engine.stores.store import Store

    url = pg_database()
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP SCHEMA public CASCADE")
        db.execute("CREATE SCHEMA public")
        db.execute("CREATE TABLE schema_migrations(number INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                   "applied_at DOUBLE PRECISION)")
        for number, migration in enumerate(pg_schema.MIGRATIONS[:3], start=1):
            migration(db)
            db.execute("INSERT INTO schema_migrations VALUES (%s, %s, 0)", (number, migration.__name__))
        db.execute("INSERT INTO sources(path, name) VALUES ('/v', 'v')")
        for i, (path, text) in enumerate(_NOTES.items(), start=1):
            db.execute("INSERT INTO files(source_id, path) VALUES (1, %s)", (path,))
            for ordinal, chunk in enumerate(chunk_note(parse_note(path, text))):
                db.execute("INSERT INTO chunks(file_id, ordinal, heading, line_start, line_end, text, hash, title) "
                           "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                           (i, ordinal, chunk.heading, chunk.line_start, chunk.line_end, chunk.text, chunk.hash,
                            parse_note(path, text).title))
    store, lite = pg_store.PgStore(url), Store(tmp_path / "lite.db")
    try:
        assert store.schema_version() == len(pg_schema.MIGRATIONS)
        sid = lite.add_source("/v")
        for path, text in _NOTES.items():
            _put(lite, sid, path, text)
        assert store.chunk_count() == lite.chunk_count()
        for match in _MATCHES:
            assert _keyed(store, store.keyword(match, 50)) == _keyed(lite, lite.keyword(match, 50)), match
    finally:
        store.close()
        lite.close()
