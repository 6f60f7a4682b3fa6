"""HNSW recall@10 at a size, for issue 25's must-show 2: which pgvector parameters reach 0.95 at 1M.

    python scripts/with_pgserver.py -- sh -c 'python scripts/hnsw_recall.py --url "$PGSERVER_URL"'
    python scripts/hnsw_recall.py --url URL --n 1000000 --graphs 16:64,16:128 --ef-search 400,1000

The vectors and questions are `bench --million`'s (tooling/bench_million.clustered: unit vectors
around 2,000 topic centres, each question near a stored row). The exact top 10 is numpy's over the
float32 vectors; each graph (m:ef_construction) is built as pg_vectors builds one (cosine,
maintenance_work_mem from hnsw_build_memory_mb) and searched at each ef_search. Reports build
time, index size, recall@10 and per-query p50/p95 as JSON lines; numbers only.
"""

from __future__ import annotations

import argparse
import json
import time

from vault_index.engine.embedding.ann import recall_at
from vault_index.engine.stores.pg_schema import hnsw_build_memory_mb
from vault_index.tooling.bench import _pct
from vault_index.tooling.bench_million import DIM, _brute_top, clustered


def load(conn, matrix) -> float:
    t0 = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS recall_vectors")
    conn.execute(f"CREATE TABLE recall_vectors (id integer PRIMARY KEY, vector vector({DIM}))")
    with conn.cursor().copy("COPY recall_vectors (id, vector) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "vector"])
        for i, row in enumerate(matrix):
            copy.write_row((i, row.astype("float32")))
    conn.execute("VACUUM ANALYZE recall_vectors")
    return time.perf_counter() - t0


def measure(conn, queries, want, m: int, ef_construction: int, ef_searches: list[int], n: int) -> list[dict]:
    conn.execute("DROP INDEX IF EXISTS recall_hnsw")
    conn.execute(f"SET maintenance_work_mem = '{hnsw_build_memory_mb(n, DIM)}MB'")
    t0 = time.perf_counter()
    conn.execute(f"CREATE INDEX recall_hnsw ON recall_vectors USING hnsw (vector vector_cosine_ops) "
                 f"WITH (m = {m}, ef_construction = {ef_construction})")
    build_s = time.perf_counter() - t0
    size_mb = conn.execute("SELECT pg_relation_size('recall_hnsw')").fetchone()[0] / 2**20
    rows = []
    for ef in ef_searches:
        conn.execute(f"SET hnsw.ef_search = {ef}")
        got, times = [], []
        for q in queries:
            t = time.perf_counter()
            got.append([r[0] for r in conn.execute("SELECT id FROM recall_vectors ORDER BY vector <=> %s LIMIT 10",
                                                   (q,))])
            times.append(time.perf_counter() - t)
        rows.append({"n": n, "m": m, "ef_construction": ef_construction, "build_s": round(build_s, 1),
                     "index_mb": round(size_mb), "ef_search": ef, "recall_at_10": round(recall_at(want, got), 4),
                     **_pct(times)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL with pgvector (scripts/with_pgserver.py gives one)")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--graphs", default="16:64,16:128", help="m:ef_construction pairs, comma-separated")
    parser.add_argument("--ef-search", default="200,400,1000")
    args = parser.parse_args(argv)
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    matrix, queries = clustered(args.n)
    want = _brute_top(matrix, np.arange(len(matrix)), queries)  # numpy's exact float32 top 10, row ids
    with psycopg.connect(args.url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        try:
            print(json.dumps({"n": args.n, "load_s": round(load(conn, matrix), 1)}), flush=True)
            del matrix
            for graph in args.graphs.split(","):
                m, ef_construction = (int(x) for x in graph.split(":"))
                measure(conn, [np.asarray(q, dtype=np.float32) for q in queries], want, m, ef_construction,
                        [int(x) for x in args.ef_search.split(",")], args.n)
        finally:
            conn.execute("DROP TABLE IF EXISTS recall_vectors")  # the table and its index: nothing is left
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
