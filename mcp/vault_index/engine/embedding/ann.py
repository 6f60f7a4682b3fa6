"""Nearest-neighbour kernels over float16 vectors: an exact scan, and an IVF index for big indexes.

docs/adr/0010-embedding-footprint.md (float16) and docs/adr/0014-approximate-knn.md (IVF) have
the measurements. The exact scan runs on numkong (Apache-2.0; SIMD dot products on float16,
numpy has no half-precision kernels), the approximate index on faiss-cpu (MIT). Both are
imported inside functions: the MCP server answers its handshake before any of this loads.
Where numkong is missing numpy scans in float32 blocks; where faiss is missing, the scan serves.

Trigger for not using usearch (the first candidate): importing its compiled module before
onnxruntime crashes the interpreter (segfault in onnxruntime's pybind module, usearch 2.26.6 /
onnxruntime 1.32). Why it matters: which of the two loads first depends on the order of the
first search and the first embed. Outcome: faiss, which loads in either order.
"""

from __future__ import annotations

import math
import time

# Trigger: an exact scan grows linearly (1M float16 rows: 169 ms p50 here, bench --million).
# Why: below this size the scan meets the latency target and is exact; above it the IVF index
# answers in a few ms. Outcome: the approximate index exists only for indexes this big.
ANN_MIN_VECTORS = 300_000
IVF_LISTS_PER_SQRT = 1  # lists = sqrt(n): about 1,000 vectors a list at 1M
IVF_TRAIN_PER_LIST = 40  # k-means sample per list (faiss asks for at least 39)
IVF_NPROBE = 128  # lists searched per query: recall@10 >= 0.95 from 300k to 1M (ADR 0014)
# Trigger: the IVF lists hold their own copy of every vector. Why: float16 codes would double the
# float16 matrix the index already holds. Outcome: 8-bit codes (a quarter of float32), candidates
# over-fetched by this factor and re-scored exactly by the caller.
IVF_OVERFETCH = 2
NUMPY_BLOCK_ROWS = 16_384  # float16 -> float32 conversion in blocks: bounded temporary memory


def _numkong():
    try:
        import numkong

        return numkong
    except ImportError:
        return None


def exact_top(matrix, query, k: int):
    """(row positions, inner products) of the k best rows of `matrix` (float16), best first."""
    import numpy as np

    k = min(k, len(matrix))
    if k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    query = np.asarray(query, dtype=np.float32)
    numkong = _numkong()
    if numkong is not None and matrix.dtype == np.float16:
        scores = np.asarray(numkong.cdist(query.astype(np.float16)[None], matrix, metric="dot"))[0]
    else:
        scores = np.empty(len(matrix), dtype=np.float32)
        for start in range(0, len(matrix), NUMPY_BLOCK_ROWS):
            block = matrix[start : start + NUMPY_BLOCK_ROWS]
            scores[start : start + len(block)] = block.astype(np.float32) @ query
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return top.astype(np.int64), scores[top].astype(np.float32)


class IvfIndex:
    """faiss IVF lists over 8-bit codes, keyed by chunk id, kept in step by adds and removes."""

    def __init__(self, index, build_seconds: float):
        self.index, self.build_seconds = index, build_seconds

    @classmethod
    def build(cls, ids, matrix, nprobe: int = IVF_NPROBE) -> IvfIndex:
        import faiss
        import numpy as np

        t0 = time.perf_counter()
        n, dim = matrix.shape
        lists = max(1, int(IVF_LISTS_PER_SQRT * math.sqrt(n)))
        sample = np.random.default_rng(0).choice(n, size=min(n, lists * IVF_TRAIN_PER_LIST), replace=False)
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFScalarQuantizer(quantizer, dim, lists, faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
        index.cp.niter = 10
        index.train(np.ascontiguousarray(matrix[np.sort(sample)], dtype=np.float32))
        index.nprobe = nprobe
        ivf = cls(index, 0.0)
        ivf._add(ids, matrix)
        ivf.quantizer = quantizer  # faiss does not own it from Python: keep it alive
        ivf.build_seconds = time.perf_counter() - t0
        return ivf

    def _add(self, ids, matrix) -> None:
        import numpy as np

        for start in range(0, len(ids), NUMPY_BLOCK_ROWS * 4):  # float32 copies in bounded blocks
            block = np.ascontiguousarray(matrix[start : start + NUMPY_BLOCK_ROWS * 4], dtype=np.float32)
            self.index.add_with_ids(block, np.asarray(ids[start : start + len(block)], dtype=np.int64))

    def update(self, removed, added_ids, added_matrix) -> None:
        """Follow an index change: drop the ids that went, add the new rows."""
        import faiss
        import numpy as np

        if len(removed):
            self.index.remove_ids(faiss.IDSelectorBatch(np.asarray(removed, dtype=np.int64)))
        if len(added_ids):
            self._add(added_ids, added_matrix)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, query, k: int):
        """(chunk ids, inner products) of about the k best, best first."""
        import numpy as np

        scores, ids = self.index.search(np.asarray(query, dtype=np.float32)[None], k * IVF_OVERFETCH)
        keep = ids[0] >= 0
        return ids[0][keep].astype(np.int64), scores[0][keep]


def recall_at(truth: list[set[int]], got: list[list[int]], k: int = 10) -> float:
    """Mean share of the exact top k that an approximate search also returned in its top k."""
    if not truth:
        return 0.0
    return sum(len(t & set(g[:k])) / max(1, len(t)) for t, g in zip(truth, got, strict=True)) / len(truth)
