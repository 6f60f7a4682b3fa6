"""`vault-index bench --postgres URL`: the PostgreSQL backend beside SQLite, same run, same data.

Per size (default 100,000 and 1,000,000 chunks): the synthetic index of `bench --million`
(tooling/bench_million.fill_store: chunks of Zipf-distributed words with their topic's own words,
one vector per chunk clustered around 2,000 topic centres, written in bulk through the SQLite
store's schema) and its questions (three words of a picked chunk, with a query vector near that
chunk's). Clustered vectors, as real embeddings are: the earlier runs used uniform random unit
vectors, the worst case for any graph index (HNSW recall@10 0.37 at 100k), which said nothing of
real vaults. The SQLite index is then copied into a database of its own on the server by
`migrate`'s copy (engine/stores/migrate_store: COPY, the tsvector and GIN index built on the way), and
the HNSW index built as `checkpoint()` builds it. Reported:

- build: SQLite's bulk fill (rows + FTS5, vectors); PostgreSQL's bulk load and HNSW build, apart;
- size: the SQLite file; the PostgreSQL database before and after HNSW, and the index alone;
- raw kNN (top 50, what the fusion asks each side for): SQLite's in-memory index (exact below
  300k vectors, IVF above: engine/embedding/ann.py), pgvector exact and pgvector HNSW, p50/p95; recall@10
  of SQLite's index and of HNSW against pgvector exact on the same queries;
- hybrid search through `Searcher.search` (the one pipeline): SQLite, PostgreSQL exact (before the
  index), PostgreSQL with HNSW.

The exact-against-HNSW p95 per size is what pg_store.HNSW_MIN_VECTORS is chosen from (ADR 0017).
Numbers only: the command never fails on them (exit 0).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from vault_index.engine.embedding.models import Models
from vault_index.engine.stores.store import Store
from vault_index.errors import UsageError
from vault_index.services.search.search import Searcher
from vault_index.tooling.bench import _guard, _pct, _rss_mb, _say
from vault_index.tooling.bench_corpus import _loadavg
from vault_index.tooling.bench_million import _QueryVectors, fill_store

DEFAULT_SIZES = (100_000, 1_000_000)
QUICK_SIZES = (1000, 10_000)
KNN_DEPTH = 50  # fusion.CANDIDATES_PER_SIDE: what the pipeline asks each side for
RECALL_AT = 10
EXACT_QUERY_BUDGET_S = 120.0  # exact pgvector searches per size stop after this (1M: ~1 s each)
NO_HNSW = 2**62  # hnsw_min_vectors of the loading store: the build is timed on its own


def run_pg_bench(args) -> int:
    from vault_index.engine.stores.urls import is_postgres_url, redact

    url = args.postgres
    if not is_postgres_url(url):
        raise UsageError(f"--postgres must be a postgresql:// URL of a server (got {redact(url)!r})")
    os.environ["HF_HUB_OFFLINE"] = "1"
    if args.quick:
        sizes = list(QUICK_SIZES)
    elif args.sizes:
        sizes = [int(s) for s in str(args.sizes).split(",") if s.strip()]
    else:
        sizes = list(DEFAULT_SIZES)
    n_queries = 50 if args.quick else max(5, args.queries)
    workdir = Path(tempfile.mkdtemp(prefix="vault-index-pgbench-", dir=os.environ.get("VAULT_BENCH_TMP")))
    result: dict = {"meta": {"server": redact(url), "queries": n_queries, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                             "loadavg_start": _loadavg(), "cpus": os.cpu_count()}, "sizes": []}
    started = time.perf_counter()
    try:
        for size in sorted(sizes):
            result["sizes"].append(_guard(bench_pg_size, args, size, n_queries, workdir, url, size=size))
            _say(args, f"{size:,}: {json.dumps(result['sizes'][-1], default=str)}")
            _remove_sqlite_files(workdir, size)  # what a failed size left
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result["meta"].update(total_s=round(time.perf_counter() - started, 1), loadavg_end=_loadavg(), **_rss_mb())
    print(json.dumps(result, default=str) if args.json else render(result))
    return 0


def bench_pg_size(args, size: int, n_queries: int, workdir: Path, url: str) -> dict:
    from vault_index.engine.stores.migrate_store import copy_index
    from vault_index.engine.stores.pg_schema import drop_database, ensure_database
    from vault_index.engine.stores.pg_store import PgStore

    out: dict = {"size": size, "loadavg": _loadavg()}
    db_path = workdir / f"index-{size}.db"
    sqlite = Store(db_path)
    t0 = time.perf_counter()
    filled = fill_store(sqlite, size, n_queries)
    by_text = filled.pop("queries")
    fake = _QueryVectors(by_text)
    queries = list(by_text)
    qvecs = [by_text[q] for q in queries]
    out["sqlite"] = {"chunks": filled["chunks"], "files": filled["files"], "fill_s": round(time.perf_counter() - t0, 1),
                     "rows_and_fts_s": filled["rows_and_fts_s"], "vectors_s": filled["vectors_s"],
                     "db_mb": round(sum(p.stat().st_size for p in workdir.glob(f"index-{size}.db*")) / 1e6, 1)}

    _say(args, f"{size:,}: SQLite {out['sqlite']}; SQLite searches")
    searcher = Searcher(sqlite, Models.fixed(fake))
    t0 = time.perf_counter()
    searcher.search(queries[0], "hybrid")  # loads the float16 matrix (and the IVF index from 300k vectors)
    out["sqlite"]["first_search_s"] = round(time.perf_counter() - t0, 1)
    numpy_index = searcher.vector_index()
    out["sqlite"]["knn"] = "ivf" if getattr(numpy_index, "approx", None) is not None else "exact"
    sqlite_top = [[cid for cid, _ in numpy_index.search(v, KNN_DEPTH)[:RECALL_AT]] for v in qvecs]
    out["sqlite"]["knn_numpy"] = _time(lambda v: numpy_index.search(v, KNN_DEPTH), qvecs)
    out["sqlite"]["hybrid"] = _time(lambda q: searcher.search(q, "hybrid"), queries)
    searcher = numpy_index = None  # the SQLite vectors out of memory before PostgreSQL's turn
    gc.collect()

    name = f"vault_bench_{size}"
    target = _reused(args, url, name, size, fake.fingerprint)
    if target is not None:  # --reuse: the kept database, searched as it is (kept again)
        _drop_sqlite(sqlite, workdir, size)
        try:
            pg = {"reused": True}
            exact_top, times = _exact(target.open_vector_index(fake.fingerprint), qvecs)
            pg["knn_exact"] = _pct(times)
            out["sqlite"]["recall_at_10"] = _recall(sqlite_top, exact_top)
            return {**out, "postgresql": _searches(target, fake, queries, qvecs, exact_top, pg), **_rss_mb()}
        finally:
            target.close()
    drop_database(url, name)
    target = PgStore(ensure_database(url, name), hnsw_min_vectors=NO_HNSW)
    try:
        _say(args, f"{size:,}: PostgreSQL bulk load (COPY, FTS5 terms, postings)")
        t0 = time.perf_counter()
        copy_index(sqlite, target)
        pg: dict = {"bulk_load_s": round(time.perf_counter() - t0, 1), "db_mb_before_hnsw": _mb(target.size_bytes())}
        _drop_sqlite(sqlite, workdir, size)
        _settle(target)
        index = target.open_vector_index(fake.fingerprint)
        _say(args, f"{size:,}: bulk load {pg['bulk_load_s']} s, {pg['db_mb_before_hnsw']} MB; exact kNN and hybrid")
        exact_top, times = _exact(index, qvecs)
        pg["knn_exact"] = _pct(times)
        out["sqlite"]["recall_at_10"] = _recall(sqlite_top, exact_top)
        pg_searcher = Searcher(target, Models.fixed(fake))
        pg["hybrid_exact"] = _time(lambda q: pg_searcher.search(q, "hybrid"), queries[: len(times)])

        _say(args, f"{size:,}: exact kNN {pg['knn_exact']}, hybrid {pg['hybrid_exact']}; HNSW build")
        t0 = time.perf_counter()
        target.ensure_vector_index(fake.fingerprint)
        pg["hnsw_build_s"] = round(time.perf_counter() - t0, 1)
        pg["build_s"] = round(pg["bulk_load_s"] + pg["hnsw_build_s"], 1)
        pg["hnsw_build_vectors_per_s"] = round(size / pg["hnsw_build_s"], 0) if pg["hnsw_build_s"] else None
        pg["db_mb"] = _mb(target.size_bytes())
        pg["hnsw_index_mb"] = _mb(target.vector_index_bytes(fake.fingerprint) or 0)
        _say(args, f"{size:,}: HNSW built in {pg['hnsw_build_s']} s, {pg['hnsw_index_mb']} MB; kNN, recall, hybrid")
        _settle(target)
        out["postgresql"] = _searches(target, fake, queries, qvecs, exact_top, pg)
    finally:
        target.close()
        if not getattr(args, "keep", False):
            drop_database(url, name)
    out.update(_rss_mb())
    return out


def _exact(index, qvecs) -> tuple[list[list[int]], list[float]]:
    """pgvector's exact top 10 of each query vector (the recall reference) and its times, within
    EXACT_QUERY_BUDGET_S (at least 10 queries)."""
    exact_top, times = [], []
    deadline = time.perf_counter() + EXACT_QUERY_BUDGET_S
    index.exact(qvecs[0], KNN_DEPTH)  # warm-up
    for v in qvecs:
        t0 = time.perf_counter()
        exact_top.append([cid for cid, _ in index.exact(v, KNN_DEPTH)[:RECALL_AT]])
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > deadline and len(times) >= 10:
            break
    return exact_top, times


def _searches(target, fake, queries, qvecs, exact_top, pg: dict) -> dict:
    """The HNSW side: kNN, recall@10 against `exact_top` and hybrid search through the pipeline."""
    index = target.open_vector_index(fake.fingerprint)
    pg["hnsw_used"] = "hnsw" in index.plan(qvecs[0]).lower()
    pg["ef_search_factor"] = target.vector_search_factor(fake.fingerprint)
    pg["knn_hnsw"] = _time(lambda v: index.search(v, KNN_DEPTH), qvecs)
    hnsw_top = [[cid for cid, _ in index.search(v, KNN_DEPTH)[:RECALL_AT]] for v in qvecs[: len(exact_top)]]
    pg["hnsw_recall_at_10"] = _recall(hnsw_top, exact_top)
    pg["recall_queries"] = len(exact_top)
    pg_searcher = Searcher(target, Models.fixed(fake))
    pg["hybrid_hnsw"] = _time(lambda q: pg_searcher.search(q, "hybrid"), queries)
    return pg


def _reused(args, url: str, name: str, size: int, fingerprint: str):
    """With --reuse: the kept database of this size with its HNSW index, or None (then built anew)."""
    from vault_index.engine.stores.pg_schema import ensure_database
    from vault_index.engine.stores.pg_store import PgStore

    if not getattr(args, "reuse", False):
        return None
    store = PgStore(ensure_database(url, name), hnsw_min_vectors=NO_HNSW)
    if store.chunk_count() == size and store.has_vector_index(fingerprint):
        _say(args, f"{size:,}: reusing the kept database {name} (no load, no HNSW build)")
        _settle(store)
        return store
    store.close()
    return None


def _drop_sqlite(sqlite, workdir: Path, size: int) -> None:
    """SQLite's part is measured: its files go before PostgreSQL's searches, so that its 4 GB at 1M
    no longer share the page cache with the server's database on one machine."""
    sqlite.close()
    _remove_sqlite_files(workdir, size)


