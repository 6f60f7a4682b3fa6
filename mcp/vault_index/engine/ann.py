"""Nearest-neighbour kernels over float16 vectors: exact scans, and an HNSW graph for big indexes.

docs/adr/0010-embedding-footprint.md (float16) and docs/adr/0011-approximate-knn.md (HNSW) have
the measurements. Both run on usearch (Apache-2.0, SIMD kernels for float16), imported inside
functions: the MCP server answers its handshake before any of this loads. Where usearch is not
installed, numpy does the exact scan (slower on float16: it has no half-precision kernels).
"""

from __future__ import annotations

import time

# Trigger: an exact scan grows linearly (about 10x the 100k time at 1M). Why: below this size
# the scan meets the latency target and is exact; above it HNSW answers in a few ms with
# recall@10 >= 0.95 (bench --million). Outcome: the graph is built only for indexes this big.
ANN_MIN_VECTORS = 300_000
HNSW_CONNECTIVITY = 16  # links per node ("M"): memory ~ 2 x M x 8 bytes per vector
HNSW_EXPANSION_ADD = 128  # "efConstruction": build quality
HNSW_EXPANSION_SEARCH = 256  # "ef": measured for recall@10 >= 0.95 at 1M (ADR 0011)
NUMPY_BLOCK_ROWS = 16_384  # float16 -> float32 conversion in blocks: bounded temporary memory


def _usearch():
    try:
        from usearch import index as usearch_index

        return usearch_index
    except ImportError:
        return None


def exact_top(matrix, query, k: int):
    """(row positions, inner products) of the k best rows of `matrix` (float16), best first."""
    import numpy as np

    k = min(k, len(matrix))
    if k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    query = np.asarray(query, dtype=np.float32)
    usearch_index = _usearch()
    if usearch_index is not None:
        found = usearch_index.search(matrix, query.astype(matrix.dtype), k, usearch_index.MetricKind.IP,
                                     exact=True, threads=1)
        return np.asarray(found.keys, dtype=np.int64), 1.0 - np.asarray(found.distances, dtype=np.float32)
    scores = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), NUMPY_BLOCK_ROWS):
        block = matrix[start : start + NUMPY_BLOCK_ROWS]
        scores[start : start + len(block)] = block.astype(np.float32) @ query
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top])]
    return top.astype(np.int64), scores[top]


class HnswGraph:
    """An HNSW graph keyed by chunk id, kept in step with the vector matrix by adds and removes."""

    def __init__(self, dim: int):
        usearch_index = _usearch()
        if usearch_index is None:
            raise ImportError("usearch is not installed")
        self.index = usearch_index.Index(
            ndim=dim, metric="ip", dtype="f16", connectivity=HNSW_CONNECTIVITY,
            expansion_add=HNSW_EXPANSION_ADD, expansion_search=HNSW_EXPANSION_SEARCH,
        )
        self.build_seconds = 0.0

    @classmethod
    def build(cls, ids, matrix) -> HnswGraph:
        graph = cls(matrix.shape[1])
        t0 = time.perf_counter()
        graph.index.add(ids, matrix)
        graph.build_seconds = time.perf_counter() - t0
        return graph

    def update(self, removed, added_ids, added_matrix) -> None:
        """Follow an index change: drop the ids that went, add the new rows."""
        if len(removed):
            self.index.remove(removed)
        if len(added_ids):
            self.index.add(added_ids, added_matrix)

    def search(self, query, k: int):
        """(chunk ids, inner products) of about the k best, best first."""
        import numpy as np

        found = self.index.search(np.asarray(query, dtype=np.float32), k)
        return np.asarray(found.keys, dtype=np.int64), 1.0 - np.asarray(found.distances, dtype=np.float32)

    def memory_bytes(self) -> int:
        return int(self.index.memory_usage)


def recall_at(truth: list[set[int]], got: list[list[int]], k: int = 10) -> float:
    """Mean share of the exact top k that an approximate search also returned in its top k."""
    if not truth:
        return 0.0
    return sum(len(t & set(g[:k])) / max(1, len(t)) for t, g in zip(truth, got, strict=True)) / len(truth)
