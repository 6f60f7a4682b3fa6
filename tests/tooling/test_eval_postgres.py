"""`vault-index eval --store postgresql://...` (issue 14, must-show 1): every corpus in a database
of its own on the server, filled from the SQLite eval cache without re-embedding, scores compared
with the SQLite run by `--parity`; and the eval never touches the index VAULT_INDEX_URL names."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

from helpers import CLI, FakeEmbedder, cli_env, make_settings
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.tooling.evaluation import PARITY_TOLERANCE, parity

# psycopg and engine/stores/pg_store (which imports it) come from the postgres extra: they are imported
# in the tests, after a fixture skipped them where the extra is missing, never at module level.

GOLDEN = [
    {"id": "q1", "query": "brake pads groove", "file": "vault/bike.md", "heading": "Bike maintenance > Brakes"},
    {"id": "q2", "query": "tubeless sealant", "file": "vault/bike.md", "heading": "Bike maintenance > Tyres"},
    {"id": "q3", "query": "rye flour starter", "file": "vault/kitchen/sourdough.md", "heading": "Sourdough"},
    {"id": "q4", "query": "loam clay moisture", "file": "vault/garden.md", "heading": "Garden > Soil"},
]


def _suite(tmp_path) -> tuple:
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    (eval_dir / "golden.jsonl").write_text("".join(json.dumps(q) + "\n" for q in GOLDEN))
    corpora = [{"name": name, "vault": str(tmp_path / "vault"), "golden": str(eval_dir / "golden.jsonl"),
                "root": str(tmp_path), "fast": {}} for name in ("corpus-a", "corpus-b")]
    (eval_dir / "suite.json").write_text(json.dumps({"corpora": corpora}))
    return eval_dir / "suite.json", tmp_path / "cache"


def _databases(server_url: str) -> set[str]:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        return {n for (n,) in admin.execute("SELECT datname FROM pg_database")}


def test_the_suite_on_postgresql_fills_one_database_per_corpus_from_the_sqlite_cache(tmp_path, vault, pg_server_url):
    from vault_index.engine.stores.pg_schema import database_name, database_url, drop_database
    from vault_index.engine.stores.pg_store import PgStore

    suite, cache = _suite(tmp_path)
    env = cli_env(tmp_path / "index.db", VAULT_EVAL_CACHE=str(cache))
    proc = subprocess.run([CLI, "eval", "--suite", str(suite), "--fast", "--modes", "keyword,vector,hybrid",
                           "--save", str(tmp_path / "sqlite.json")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    # The SQLite cache of corpus-a also holds vectors (a fake model's): they must come across as
    # stored, since nothing on the PostgreSQL side can embed them again.
    fake = FakeEmbedder()
    seeded = App.open(replace(make_settings(cache, "corpus-a-fast.db")), models=Models.fixed(fake, None))
    seeded.index([str(vault)])
    vectors = seeded.store.vector_count(fake.fingerprint)
    seeded.close()
    assert vectors > 0

    names = [database_name("vault_eval_corpus-a-fast"), database_name("vault_eval_corpus-b-fast")]
    try:
        proc = subprocess.run([CLI, "eval", "--suite", str(suite), "--fast", "--modes", "keyword,vector,hybrid",
                               "--store", pg_server_url, "--save", str(tmp_path / "pg.json"),
                               "--parity", str(tmp_path / "sqlite.json")],
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert set(names) <= _databases(pg_server_url)
        assert proc.stderr.count("nothing re-embedded") == 2
        assert f"every file ndcg@5 within {PARITY_TOLERANCE}" in proc.stderr
        report = json.loads((tmp_path / "pg.json").read_text())
        assert {r["meta"]["store"] for r in report["corpora"].values()} == {"postgresql"}
        assert report["corpora"]["corpus-a"]["overall"]["keyword"]["file"]["ndcg@5"] > 0.5
        store = PgStore(database_url(pg_server_url, names[0]))
        try:
            assert store.model_vectors(fake.fingerprint) == vectors
            assert [p for _, p in store.sources()] == [str(vault)]
        finally:
            store.close()

        # A second run finds its databases filled: nothing is copied again, the scores hold.
        proc = subprocess.run([CLI, "eval", "--suite", str(suite), "--fast", "--modes", "keyword",
                               "--store", pg_server_url, "--json"], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "filled" not in proc.stderr
        again = json.loads(proc.stdout)["corpora"]["corpus-a"]["overall"]["keyword"]
        assert again == report["corpora"]["corpus-a"]["overall"]["keyword"]
    finally:
        for name in names:
            drop_database(pg_server_url, name)


def test_the_eval_never_touches_the_index_vault_index_url_names(tmp_path, vault, pg_database):
    from vault_index.engine.stores.pg_store import PgStore

    team_url = pg_database("team")
    other = tmp_path / "other"
    other.mkdir()
    (other / "team.md").write_text("# Team\n\nThe team's own note.\n")
    team = App.open(replace(make_settings(tmp_path, "team-local.db"), index_url=team_url))
    team.index([str(other)])
    before = team.store.counts()
    team.close()
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    (eval_dir / "golden.jsonl").write_text("".join(json.dumps(q) + "\n" for q in GOLDEN))

    env = cli_env(tmp_path / "index.db", VAULT_INDEX_URL=team_url, VAULT_EVAL_DB=str(tmp_path / "eval.db"))
    proc = subprocess.run([CLI, "eval", "--vault", str(vault), "--golden", str(eval_dir / "golden.jsonl"),
                           "--modes", "keyword"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    team = PgStore(team_url)
    try:  # before the fix the eval unregistered every source but its vault here
        assert team.counts() == before and [p for _, p in team.sources()] == [str(other)]
    finally:
        team.close()
    assert (tmp_path / "eval.db").is_file()  # the eval ran on its own SQLite file instead


def _report(**ndcg: float) -> dict:
    return {"overall": {mode: {"file": {"ndcg@5": value}} for mode, value in ndcg.items()},
            "meta": {"store": "x"}}


def test_parity_fails_beyond_the_tolerance_and_names_a_corpus_the_other_run_lacks():
    ok = {"corpora": {"a": _report(keyword=0.80, vector=0.70, hybrid=0.90)}}
    near = {"corpora": {"a": _report(keyword=0.8045, vector=0.70, hybrid=0.8955)}}
    far = {"corpora": {"a": _report(keyword=0.80, vector=0.70, hybrid=0.894)}}  # 0.006: beyond 0.005
    assert parity(near, ok)[1] == []
    failures = parity(far, ok)[1]
    assert len(failures) == 1 and failures[0].startswith("a hybrid:")
    assert parity({"corpora": {"b": _report(hybrid=0.9)}}, ok)[1] == ["b: not in the other report"]
    assert parity(_report(keyword=0.5), _report(keyword=0.5))[1] == []  # plain eval reports


def test_the_hnsw_build_memory_grows_with_the_vectors_within_its_bounds(pg_store_module):
    from vault_index.engine.stores.pg_schema import hnsw_build_memory_mb  # psycopg: after the fixture's skip

    assert hnsw_build_memory_mb(1000, 384) == 512
    million = hnsw_build_memory_mb(1_000_000, 384)
    assert 2 * 1_000_000 * 384 * 4 // 2**20 <= million <= 8192
    assert hnsw_build_memory_mb(10**9, 384) == 8192
