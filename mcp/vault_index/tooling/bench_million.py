"""`vault-index bench --million`: kNN at one million vectors, exact against approximate (ADR 0014).

Synthetic, as the rest of the bench: 1,000,000 unit vectors of 384 dimensions drawn around 2,000
topic centres (real embeddings cluster by topic; uniform random vectors have no neighbours worth
the name and defeat every approximate index), and 100 queries near stored vectors. Reported:
- today's float32 numpy product (the path before issue 13) and the float16 exact scan;
- the IVF index (engine/ann.IvfIndex): build time, the memory it adds, search p50/p95, and
  recall@10 against the float32 brute force;
- the vector side of hybrid search at this size is the kNN plus re-scoring; keyword search at 1M
  chunks is not part of this run (the per-size table measures it where a size is given).
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

    from vault_index.engine import ann

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
