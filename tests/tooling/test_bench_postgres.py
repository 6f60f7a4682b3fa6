"""`vault-index bench --postgres`: both backends measured on the same synthetic data, the HNSW
index built and used, its recall taken against pgvector's exact search, the databases dropped."""

from __future__ import annotations

import json
import subprocess

from helpers import CLI, cli_env


def test_a_small_postgresql_bench_reports_both_backends_and_leaves_no_database(tmp_path, pg_server_url):
    env = cli_env(tmp_path / "index.db", VAULT_BENCH_TMP=str(tmp_path))
    proc = subprocess.run([CLI, "bench", "--postgres", pg_server_url, "--sizes", "300", "--queries", "12", "--json",
                           "--silent"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (size,) = json.loads(proc.stdout)["sizes"]
    assert "error" not in size, size
    sqlite, pg = size["sqlite"], size["postgresql"]
    assert sqlite["chunks"] == 300 and sqlite["db_mb"] > 0 and sqlite["knn"] == "exact"
    assert sqlite["recall_at_10"] == 1.0  # an exact scan against pgvector's exact scan: same top 10
    assert sqlite["hybrid"]["n"] == pg["hybrid_hnsw"]["n"] == 12
    assert pg["hnsw_used"] is True  # the plan of the approximate query names the HNSW index
    assert pg["db_mb"] > pg["db_mb_before_hnsw"] > 0 and pg["hnsw_index_mb"] > 0
    assert pg["build_s"] == round(pg["bulk_load_s"] + pg["hnsw_build_s"], 1)
    # 300 vectors, ef_search 2 x 100 (below HNSW_LARGE_AT): HNSW finds the exact top 10 (a broken index or a wrong
    # distance operator would not).
    assert pg["hnsw_recall_at_10"] >= 0.95 and pg["recall_queries"] == 12
    import psycopg  # the postgres extra: present, since pg_server_url did not skip

    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        assert not admin.execute("SELECT 1 FROM pg_database WHERE datname LIKE 'vault_bench_%'").fetchall()


def test_a_kept_database_is_searched_again_with_reuse_without_a_new_load_or_build(tmp_path, pg_server_url):
    env = cli_env(tmp_path / "index.db", VAULT_BENCH_TMP=str(tmp_path))
    command = [CLI, "bench", "--postgres", pg_server_url, "--sizes", "300", "--queries", "12", "--json", "--silent"]
    import psycopg  # the postgres extra: present, since pg_server_url did not skip

    try:
        first = subprocess.run([*command, "--keep"], env=env, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stderr
        again = subprocess.run([*command, "--reuse"], env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr
        (size,) = json.loads(again.stdout)["sizes"]
        pg = size["postgresql"]
        assert pg["reused"] is True and "bulk_load_s" not in pg and "hnsw_build_s" not in pg
        assert pg["hnsw_used"] is True and pg["hybrid_hnsw"]["n"] == 12 and pg["hnsw_recall_at_10"] >= 0.95
        assert pg["ef_search_factor"] == 4  # the index was built with ef_construction 128
        with psycopg.connect(pg_server_url, autocommit=True) as admin:  # a reused database is kept
            assert admin.execute("SELECT 1 FROM pg_database WHERE datname = 'vault_bench_300'").fetchall()
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS vault_bench_300 WITH (FORCE)")


def test_the_bench_refuses_a_url_that_is_not_postgresql(tmp_path):
    proc = subprocess.run([CLI, "bench", "--postgres", "mysql://x/y"], env=cli_env(tmp_path / "index.db"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "must be a postgresql:// URL" in proc.stderr
