"""Vectorised replay of the fusion family in eval/replay_fusion.py, for joint grids.

`replay_fusion.fused_order` scores one question at a time in Python (about 13 s per variant on
LoCoMo's 1,536 questions under load); a joint grid over every constant at once needs hundreds of
variants. This module turns each question's candidates into numpy arrays once and scores a
variant in a few vector operations. It covers the terms the joint grid varies (coverage weight
and power, note weight, the keyword-score term with its power and its coverage gate, the
note-level aggregation); `check()` asserts it ranks exactly as `fused_order` on given dumps.

Usage: PYTHONPATH=mcp python eval/fast_replay.py DUMP_DIR   (runs the check)
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_fusion as rf  # noqa: E402
from vault_index.tooling.evaluation import heading_matches  # noqa: E402

DISCOUNT = np.array([1 / math.log2(i + 2) for i in range(5)])


@dataclass
class Prepared:
    kind: str
    ids: np.ndarray
    cos: np.ndarray  # real cosine for vector hits, the list's floor for keyword-only ones
    cov: np.ndarray
    note: np.ndarray
    strength: np.ndarray  # bm25 / best bm25 of the query (0 off the keyword list)
    has_bm: np.ndarray
    file: np.ndarray  # file index per candidate
    answer_file: np.ndarray  # per file index: is it an answer's file
    relevant: np.ndarray  # per candidate: an answer's file and heading
    top_cov: float  # coverage of the keyword side's best hit (0 without keyword hits)
    df: tuple[int, ...]  # the query terms' document counts, and the index's chunk count, for
    total: int  # fusion.matched_share


def prepare(q: dict) -> Prepared:
    cands = q["cands"]
    vec = [c for c in cands if c["vec"]]
    floor = min(c["cos"] for c in vec) if vec else 0.0
    bm = [c["bm25"] for c in cands if c["bm25"] is not None]
    top = max(bm) if bm else 1.0
    files = list(dict.fromkeys(c["path"] for c in cands))
    index = {f: i for i, f in enumerate(files)}
    answers = {a[0] for a in q["answers"]}
    best_kw = min((c for c in cands if c["kw_rank"]), key=lambda c: c["kw_rank"], default=None)
    return Prepared(
        kind=q["kind"],
        ids=np.array([c["id"] for c in cands]),
        cos=np.array([c["cos"] if c["vec"] and c["cos"] is not None else floor for c in cands]),
        cov=np.array([c["cov"] for c in cands]),
        note=np.array([c["note"] for c in cands]),
        strength=np.array([(c["bm25"] / top) if c["bm25"] is not None and top > 0 else 0.0 for c in cands]),
        has_bm=np.array([c["bm25"] is not None and top > 0 for c in cands]),
        file=np.array([index[c["path"]] for c in cands]),
        answer_file=np.array([f in answers for f in files]),
        relevant=np.array([any(c["path"] == f and heading_matches(c["heading"], h) for f, h in q["answers"])
                           for c in cands]),
        top_cov=best_kw["cov"] if best_kw else 0.0,
        df=tuple(q["df"]),
        total=q["total"],
    )


def scores(p: Prepared, v: dict) -> np.ndarray:
    keyword_part = v["w"] * p.cov ** v["pow"]
    if v.get("bm"):
        term = v["bm"] * p.strength ** v.get("bm_pow", 1)
        if v.get("bm_cov"):
            term = term * p.cov ** v["bm_cov"]
        keyword_part = keyword_part + np.where(p.has_bm, term, 0.0)
    share = rf.fusion.matched_share(p.df, p.total, v["u"]) if v.get("u") else 1.0
    trust = 1.0 if v.get("conf") is None else min(1.0, v["conf"] * p.top_cov * share)
    return p.cos + v["note"] * p.note + trust * keyword_part


def order(p: Prepared, v: dict) -> np.ndarray:
    s = scores(p, v)
    first = np.lexsort((p.ids, -s))  # best first, ties by id (as fused_order)
    agg = v.get("file_agg")
    if not agg:
        return first
    # note-level score: each file's best chunk plus agg x (second + third best) / 2
    in_order = p.file[first]
    by_file = np.argsort(in_order, kind="stable")  # grouped by file, best first within a file
    group, values = in_order[by_file], s[first][by_file]
    starts = np.r_[0, np.flatnonzero(np.diff(group)) + 1]
    counts = np.diff(np.r_[starts, len(group)])
    rank = np.arange(len(group)) - np.repeat(starts, counts)
    best = np.zeros(p.answer_file.size)
    best[group[rank == 0]] = values[rank == 0]
    extra = np.zeros(p.answer_file.size)
    nxt = (rank == 1) | (rank == 2)
    np.add.at(extra, group[nxt], values[nxt])
    several = np.zeros(p.answer_file.size, dtype=bool)
    several[group[rank == 1]] = True
    fs = (best + agg * np.where(several, extra / 2, 0.0))[p.file]
    pos = np.empty(len(first), dtype=int)
    pos[first] = np.arange(len(first))
    return np.lexsort((pos, -s, -fs))


def first_rank(flags: np.ndarray) -> int | None:
    hit = np.flatnonzero(flags)
    return int(hit[0]) if hit.size else None


def score_one(p: Prepared, v: dict) -> tuple[float, float, int | None]:
    o = order(p, v)
    files = p.file[o]
    _, first_pos = np.unique(files, return_index=True)
    distinct = files[np.sort(first_pos)]
    fr = first_rank(p.answer_file[distinct])
    cr = first_rank(p.relevant[o])
    f = DISCOUNT[fr] if fr is not None and fr < 5 else 0.0
    c = DISCOUNT[cr] if cr is not None and cr < 5 else 0.0
    return f, c, fr


def score(prepared: list[Prepared], v: dict) -> dict:
    """The same dict as replay_fusion.score: file and chunk NDCG@5 (first answer), R@5, MRR, kinds."""
    rows = [score_one(p, v) for p in prepared]
    n = len(rows) or 1
    kinds: dict[str, list[float]] = {}
    for p, (f, _, _) in zip(prepared, rows, strict=True):
        kinds.setdefault(p.kind, []).append(f)
    return {
        "file": sum(r[0] for r in rows) / n, "chunk": sum(r[1] for r in rows) / n,
        "r5": sum(1.0 for r in rows if r[2] is not None and r[2] < 5) / n,
        "mrr": sum(1 / (r[2] + 1) for r in rows if r[2] is not None) / n,
        "kinds": {k: (sum(x) / len(x), len(x)) for k, x in kinds.items()},
    }


def check(datasets: dict, variants: list[dict]) -> None:
    for name, data in datasets.items():
        prepared = [prepare(q) for q in data]
        for v in variants:
            slow, fast = rf.score(data, lambda q, v=v: rf.fused_order(q, v)), score(prepared, v)
            for key in ("file", "chunk", "r5", "mrr"):
                assert abs(slow[key] - fast[key]) < 1e-9, (name, v, key, slow[key], fast[key])
        print(f"{name}: fast replay ranks as fused_order on {len(variants)} variants")


if __name__ == "__main__":
    base = {**rf.START, "bm": 0.2, "bm_pow": 3}
    check(rf.load(Path(sys.argv[1])), [base, {**base, "bm_cov": 2}, {**base, "file_agg": 0.2, "w": 0.1},
                                       {**rf.START}, {**base, "bm_cov": 1, "bm_pow": 1, "note": 0.3},
                                       rf.SHIPPED, {**rf.SHIPPED, "conf": 3.0, "file_agg": 0.2},
                                       {**rf.SHIPPED, "u": 0}])
