"""An index made before team vaults (ADR 0019) keeps working after the upgrade: SQLite's m005 and
PostgreSQL's m002 make each source's folder its first checkout and each stored note that
checkout's copy, so searches answer the same, nothing is re-embedded and nothing is read again.

The old index is made by indexing with this code and then taking the schema back to the version
before the checkout tables (the tables those migrations add are dropped and the recorded version
lowered): the rows left are exactly the rows the old schema held."""

from __future__ import annotations

import shutil

import pytest
from helpers import BACKENDS, FakeEmbedder

pytestmark = pytest.mark.parametrize("backend", BACKENDS)

QUERIES = ("brake pads groove", "garden soil compost", "sourdough starter", "old runbook deprecated", "chain")
MODES = ("keyword", "vector", "hybrid")
NEW_TABLES = ("copies", "removed_notes", "checkouts")


def _answers(app) -> dict:
    return {(m, q): [(h.path, h.line_start, h.line_end) for h in app.search(q, mode=m, limit=10).hits]
            for m in MODES for q in QUERIES}


def _to_old_schema(store) -> None:
    """The index as the last release before ADR 0019 left it (SQLite version 4, PostgreSQL 1)."""
    with store.transaction() as db:
        for table in NEW_TABLES:
            db.execute(f"DROP TABLE {table}")
        db.execute("ALTER TABLE sources DROP COLUMN scope")  # ADR 0020's column came later still
        if store.kind == "sqlite":
            db.execute("PRAGMA user_version = 4")
        else:  # and before ADR 0028's keyword tables (m004), whose open fills them again
            db.execute("DROP TABLE postings, term_stats, keyword_stats")
            db.execute("ALTER TABLE chunks DROP COLUMN terms, DROP COLUMN length, ADD COLUMN tsv tsvector")
            db.execute("DELETE FROM schema_migrations WHERE number >= 2")


def test_an_old_index_migrates_answers_the_same_and_embeds_nothing(tmp_path, vault, open_app, backend, index_url):
    app = open_app(FakeEmbedder())
    app.index([str(vault)])
    before, counts = _answers(app), app.store.counts()
    _to_old_schema(app.store)
    app.close()

    fake = FakeEmbedder()
    try:
        upgraded = open_app(fake)  # the open migrates
        if backend == "sqlite":
            assert upgraded.store.db.execute("PRAGMA user_version").fetchone()[0] == 6
        else:
            assert upgraded.store.schema_version() == 4
        assert upgraded.store.counts() == counts
        assert [root for _, _, root in upgraded.store.checkouts()] == [str(vault)]
        assert _answers(upgraded) == before
        report = upgraded.index()  # every note is its checkout's copy already: nothing is read again
        assert report.indexed == report.removed == report.chunks_embedded == 0
        assert report.unchanged == counts["files"]
        assert fake.embedded == []  # queries only: no document was embedded

        # the upgraded index takes a second checkout like a new one: no note, chunk or vector twice
        copy = tmp_path / "second-checkout"
        shutil.copytree(vault, copy)
        joined = upgraded.index([str(copy)], name=upgraded.sources()[0]["name"], checkout=True)
        assert joined.indexed == 0 and fake.embedded == [] and upgraded.store.counts() == counts
        assert _answers(upgraded) == before
    finally:
        if backend == "postgresql":  # a pooled database goes back migrated whatever happened above
            from vault_index.engine.stores.pg_store import PgStore

            PgStore(index_url("index.db")).close()
