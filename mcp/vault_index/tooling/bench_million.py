"""`vault-index bench --million`: kNN at one million vectors, exact against approximate (ADR 0014).

Synthetic, as the rest of the bench: 1,000,000 unit vectors of 384 dimensions drawn around 2,000
topic centres (real embeddings cluster by topic; uniform random vectors have no neighbours worth
the name and defeat every approximate index), and 100 queries near stored vectors. Reported:
- today's float32 numpy product (the path before issue 13) and the float16 exact scan;
- the IVF index (engine/embedding/ann.IvfIndex): build time, the memory it adds, search p50/p95, and
  recall@10 against the float32 brute force;
- the vector side of hybrid search at this size is the kNN plus re-scoring.
Hybrid search end to end on a bulk-filled index of a million chunks is `child_hybrid`, in a
child process of its own (docs/bench.md, "One million vectors").
"""

from __future__ import annotations

import time
from pathlib import Path

N_VECTORS = 1_000_000
DIM = 384
CENTRES = 2_000
SPREAD = 0.06  # per-dimension noise around a centre: cosine to the centre about 0.65
QUERIES = 100
QUERY_SPREAD = 0.05
BLOCK = 100_000


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def clustered(n: int, seed: int = 0):
    """(float16 matrix of n unit vectors around CENTRES centres, float32 queries near stored rows)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CENTRES, DIM), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    matrix = np.empty((n, DIM), dtype=np.float16)
    for start in range(0, n, BLOCK):
        m = min(BLOCK, n - start)
        block = centres[rng.integers(0, CENTRES, m)] + rng.standard_normal((m, DIM), dtype=np.float32) * SPREAD
        matrix[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    picks = rng.integers(0, n, QUERIES)
    queries = matrix[picks].astype(np.float32) + rng.standard_normal((QUERIES, DIM), dtype=np.float32) * QUERY_SPREAD
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return matrix, queries


def _timed(fn, queries) -> tuple[list, dict]:
    fn(queries[0])
    out, times = [], []
    for q in queries:
        t0 = time.perf_counter()
        out.append(fn(q))
        times.append(time.perf_counter() - t0)
    times.sort()
    at = lambda p: round(times[min(len(times) - 1, int(round(p * (len(times) - 1))))] * 1000, 2)  # noqa: E731
    return out, {"p50_ms": at(0.5), "p95_ms": at(0.95), "n": len(times)}


def _rescored(matrix, ids, query) -> list[int]:
    """The IVF candidates ordered by their float16 scores (the index re-scores them exactly)."""
    import numpy as np

    scores = matrix[ids].astype(np.float32) @ query
    return ids[np.argsort(-scores)].tolist()


def bench_million(args, n: int = N_VECTORS) -> dict:
    import numpy as np

    from vault_index.engine.embedding import ann

    t0 = time.perf_counter()
    matrix, queries = clustered(n)
    out: dict = {"vectors": n, "dim": DIM, "generate_s": round(time.perf_counter() - t0, 1),
                 "float16_matrix_mb": round(matrix.nbytes / 1e6, 1)}
    ids = np.arange(n, dtype=np.int64)

    full = [matrix.astype(np.float32)]  # today's float32 copy (1.5 GB at 1M), dropped after use

    def brute(q):
        scores = full[0] @ q
        return set(np.argpartition(-scores, 10)[:10].tolist())

    truth, out["numpy_float32_top10"] = _timed(brute, queries)
    full.clear()

    exact, out["exact_float16_top20"] = _timed(lambda q: ann.exact_top(matrix, q, 20)[0].tolist(), queries)
    out["exact_float16_recall_at_10"] = round(ann.recall_at(truth, exact), 4)

    before = _rss_mb()
    ivf = ann.IvfIndex.build(ids, matrix)
    out["ivf"] = {"build_s": round(ivf.build_seconds, 1), "added_rss_mb": round(_rss_mb() - before, 1),
                  "lists": int(ivf.index.nlist), "nprobe": int(ivf.index.nprobe)}
    for nprobe in sorted({ann.IVF_NPROBE // 2, ann.IVF_NPROBE, ann.IVF_NPROBE * 2}):
        ivf.index.nprobe = nprobe
        got, timing = _timed(lambda q: _rescored(matrix, ivf.search(q, 20)[0], q), queries)
        out["ivf"][f"nprobe_{nprobe}"] = {**timing, "recall_at_10": round(ann.recall_at(truth, got), 4)}
    ivf.index.nprobe = ann.IVF_NPROBE
    return out


def render(m: dict) -> str:
    if not m or "ivf" not in m:
        return f"1M vectors: {(m or {}).get('error') or 'not run'}"
    ivf = m["ivf"]
    pair = lambda d: f"{d['p50_ms']}/{d['p95_ms']}"  # noqa: E731
    lines = [f"{m['vectors']:,} vectors ({m['dim']} d, clustered synthetic; float16 copy {m['float16_matrix_mb']} MB), "
             "kNN ms p50/p95:",
             f"  numpy float32 product (before)  {pair(m['numpy_float32_top10'])}",
             f"  exact float16 scan (numkong)    {pair(m['exact_float16_top20'])}"
             f"  recall@10 {m['exact_float16_recall_at_10']}",
             f"  IVF build {ivf['build_s']} s, +{ivf['added_rss_mb']} MB resident, {ivf['lists']} lists"]
    for key, value in ivf.items():
        if key.startswith("nprobe_"):
            lines.append(f"  IVF {key.replace('_', ' ')}  {pair(value)}  recall@10 {value['recall_at_10']}")
    return "\n".join(lines)


# --- hybrid search end to end at a million chunks -------------------------------------------------

HYBRID_CHUNKS = 1_000_000
HYBRID_QUERIES = 100
HYBRID_WARMUP = 10
FILL_FILES_PER_BLOCK = 2_000  # files written per transaction (10,000 chunks): bounded memory
CHUNKS_PER_FILE = 5
HYBRID_TIMEOUT_S = 3600
# Long questions (5-10 words of a chunk): an OR of several terms near the 1% line, where the
# keyword side's posting budget (services/search/search.KEYWORD_POSTING_BUDGET) engages at 1M.
LONG_WORDS = (5, 10)
LONG_SEED = 11
BRUTE_BLOCK_ROWS = 16_384  # float16 rows turned float32 at a time for the brute force


class _QueryVectors:
    """Stand-in embedder for the queries: each query text maps to the vector prepared for it."""

    fingerprint = "bench-million-clustered-384"
    max_tokens = 512

    def __init__(self, vectors: dict):
        self.vectors = vectors

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_documents(self, texts):
        raise RuntimeError("the million-chunk bench stores its vectors itself")

    def embed_query(self, text: str):
        return self.vectors[text]


def fill_store(store, n_chunks: int, n_queries: int, seed: int = 1) -> dict:
    """A synthetic index of `n_chunks` chunks written in bulk, through the store's own schema:
    files, chunks, chunks_fts (FTS5) and one float32 vector per chunk, clustered around CENTRES
    topics as in `clustered`. The text of a chunk is Zipf-distributed words of its topic's
    vocabulary slice plus common words, so keyword and vector side both have something to find.

    Written FILL_FILES_PER_BLOCK files per transaction, so the build holds one block at a time.
    Returns the timings and, for `n_queries` chunks picked in advance, a query (three of its
    words) with a query vector near the chunk's own.
    """
    import numpy as np

    from vault_index.tooling.bench_corpus import COMMON, SYLLABLES

    rng = np.random.default_rng(seed)
    syllables = np.array(SYLLABLES)
    rare = sorted({"".join(rng.choice(syllables, size=int(rng.integers(2, 5)))) for _ in range(20_000)})
    words = np.array(COMMON + [w for w in rare if w not in set(COMMON)])
    weights = 1.0 / (np.arange(len(words)) + 8.0)
    weights /= weights.sum()
    centres = rng.standard_normal((CENTRES, DIM), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic_words = rng.integers(len(COMMON), len(words), size=(CENTRES, 12))  # each topic's own words
    picked = set(rng.choice(n_chunks, size=min(n_queries, n_chunks), replace=False).tolist())
    source_id = store.add_source("/bench/million")
    timings = {"rows_and_fts_s": 0.0, "vectors_s": 0.0}
    queries: dict[str, object] = {}
    n_files = -(-n_chunks // CHUNKS_PER_FILE)
    chunk_id = 0
    for first_file in range(0, n_files, FILL_FILES_PER_BLOCK):
        files, chunks, fts, vectors = [], [], [], []
        block_files = min(FILL_FILES_PER_BLOCK, n_files - first_file)
        block_chunks = min(block_files * CHUNKS_PER_FILE, n_chunks - chunk_id)
        lengths = rng.integers(60, 90, size=block_chunks)
        picks = rng.choice(len(words), size=int(lengths.sum()), p=weights)
        topics = rng.integers(0, CENTRES, size=block_chunks)
        block = centres[topics] + rng.standard_normal((block_chunks, DIM), dtype=np.float32) * SPREAD
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        block = block.astype(np.float16).astype(np.float32)  # what the float16 copy holds, exactly
        offset = 0
        for c in range(block_chunks):
            f = first_file + c // CHUNKS_PER_FILE
            ordinal = c % CHUNKS_PER_FILE
            if ordinal == 0:
                files.append((f + 1, source_id, f"/bench/million/d{f // 500:04d}/n{f:07d}.md", 0.0, 0,
                              f"{f:064x}", f"Note {f}", '["bench"]', "canonical", "{}", 0.0))
            body = words[picks[offset : offset + lengths[c]]].tolist()
            offset += int(lengths[c])
            own = words[topic_words[topics[c]][: 4]].tolist()
            body[1:1] = own
            text = " ".join(body)
            cid = chunk_id + 1
            digest = f"{cid:064x}"
            heading = f"{body[0].capitalize()} {ordinal}"
            chunks.append((cid, f + 1, ordinal, heading, 1 + ordinal * 4, 3 + ordinal * 4, text, digest))
            fts.append((cid, f"Note {f}", heading, text))
            vectors.append((digest, _QueryVectors.fingerprint, block[c].tobytes()))
            if chunk_id in picked:
                query = " ".join([own[0], *rng.choice([w for w in body if w not in COMMON[:40]] or body, 2)])
                noisy = block[c] + rng.standard_normal(DIM, dtype=np.float32) * QUERY_SPREAD
                queries[query] = (noisy / np.linalg.norm(noisy)).astype(np.float32)
            chunk_id += 1
        t0 = time.perf_counter()
        with store.transaction() as db:
            db.executemany("INSERT INTO files(id, source_id, path, mtime, size, hash, title, tags, status, "
                           "frontmatter, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)", files)
            db.executemany("INSERT INTO chunks(id, file_id, ordinal, heading, line_start, line_end, text, hash) "
                           "VALUES (?,?,?,?,?,?,?,?)", chunks)
            db.executemany("INSERT INTO chunks_fts(rowid, title, heading, body) VALUES (?,?,?,?)", fts)
        t1 = time.perf_counter()
        store.put_vectors(_QueryVectors.fingerprint, ((h, blob) for h, _, blob in vectors))
        timings["rows_and_fts_s"] += t1 - t0
        timings["vectors_s"] += time.perf_counter() - t1
    store.checkpoint()
    return {"chunks": chunk_id, "files": n_files, **{k: round(v, 1) for k, v in timings.items()}, "queries": queries}


def long_questions(store, n: int, seed: int = LONG_SEED) -> dict:
    """`n` questions of LONG_WORDS words read back from chunks picked at random (the chunk's first
    topic word, then other words of its text), each with a vector near the chunk's own. Read
    after the fill, from its own generator: the fill's data and its three-word queries stay as
    they were."""
    import numpy as np

    from vault_index.tooling.bench_corpus import COMMON

    rng = np.random.default_rng(seed)
    total = store.chunk_count()
    questions: dict[str, object] = {}
    for cid in rng.choice(np.arange(1, total + 1), size=min(n, total), replace=False).tolist():
        text, digest = store.db.execute("SELECT text, hash FROM chunks WHERE id = ?", (cid,)).fetchone()
        body = text.split()
        words = list(dict.fromkeys(w for w in body[2:] if w not in COMMON[:40] and w != body[1])) or body
        size = int(rng.integers(LONG_WORDS[0], LONG_WORDS[1] + 1))
        picked = rng.choice(words, size=min(size - 1, len(words)), replace=False).tolist()
        blob = store.vectors_by_hash(_QueryVectors.fingerprint, [digest])[digest]
        noisy = np.frombuffer(blob, dtype=np.float32) + rng.standard_normal(DIM, dtype=np.float32) * QUERY_SPREAD
        questions[" ".join([body[1], *picked])] = (noisy / np.linalg.norm(noisy)).astype(np.float32)
    return questions


class _UnboundedKeyword:
    """Within it, the keyword side runs without its posting budget (the pipeline before it)."""

    def __enter__(self):
        from vault_index.services.search import search

        self._budget, search.posting_budget = search.posting_budget, lambda total: None
        return self

    def __exit__(self, *exc):
        from vault_index.services.search import search

        search.posting_budget = self._budget


def _timed_hits(searcher, texts) -> tuple[list, dict]:
    """(top hits as (path, line) per text, wall and CPU p50/p95) of hybrid searches."""
    hits, times, cpu = [], [], []
    for text in texts:
        c0, t0 = time.process_time(), time.perf_counter()
        result = searcher.search(text, "hybrid")
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        hits.append([(h.path, h.line_start) for h in result.hits])
    return hits, {**_summary(times), "cpu": _summary(cpu)}


def _shared(got: list, want: list) -> float:
    """Mean share of each `want` top 10 that `got` also returned."""
    import numpy as np

    return round(float(np.mean([len(set(g) & set(w)) / max(1, len(w)) for g, w in zip(got, want, strict=True)])), 4)


def _brute_top(matrix, ids, queries, k: int = 10) -> list[set[int]]:
    """Exact float32 top k chunk ids per query over the float16 matrix, in bounded blocks."""
    import numpy as np

    q = np.asarray(queries, dtype=np.float32)
    best_scores = np.full((len(q), k), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(q), k), dtype=np.int64)
    for start in range(0, len(matrix), BRUTE_BLOCK_ROWS):
        block = matrix[start : start + BRUTE_BLOCK_ROWS].astype(np.float32) @ q.T  # (rows, queries)
        scores = np.concatenate([best_scores, block.T], axis=1)
        rows = np.concatenate([best_rows, np.arange(start, start + len(block))[None].repeat(len(q), 0)], axis=1)
        keep = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        best_scores = np.take_along_axis(scores, keep, 1)
        best_rows = np.take_along_axis(rows, keep, 1)
    return [set(ids[r].tolist()) for r in best_rows]


def _ann():
    from vault_index.engine.embedding import ann

    return ann


def child_hybrid(n_chunks: int, workdir: str, ann_min_vectors: int | None = None,
                 n_queries: int = HYBRID_QUERIES) -> dict:
    """Build the synthetic index, then time the real Searcher.search (hybrid) on it.

    `ann_min_vectors` lowers the size from which the IVF index serves (tests, at a small size)."""
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store
    from vault_index.services.search import fusion
    from vault_index.services.search.search import Searcher
    from vault_index.tooling.bench_footprint import _peak_mb

    db_path = Path(workdir) / f"million-{n_chunks}.db"
    store = Store(db_path)
    t0 = time.perf_counter()
    filled = fill_store(store, n_chunks, n_queries)
    build_rows_s = time.perf_counter() - t0
    queries = filled.pop("queries")
    out: dict = {**filled, "fill_s": round(build_rows_s, 1),
                 "db_mb": round(sum(p.stat().st_size for p in Path(workdir).glob(db_path.name + "*")) / 1e6, 1),
                 "rss_after_fill_mb": round(_rss_mb(), 1), "peak_after_fill_mb": _peak_mb()}
    long = long_questions(store, n_queries)
    searcher = Searcher(store, Models.fixed(_QueryVectors({**queries, **long})))
    texts = list(queries)
    if ann_min_vectors is not None:
        searcher.vector_index().ann_min_vectors = ann_min_vectors
    t0 = time.perf_counter()
    searcher.search(texts[0], "hybrid")  # loads the float16 matrix and builds the IVF index
    out["first_search_s"] = round(time.perf_counter() - t0, 1)
    index = searcher.vector_index()
    out["ivf_build_s"] = round(index.approx.build_seconds, 1) if index.approx is not None else None
    out["rss_after_load_mb"] = round(_rss_mb(), 1)
    for text in texts[: min(HYBRID_WARMUP, len(texts))]:
        searcher.search(text, "hybrid")
    # CPU time as well as wall time: on a shared machine the wall time of one search is mostly
    # waiting for a core; its CPU time is what the search itself costs.
    approximate, out["hybrid"] = _timed_hits(searcher, texts)
    long_hits, out["hybrid_long"] = _timed_hits(searcher, list(long))
    # The same searches without the keyword side's posting budget: what the bound changed.
    with _UnboundedKeyword():
        unbounded, _ = _timed_hits(searcher, texts)
        long_unbounded, out["hybrid_long_unbounded"] = _timed_hits(searcher, list(long))
    out["hybrid_top10_vs_unbounded"] = _shared(approximate, unbounded)
    out["hybrid_long_top10_vs_unbounded"] = _shared(long_hits, long_unbounded)
    # The hybrid's vector side as it ran (the IVF index, re-scored), against brute force.
    vectors = index._refresh()
    truth = _brute_top(vectors.matrix, vectors.ids, [queries[t] for t in texts])
    side = [[cid for cid, _ in index.search(queries[t], fusion.CANDIDATES_PER_SIDE)] for t in texts]
    out["vector_side_recall_at_10"] = round(_ann().recall_at(truth, side), 4)
    # The same hybrid searches with the exact scan in place of the IVF index: top-10 agreement.
    approx, index.approx = index.approx, None
    exact, out["hybrid_exact_scan"] = _timed_hits(searcher, texts)
    index.approx = approx
    out["hybrid_top10_vs_exact"] = _shared(approximate, exact)
    out["peak_rss_mb"] = _peak_mb()
    store.close()
    return out


def _summary(times: list[float]) -> dict:
    times = sorted(times)
    at = lambda p: round(times[min(len(times) - 1, int(round(p * (len(times) - 1))))] * 1000, 1)  # noqa: E731
    return {"p50_ms": at(0.5), "p95_ms": at(0.95), "n": len(times)}


def bench_hybrid(args, workdir: Path, n_chunks: int = HYBRID_CHUNKS) -> dict:
    """The hybrid part in a child process of its own (its memory is its own VmHWM)."""
    import json
    import os
    import subprocess
    import sys

    from vault_index.tooling.bench_corpus import _loadavg

    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vault_index.tooling.bench_million", "hybrid", str(n_chunks),
                           str(workdir)], capture_output=True, text=True, timeout=HYBRID_TIMEOUT_S,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return {**json.loads(lines[-1]), "total_s": round(time.perf_counter() - t0, 1), "loadavg_end": _loadavg()}


def render_hybrid(h: dict) -> str:
    if not h or "hybrid" not in h:
        return f"hybrid search at 1M chunks: {(h or {}).get('error') or 'not run'}"
    pair = lambda d: f"{d['p50_ms']}/{d['p95_ms']}"  # noqa: E731
    return "\n".join([
        f"hybrid search end to end, {h['chunks']:,} chunks ({h['files']:,} notes, synthetic, bulk-filled):",
        f"  build: rows + FTS5 {h['rows_and_fts_s']} s, vectors {h['vectors_s']} s (fill {h['fill_s']} s in all), "
        f"first search (float16 matrix + IVF) {h['first_search_s']} s, of which IVF {h['ivf_build_s']} s; "
        f"index file {h['db_mb']} MB",
        f"  memory: {h['rss_after_fill_mb']} MB after the fill, {h['rss_after_load_mb']} MB after the first search, "
        f"peak {h['peak_rss_mb']} MB",
        f"  Searcher.search hybrid p50/p95 {pair(h['hybrid'])} ms wall, {pair(h['hybrid']['cpu'])} ms CPU (IVF); "
        f"with the exact scan {pair(h['hybrid_exact_scan'])} ms wall, {pair(h['hybrid_exact_scan']['cpu'])} ms CPU",
        f"  recall@10 of the vector side against brute force {h['vector_side_recall_at_10']}; "
        f"hybrid top 10 shared with the exact-scan hybrid {h['hybrid_top10_vs_exact']}",
        f"  long questions ({LONG_WORDS[0]}-{LONG_WORDS[1]} words): hybrid p50/p95 {pair(h['hybrid_long'])} ms wall, "
        f"{pair(h['hybrid_long']['cpu'])} ms CPU; keyword side unbounded {pair(h['hybrid_long_unbounded'])} ms wall, "
        f"{pair(h['hybrid_long_unbounded']['cpu'])} ms CPU",
        f"  top 10 shared with the unbounded keyword side: {h['hybrid_top10_vs_unbounded']} (three-word questions), "
        f"{h['hybrid_long_top10_vs_unbounded']} (long questions)",
    ])


if __name__ == "__main__":
    import json
    import sys

    if sys.argv[1] == "hybrid":
        print(json.dumps(child_hybrid(int(sys.argv[2]), sys.argv[3])))
    else:
        raise SystemExit(f"unknown part {sys.argv[1]}")
