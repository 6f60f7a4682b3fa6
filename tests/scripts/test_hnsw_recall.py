"""scripts/hnsw_recall.py (issue 25): HNSW recall@10 against numpy's exact top 10, per graph and
ef_search, on a real PostgreSQL with pgvector; it leaves no table behind."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import REPO


def test_recall_rises_with_ef_search_and_nothing_is_left(pg_database):
    import psycopg  # the postgres extra: present, since pg_database did not skip

    url = pg_database()
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "hnsw_recall.py"), "--url", url, "--n", "1500",
                           "--graphs", "8:16", "--ef-search", "10,200"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    loaded, low, high = (json.loads(line) for line in proc.stdout.splitlines())
    assert loaded["n"] == 1500 and loaded["load_s"] >= 0
    assert (low["m"], low["ef_construction"], low["ef_search"], high["ef_search"]) == (8, 16, 10, 200)
    # ef_search 200 over 1,500 vectors finds the exact top 10; ef_search 10 on a thin graph need not
    assert high["recall_at_10"] >= 0.95 and low["recall_at_10"] <= high["recall_at_10"]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('recall_vectors')").fetchone()[0] is None