def _remove_sqlite_files(workdir: Path, size: int) -> None:
    for part in workdir.glob(f"index-{size}.db*"):
        part.unlink(missing_ok=True)


def _settle(store) -> None:
    """A CHECKPOINT before timing, so the searches do not share the disk with the write-back of a
    load or an index build (SQLite's side is checkpointed too); skipped without the privilege."""
    import psycopg

    try:
        store.db.execute("CHECKPOINT")
    except psycopg.Error:
        store.db.rollback()


def _time(fn, items) -> dict:
    for item in items[: min(10, len(items))]:  # warm-up: caches, statement preparation, vector load
        fn(item)
    times = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - t0)
    return _pct(times)


def _recall(got: list[list[int]], want: list[list[int]]) -> float:
    """Mean share of each exact top 10 found in the other top 10 (the queries `want` covers)."""
    shares = [len(set(g) & set(w)) / max(1, len(w)) for g, w in zip(got, want, strict=False)]
    return round(statistics.fmean(shares), 4) if shares else 0.0


def _mb(n: int) -> float:
    return round(n / 1e6, 1)


def render(result: dict) -> str:
    """One table: per size, SQLite's figures beside PostgreSQL's."""
    lines = [f"PostgreSQL bench ({result['meta']['server']}), {result['meta']['queries']} queries a size; "
             f"load average {result['meta']['loadavg_start']} -> {result['meta']['loadavg_end']}"]
    rows = (
        ("chunks", lambda s, p: s.get("chunks"), None),
        ("build: SQLite rows+FTS5 + vectors / PG bulk load + HNSW (s)",
         lambda s, p: f"{s['rows_and_fts_s']}+{s['vectors_s']}",
         lambda p: f"{p.get('bulk_load_s', 'kept')}+{p.get('hnsw_build_s', 'kept')}"),
        ("size MB (PG: before HNSW / after / HNSW alone)", lambda s, p: s["db_mb"],
         lambda p: f"{p.get('db_mb_before_hnsw', '-')} / {p.get('db_mb', '-')} / {p.get('hnsw_index_mb', '-')}"),
        ("kNN top-50 p95 ms (SQLite numpy; PG exact / HNSW)", lambda s, p: s["knn_numpy"].get("p95_ms"),
         lambda p: f"{p['knn_exact'].get('p95_ms')} / {p['knn_hnsw'].get('p95_ms')}"),
        ("recall@10 against pgvector exact (SQLite index; HNSW)", lambda s, p: s.get("recall_at_10"),
         lambda p: p["hnsw_recall_at_10"]),
        ("hybrid p95 ms (PG: exact / HNSW)", lambda s, p: s["hybrid"].get("p95_ms"),
         lambda p: f"{p.get('hybrid_exact', {}).get('p95_ms', '-')} / {p['hybrid_hnsw'].get('p95_ms')}"),
        ("hybrid p50 ms (PG: HNSW)", lambda s, p: s["hybrid"].get("p50_ms"), lambda p: p["hybrid_hnsw"].get("p50_ms")),
        ("hybrid p95, PostgreSQL HNSW / SQLite", lambda s, p: "",
         lambda p: p.get("hybrid_p95_ratio")),
    )
    for size in result["sizes"]:
        if "error" in size:
            lines.append(f"{size.get('size', '?'):>9,}: error {size['error']}")
            continue
        s, p = size["sqlite"], size["postgresql"]
        if s["hybrid"].get("p95_ms"):
            p["hybrid_p95_ratio"] = f"{p['hybrid_hnsw'].get('p95_ms', 0) / s['hybrid']['p95_ms']:.2f}x"
        lines.append(f"\n{size['size']:,} chunks (load average {size['loadavg']})")
        width = max(len(label) for label, *_ in rows)
        lines.append(f"{'':{width}} {'SQLite':>14} {'PostgreSQL':>28}")
        for label, of_sqlite, of_pg in rows:
            lines.append(f"{label:{width}} {str(of_sqlite(s, p)):>14} {str(of_pg(p) if of_pg else ''):>28}")
    return "\n".join(lines)
