"""`vault-index migrate --to postgresql://...`: the SQLite index copied, vectors and all, with no
embedder call; search answers the same afterwards; a non-empty target is refused."""

from __future__ import annotations

import subprocess
from dataclasses import replace

from helpers import CLI, FakeEmbedder, cli_env, make_settings
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App

QUERIES = ("brake pads groove", "garden soil compost", "sourdough starter", "old runbook deprecated", "chain")


def _top(app: App, mode: str) -> dict[str, list[tuple[str, int]]]:
    return {q: [(h.path, h.line_start) for h in app.search(q, mode=mode, limit=10).hits] for q in QUERIES}


def test_migrate_copies_everything_without_embedding_and_search_answers_the_same(tmp_path, vault, pg_database):
    db = tmp_path / "index.db"
    sqlite = App.open(make_settings(tmp_path), models=Models.fixed(FakeEmbedder(), None))
    sqlite.index([str(vault)])
    before = {mode: _top(sqlite, mode) for mode in ("keyword", "vector", "hybrid")}
    counts, links = sqlite.store.counts(), sqlite.store.links("unresolved", "")
    sqlite.close()

    url = pg_database("migrated")
    proc = subprocess.run([CLI, "migrate", "--to", url], env=cli_env(db), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"copied 1 sources, {counts['files']} files, {counts['chunks']} chunks" in proc.stdout
    assert "nothing was re-embedded" in proc.stdout

    fake = FakeEmbedder()
    pg = App.open(replace(make_settings(tmp_path, "pg-local.db"), index_url=url), models=Models.fixed(fake, None))
    try:
        assert pg.store.counts() == counts and pg.store.links("unresolved", "") == links
        after = {mode: _top(pg, mode) for mode in ("keyword", "vector", "hybrid")}
        assert fake.embedded == []  # searching embeds queries only
        report = pg.index()  # the source's checkout and its copies came across: nothing is read again
        assert report.chunks_embedded == 0 and fake.embedded == []  # every vector came across
        assert report.unchanged == counts["files"] and report.indexed == 0, report
        # Vectors are exact cosines on both backends: the same top 10, in the same order.
        assert after["vector"] == before["vector"]
        # Keyword ranking differs by design (bm25 vs weighted ts_rank): the same notes are found.
        for mode in ("keyword", "hybrid"):
            for q in QUERIES:
                assert {p for p, _ in after[mode][q]} == {p for p, _ in before[mode][q]}, (mode, q)
    finally:
        pg.close()

    # A PostgreSQL index built from the notes directly answers exactly as the migrated one.
    native = App.open(replace(make_settings(tmp_path, "native-local.db"), index_url=pg_database("native")),
                      models=Models.fixed(FakeEmbedder(), None))
    try:
        native.index([str(vault)])
        assert {mode: _top(native, mode) for mode in ("keyword", "vector", "hybrid")} == after
    finally:
        native.close()

    again = subprocess.run([CLI, "migrate", "--to", url], env=cli_env(db), capture_output=True, text=True, timeout=120)
    assert again.returncode != 0 and "already holds an index" in again.stderr


def test_migrate_refuses_a_url_that_is_not_postgresql_and_a_missing_index(tmp_path):
    proc = subprocess.run([CLI, "migrate", "--to", "mysql://u:pw@h/db"], env=cli_env(tmp_path / "i.db"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "postgresql://" in proc.stderr and "pw" not in proc.stderr
    proc = subprocess.run([CLI, "migrate", "--to", "postgresql://h/db"], env=cli_env(tmp_path / "none.db"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "no SQLite index" in proc.stderr and not (tmp_path / "none.db").exists()
