"""`vault-index bench`: speed and memory on synthetic vaults. Reports numbers, never fails (exit 0).

What is real and what is a stand-in (docs/bench.md says what each number means):
- the indexer (parse, chunk, FTS5), the store and `Searcher.search` are the real code paths;
- the vector side uses PRECOMPUTED random unit vectors (384 d) written into the embeddings table,
  and a query "embedder" that returns a random unit vector: embedding 100k chunks with the real
  model would take hours here. Embedder cost is measured on its own, on a small sample, with the
  real shipped model (`shipped:minilm`);
- nothing is downloaded: models load from the local cache only (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import random
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

from vault_index.engine import indexer
from vault_index.engine.embedding.models import Models
from vault_index.engine.embedding.vectors import NumpyIndex, open_vector_index
from vault_index.engine.parsing.chunk import approximate_tokens, embed_text_for
from vault_index.engine.stores.store import Store
from vault_index.errors import UsageError
from vault_index.services.search.search import Searcher
from vault_index.tooling import bench_speed
from vault_index.tooling.bench_corpus import COMMON, SECTIONS_PER_FILE, Vocabulary, _loadavg, make_queries, write_vault

DIM = 384
QUICK_SIZES, QUICK_QUERIES = (1000, 10000), 50
DEFAULT_SIZES = "1000,10000,100000"  # `--sizes` when not given (`--postgres` has its own)
SQLITE_VEC_QUERIES = 50  # sqlite-vec scans every vector per query: fewer queries keep the run short
RERANK_QUERIES = 30
REINDEX_EDITS = 5
EMBED_SAMPLE_CHUNKS = 200
TARGETS = {"hybrid_p95_ms_at_100k": 50.0, "index_overhead_pct": 15.0, "server_start_ratio": 1.3,
           "hybrid_floor_ratio_at_100k": 2.5}


def _say(args, message: str) -> None:
    if not getattr(args, "silent", False):
        print(f"[bench] {message}", file=sys.stderr, flush=True)


def _rss_mb() -> dict:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    current = None
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    except OSError:
        pass
    return {"peak_rss_mb": round(peak, 1), "rss_mb": round(current, 1) if current else None}


def _pct(samples: list[float]) -> dict:
    """p50/p95/mean in milliseconds of a list of seconds."""
    if not samples:
        return {}
    ms = sorted(s * 1000 for s in samples)
    at = lambda q: ms[min(len(ms) - 1, int(round(q * (len(ms) - 1))))]  # noqa: E731
    return {"p50_ms": round(at(0.5), 2), "p95_ms": round(at(0.95), 2), "mean_ms": round(statistics.fmean(ms), 2),
            "n": len(ms)}


class RandomEmbedder:
    """Stand-in embedder: random unit vectors (deterministic per text), approximate token counts."""

    fingerprint = "bench-random-unit-384"
    max_tokens = 512

    def count_tokens(self, text: str) -> int:
        return approximate_tokens(text)

    def embed_documents(self, texts: list[str]):
        return _unit_vectors(len(texts), zlib.crc32("\x00".join(texts).encode()))

    def embed_query(self, text: str):
        return _unit_vectors(1, zlib.crc32(text.encode()))[0]


def _unit_vectors(n: int, seed: int):
    import numpy as np

    matrix = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


# --- one size ----------------------------------------------------------------------------------


def bench_size(args, size: int, n_queries: int, workdir: Path, reranker) -> dict:
    out: dict = {"size": size}
    root, db_path = workdir / f"vault-{size}", workdir / f"index-{size}.db"
    t0 = time.perf_counter()
    facts = write_vault(root, size)
    out["generate_s"] = round(time.perf_counter() - t0, 2)
    _say(args, f"{size:,}: wrote {facts['files']:,} files in {out['generate_s']} s; indexing (keyword path)")

    store = Store(db_path)
    report = indexer.sync(store, Models.fixed(None), [str(root)], embed=False)
    chunks = store.counts()["chunks"]
    out.update(files=facts["files"], chunks=chunks, index_s=round(report.seconds, 2),
               index_files_per_s=round(facts["files"] / report.seconds, 1),
               index_chunks_per_s=round(chunks / report.seconds, 1))
    t0 = time.perf_counter()
    indexer.sync(store, Models.fixed(None), None, embed=False)
    out["resync_unchanged_s"] = round(time.perf_counter() - t0, 3)
    out["keyword_floor"] = _guard(bench_speed.keyword_floor, store, root, report.seconds, workdir)

    fake = RandomEmbedder()
    t0 = time.perf_counter()
    hashes = [h for (h,) in store.db.execute("SELECT DISTINCT hash FROM chunks")]
    vectors = _unit_vectors(len(hashes), size)
    store.put_vectors(fake.fingerprint, ((h, vectors[i].tobytes()) for i, h in enumerate(hashes)))
    del vectors
    out["vectors_write_s"] = round(time.perf_counter() - t0, 2)
    out["db_mb"] = round(db_path.stat().st_size / 1e6, 1)
    wal = Path(f"{db_path}-wal")
    out["wal_mb"] = round(wal.stat().st_size / 1e6, 1) if wal.exists() else 0.0
    _say(args, f"{size:,}: {chunks:,} chunks indexed in {out['index_s']} s; searching")

    models = Models.fixed(fake, reranker)
    searcher = Searcher(store, models)
    queries = make_queries(facts, n_queries)
    t0 = time.perf_counter()
    searcher.search(queries[0], "vector")
    out["vector_cold_load_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    out["search"] = {}
    for mode in ("keyword", "vector", "hybrid"):
        out["search"][mode] = _time_queries(searcher, queries, mode)
    if reranker is not None:
        out["search"]["hybrid+rerank"] = _time_queries(searcher, queries[:RERANK_QUERIES], "hybrid+rerank")
    out["knn"] = _knn(store, searcher.vector_index(), fake, queries)
    out["floor"] = _floor(store, searcher, fake, queries)
    hybrid_p95, floor_p95 = out["search"]["hybrid"]["p95_ms"], out["floor"]["p95_ms"]
    out["hybrid_floor_ratio"] = round(hybrid_p95 / floor_p95, 2) if floor_p95 else None
    out["reindex"] = _reindex(store, root, models, searcher, queries)
    del searcher
    store.close()
    gc.collect()
    out.update(_rss_mb())
    return out


def _time_queries(searcher: Searcher, queries: list[str], mode: str) -> dict:
    for q in queries[: min(20, len(queries))]:  # warm-up: page cache, statement cache, vector matrix
        searcher.search(q, mode)
    times, hits = [], 0
    for q in queries:
        t0 = time.perf_counter()
        result = searcher.search(q, mode)
        times.append(time.perf_counter() - t0)
        hits += len(result.hits)
    return {**_pct(times), "mean_hits": round(hits / len(queries), 1)}


def _knn(store: Store, numpy_index: NumpyIndex, fake: RandomEmbedder, queries: list[str]) -> dict:
    """Raw kNN (top 50) of the two backends on the same vectors, outside the search pipeline."""
    qvecs = [fake.embed_query(q) for q in queries]
    numpy_index.search(qvecs[0], 50)
    times = []
    for v in qvecs:
        t0 = time.perf_counter()
        numpy_index.search(v, 50)
        times.append(time.perf_counter() - t0)
    out = {"numpy": _pct(times)}
    vec_index = open_vector_index(store, fake.fingerprint, "sqlite-vec")
    if vec_index.name != "sqlite-vec":
        out["sqlite-vec"] = {"unavailable": "sqlite-vec: cannot load extensions in this interpreter"}
        return out
    try:
        vec_index.search(qvecs[0], 50)
        times, agree = [], []
        for v in qvecs[:SQLITE_VEC_QUERIES]:
            t0 = time.perf_counter()
            got = vec_index.search(v, 50)
            times.append(time.perf_counter() - t0)
            want = {i for i, _ in numpy_index.search(v, 10)}
            agree.append(len(want & {i for i, _ in got[:10]}) / max(1, len(want)))
    except Exception as exc:  # noqa: BLE001 - one backend failing must not lose the size's numbers
        out["sqlite-vec"] = {"unavailable": f"error: {type(exc).__name__}: {exc}"}
        return out
    finally:
        vec_index.db.close()
    out["sqlite-vec"] = {**_pct(times), "top10_agreement_with_numpy": round(statistics.fmean(agree), 3)}
    return out


def _floor(store: Store, searcher: Searcher, fake: RandomEmbedder, queries: list[str]) -> dict:
    """The least a hybrid search can cost, timed per query in the same run: numpy kNN (top
    CANDIDATES_PER_SIDE) plus one FTS5 bm25 query with the match string the pipeline builds (built
    before the clock starts). Hybrid p95 over this floor's p95 is the pipeline's own overhead,
    robust to how fast or busy the machine is."""
    from vault_index.services.search import fusion
    from vault_index.services.search.query import query_terms
    from vault_index.services.search.search import keyword_match

    index = searcher.vector_index()
    prepared = []
    for q in queries:
        terms = query_terms(q)
        counts = searcher._doc_counts(terms)
        match = keyword_match(terms, counts) if counts else ""
        prepared.append((fake.embed_query(q), match))
    for vector, match in prepared[: min(20, len(prepared))]:  # warm-up, as for the searches
        index.search(vector, fusion.CANDIDATES_PER_SIDE)
        if match:
            store.keyword(match, fusion.CANDIDATES_PER_SIDE)
    times = []
    for vector, match in prepared:
        t0 = time.perf_counter()
        index.search(vector, fusion.CANDIDATES_PER_SIDE)
        if match:
            store.keyword(match, fusion.CANDIDATES_PER_SIDE)
        times.append(time.perf_counter() - t0)
    return _pct(times)


def _reindex(store: Store, root: Path, models: Models, searcher: Searcher, queries: list[str]) -> dict:
    """Edit one file (one section changes) and re-index it, as the edit hook does."""
    files = sorted(root.rglob("*.md"))
    step = max(1, len(files) // (2 * REINDEX_EDITS + 1))
    picks = files[step::step][: 2 * REINDEX_EDITS]
    full, keyword_only, first_search = [], [], []
    for n, path in enumerate(picks):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("## ", f"## edited{n} ", 1), encoding="utf-8")
        t0 = time.perf_counter()
        if n < REINDEX_EDITS:
            indexer.reindex_file(store, models, str(path))
            full.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            searcher.search(queries[n], "hybrid")  # pays the in-memory vector reload
            first_search.append(time.perf_counter() - t0)
        else:
            indexer.reindex_file(store, Models.fixed(None), str(path))
            keyword_only.append(time.perf_counter() - t0)
    return {"with_vectors": _pct(full), "keyword_only": _pct(keyword_only),
            "first_hybrid_search_after_edit": _pct(first_search)}


# --- real embedder sample ----------------------------------------------------------------------


def bench_embedder(args, workdir: Path, repeats: int) -> dict:
    """Raw shipped-model throughput vs the indexer end to end with that model, same 200 chunks."""
    from vault_index.config import Settings

    models = Models("shipped:minilm", "none", Settings.from_env().model_cache, rerank=False)
    t0 = time.perf_counter()
    embedder = models.embedder()
    if embedder is None:
        return {"unavailable": models.embed_error}
    load_s = time.perf_counter() - t0
    root = workdir / "embed-sample"
    rng = random.Random(3)
    vocab = Vocabulary(rng, 40)
    for f in range(EMBED_SAMPLE_CHUNKS // SECTIONS_PER_FILE):
        body = [f"# Sample {f}\n"]
        for s in range(SECTIONS_PER_FILE):
            words = rng.choices(COMMON, k=95) + rng.choices(vocab.words[200:], k=25)
            body.append(f"## Part {s}\n\n{' '.join(words[:60])}.\n\n{' '.join(words[60:])}.\n")
        (root / f"s{f:03d}.md").parent.mkdir(parents=True, exist_ok=True)
        (root / f"s{f:03d}.md").write_text("\n".join(body), encoding="utf-8")
    embedder.embed_documents(["warm up the session"] * 8)
    raw, e2e, embed_part = [], [], []
    texts: list[str] = []
    for r in range(repeats):
        store = Store(workdir / f"embed-{r}.db")
        t0 = time.perf_counter()
        report = indexer.sync(store, Models.fixed(embedder), [str(root)])
        e2e.append(time.perf_counter() - t0)
        embed_part.append(report.embed_seconds)
        # The very texts, in the order and batches the indexer embedded them.
        texts = [embed_text_for(title, heading, text) for _, title, heading, text in store.chunks_missing_vectors("-")]
        store.close()
        t0 = time.perf_counter()
        for start in range(0, len(texts), indexer.EMBED_COMMIT_BATCH):  # the batches the indexer sends
            embedder.embed_documents(texts[start : start + indexer.EMBED_COMMIT_BATCH])
        raw.append(time.perf_counter() - t0)
    raw_s, e2e_s = min(raw), min(e2e)
    tokens = [embedder.count_tokens(t) for t in texts]
    return {
        "model": embedder.fingerprint, "load_s": round(load_s, 2), "chunks": len(texts),
        "mean_tokens": round(statistics.fmean(tokens), 1), "repeats": repeats,
        "raw_embed_s": round(raw_s, 2), "raw_chunks_per_s": round(len(texts) / raw_s, 1),
        "end_to_end_s": round(e2e_s, 2), "end_to_end_chunks_per_s": round(len(texts) / e2e_s, 1),
        "embed_time_inside_indexer_s": round(min(embed_part), 2),
        "overhead_pct": round((e2e_s - raw_s) / raw_s * 100, 1),
        # The same ratio inside one run (end to end vs its own embedding time): robust to load
        # from other processes that slows one of the two separate runs but not the other.
        "overhead_same_run_pct": round(min((t - e) / e * 100 for t, e in zip(e2e, embed_part, strict=True)), 1),
    }


def _load_reranker():
    from vault_index.config import Settings

    settings = Settings.from_env()
    models = Models("none", settings.rerank_model, settings.model_cache, rerank=True)
    t0 = time.perf_counter()
    reranker = models.reranker()
    if reranker is None:
        return None, {"unavailable": f"{models.rerank_error} (bench never downloads; models load from the cache)"}
    return reranker, {"model": reranker.name, "load_s": round(time.perf_counter() - t0, 2)}


# --- entry point -------------------------------------------------------------------------------


def run_bench(args) -> int:
    from vault_index.tooling import (
        bench_edits,
        bench_footprint,
        bench_graph,
        bench_hooks,
        bench_server,
        bench_ui,
        bench_weights,
    )

    parts = _parts(args)
    os.environ["HF_HUB_OFFLINE"] = "1"  # never download inside a benchmark
    sizes = (list(QUICK_SIZES) if args.quick
             else [int(s) for s in str(args.sizes or DEFAULT_SIZES).split(",") if s.strip()])
    n_queries = QUICK_QUERIES if args.quick else max(5, args.queries)
    workdir = Path(tempfile.mkdtemp(prefix="vault-index-bench-"))
    import numpy as np

    result: dict = {
        "meta": {"python": platform.python_version(), "cpus": os.cpu_count(), "sqlite": sqlite3.sqlite_version,
                 "numpy": np.__version__, "platform": platform.platform(), "queries_per_mode": n_queries,
                 "vector_side": "precomputed random unit vectors (384 d) and a random query vector stand in "
                                "for the embedder; Searcher.search, the store and the indexer are real",
                 "started": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg_start": _loadavg()},
        "targets": TARGETS, "sizes": [],
    }
    started = time.perf_counter()
    try:
        reranker, result["reranker"] = _guard(_load_reranker, default=(None, None))
        if result["reranker"] is None:
            result["reranker"] = {"unavailable": "reranker load failed"}
        for size in sorted(sizes) if "sizes" in parts else []:
            result["sizes"].append(_guard(bench_size, args, size, n_queries, workdir, reranker, size=size))
            if size == max(sizes):  # the biggest index: what a server holds, float32 against float16
                _say(args, f"{size:,}: serving memory, float32 and float16 copies (child processes)")
                result["serving"] = _guard(bench_footprint.bench_serving, workdir / f"index-{size}.db",
                                           RandomEmbedder.fingerprint, make_queries(write_vault_facts(size), 40))
                result["serving"]["chunks"] = size
            if size != min(sizes):
                shutil.rmtree(workdir / f"vault-{size}", ignore_errors=True)
                for part in workdir.glob(f"index-{size}.db*"):
                    part.unlink()
        if "sizes" in parts:
            _say(args, "server start-up")
            smallest = min(sizes) if sizes else None
            db = workdir / f"index-{smallest}.db"
            result["server"] = _guard(bench_server.bench_server, workdir, db, args)
            _say(args, "re-index with vectors on and off (vault-index index, child processes)")
            result["speed"] = {"floor": [s.get("keyword_floor") for s in result["sizes"]],
                               "reindex": _guard(bench_speed.bench_reindex, workdir, db, workdir / f"vault-{smallest}")}
            bench_speed.clean(workdir)
        if "embedder" in parts:
            _say(args, "real embedder sample (shipped MiniLM)")
            result["embedder"] = _guard(bench_embedder, args, workdir, 1 if args.quick else 2)
        if "footprint" in parts:
            _say(args, "footprint: indexing memory with the real model, old and new embedder shape")
            result["footprint"] = _guard(bench_footprint.bench_indexing, args, workdir)
        if "weights" in parts:
            _say(args, "weights: the shipped MiniLM's fp32 against its int8 weights (two children side by side)")
            result["weights"] = _guard(bench_weights.bench_weights, args, workdir)
        if "edits" in parts:
            _say(args, "edits reaching search with the server running")
            result["edits"] = _guard(bench_edits.bench_edits, args, workdir, _pct)
        if getattr(args, "million", False):
            from vault_index.tooling import bench_million

            _say(args, "1M vectors: exact scan against the IVF index")
            result["million"] = _guard(bench_million.bench_million, args)
            chunks = int(getattr(args, "million_chunks", None) or bench_million.HYBRID_CHUNKS)
            _say(args, f"{chunks:,} chunks: hybrid search end to end (child process; builds the index first)")
            result["million_hybrid"] = _guard(bench_million.bench_hybrid, args, workdir / "million", chunks)
        if "hooks" in parts:
            _say(args, "hooks: re-index on edit, context guard, prompt-time recall")
            result["hooks"] = _guard(bench_hooks.bench_hooks, args, workdir, _pct, write_vault)
        if "graph" in parts:
            _say(args, "memory graph")
            result["graph"] = _guard(bench_graph.bench_graph, workdir)
        if "ui" in parts:
            _say(args, "web page: the Search page over HTTP at 100k chunks (builds its own index)")
            result["ui"] = _guard(bench_ui.bench_ui, args, workdir, _pct, RandomEmbedder, _unit_vectors)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result["meta"]["total_s"] = round(time.perf_counter() - started, 1)
    result["meta"].update(_rss_mb(), loadavg_end=_loadavg())
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print(bench_server.render(result, TARGETS) + "\n\n" + bench_speed.render(result.get("speed"))
              + "\n\n" + bench_hooks.render(result.get("hooks"))
              + "\n\n" + bench_graph.render(result.get("graph"))
              + ("\n\n" + bench_ui.render(result["ui"]) if "ui" in result else "")
              + "\n\n" + bench_footprint.render(result.get("footprint"), result.get("serving"))
              + ("\n\n" + bench_weights.render(result["weights"]) if "weights" in result else "")
              + "\n\n" + bench_edits.render(result.get("edits"))
              + ("\n\n" + _render_million(result["million"]) if "million" in result else "")
              + ("\n\n" + _render_million_hybrid(result["million_hybrid"]) if "million_hybrid" in result else ""))
    return 0


BENCH_PARTS = ("sizes", "embedder", "footprint", "weights", "edits", "hooks", "graph", "ui")


def _parts(args) -> set[str]:
    """`--parts footprint,edits`: run only those parts (default all; `--million` is its own flag)."""
    raw = getattr(args, "parts", None)
    if not raw:
        return set(BENCH_PARTS)
    chosen = {p.strip() for p in str(raw).split(",") if p.strip()}
    unknown = chosen - set(BENCH_PARTS)
    if unknown:
        raise UsageError(f"--parts: unknown {', '.join(sorted(unknown))}; choose from {', '.join(BENCH_PARTS)}")
    return chosen


def write_vault_facts(size: int) -> dict:
    """The vocabulary facts `make_queries` needs, without writing files (same seed as write_vault)."""
    rng = random.Random(7)
    return {"vocab": Vocabulary(rng, max(20, size // 10)), "rare_used": []}


def _render_million(m: dict) -> str:
    from vault_index.tooling import bench_million

    return bench_million.render(m)


def _render_million_hybrid(h: dict) -> str:
    from vault_index.tooling import bench_million

    return bench_million.render_hybrid(h)


def _guard(fn, *args, default=None, size=None):
    """Run one part; an error becomes a reported row, never a failed bench."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the bench reports, it does not fail
        error = {"error": f"{type(exc).__name__}: {exc}"}
        if size is not None:
            error["size"] = size
        return default if default is not None else error

