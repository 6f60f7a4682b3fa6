"""Fit a learned fusion (a weighted sum of the fusion's signals) on candidate dumps, leave-one-corpus-out.

The signals are the ones the pipeline already computes for every candidate (features() below):
its cosine, its note's centroid cosine, its IDF coverage of the question, its bm25 over the
query's best, and the query's keyword trust (coverage of the best keyword hit x matched share)
gating the two keyword terms. The fused score is their weighted sum; the weights are fitted by a
listwise loss (the softmax probability of the candidates in an answer file), each corpus weighing
the same whatever its number of questions, with a small L2 pull toward zero.

Leave-one-corpus-out: for each non-lockbox corpus, fit on the others and score the held-out one
(file NDCG@5 against keyword, vector and the hand-set fusion of ADR 0005). `--write` fits on
every corpus and writes eval/fusion_weights.json. Measured worse held out than the hand-set
fusion, so search does not read it (ADR 0030). Lockbox corpora are never read here.

Usage: PYTHONPATH=mcp python eval/fit_fusion.py DUMP_DIR [--write]
  (dumps from: PYTHONPATH=mcp python eval/dump_candidates.py eval/suite.json DUMP_DIR)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_fusion as rf  # noqa: E402
from vault_index.services.search import fusion  # noqa: E402

# The signals of fusion.coverage_fusion, one row per candidate; a model scores their weighted sum.
FEATURES = ("cosine", "note", "coverage3", "strength", "trust*coverage3", "trust*strength")
# The hand-set fusion (ADR 0005) in these terms: the fit starts here, and --toward-hand pulls toward it.
HAND_WEIGHTS = (1.0, fusion.NOTE_WEIGHT, 0.0, 0.0, fusion.COVERAGE_WEIGHT, fusion.KEYWORD_SCORE_WEIGHT)
WEIGHTS_FILE = Path(__file__).resolve().parent / "fusion_weights.json"


def features(cos: float, note: float, cov: float, strength: float, top_coverage: float,
             share: float) -> tuple[float, ...]:
    """One candidate's FEATURES row, as coverage_fusion computes its terms."""
    trust = min(1.0, fusion.CONFIDENCE_SCALE * top_coverage * share)
    cov3 = cov**fusion.COVERAGE_POWER
    return (cos, note, cov3, strength, trust * cov3, trust * strength)


L2 = 1e-3  # pulls weights the data cannot tell apart toward zero; the held-out table is flat from 1e-4 to 1e-2
STEPS = 1500
TOWARD_HAND = False  # --toward-hand: the L2 pull is toward the hand-set weights, not zero
RATE = 0.05


def raw_signals(q: dict) -> list[dict]:
    """Per candidate, the signals search computes (the keyword-only cosine floored as in search)."""
    cands = q["cands"]
    vec = sorted((c for c in cands if c["vec"]), key=lambda c: -c["cos"])
    vec_rank = {c["id"]: i + 1 for i, c in enumerate(vec)}
    floor = vec[-1]["cos"] if vec else 0.0
    keyword = sorted((c for c in cands if c["kw_rank"]), key=lambda c: c["kw_rank"])
    best_bm = max((c["bm25"] for c in keyword), default=0.0)
    top_cov = keyword[0]["cov"] if keyword else 0.0
    share = fusion.matched_share(q["df"], q["total"]) if q["df"] else 1.0
    share1 = fusion.matched_share(q["df"], q["total"], 1.0) if q["df"] else 1.0
    out = []
    for c in cands:
        out.append({
            "cos": c["cos"] if c["vec"] else floor, "note": c["note"], "cov": c["cov"],
            "strength": max(0.0, c["bm25"]) / best_bm if c["bm25"] is not None and best_bm > 0 else 0.0,
            "top_cov": top_cov, "share": share, "share1": share1,
            "kw_rank": c["kw_rank"], "vec_rank": vec_rank.get(c["id"]),
        })
    return out


def product_row(r: dict) -> tuple[float, ...]:
    return features(r["cos"], r["note"], r["cov"], r["strength"], r["top_cov"], r["share"])


def unclipped_row(r: dict) -> tuple[float, ...]:
    """No confidence scale, no clip, unmatched terms weighing 1 x the largest IDF: fewer constants."""
    trust = r["top_cov"] * r["share1"]
    cov3 = r["cov"] ** 3
    return (r["cos"], r["note"], cov3, r["strength"], trust * cov3, trust * r["strength"])


def rank_row(r: dict) -> tuple[float, ...]:
    """The product's row plus reciprocal ranks of each side (k = 60, as RRF)."""
    kw = 60 / (60 + r["kw_rank"]) if r["kw_rank"] else 0.0
    vr = 60 / (60 + r["vec_rank"]) if r["vec_rank"] else 0.0
    return (*product_row(r), kw, vr)


VARIANTS = {"product": product_row, "unclipped": unclipped_row, "ranks": rank_row}
ROW = product_row


def candidate_features(q: dict) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """(features n x d, answer-file flags n, candidates) of one dumped question."""
    files = {a[0] for a in q["answers"]}
    rows = [ROW(r) for r in raw_signals(q)]
    return np.asarray(rows, dtype=np.float64), np.asarray([c["path"] in files for c in q["cands"]]), q["cands"]


def prepare(data: list[dict]) -> list[tuple[np.ndarray, np.ndarray, list[dict], dict]]:
    return [(*candidate_features(q), q) for q in data if q["cands"]]


def _padded(rows: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Questions with an answer among their candidates as (Q x N x d features, Q x N answer flags,
    Q x N real-candidate mask), padded to the longest list."""
    usable = [(x, y) for x, y, _, _ in rows if y.any()]
    n = max(len(y) for _, y in usable)
    d = usable[0][0].shape[1]
    xs, ys, ms = np.zeros((len(usable), n, d)), np.zeros((len(usable), n)), np.zeros((len(usable), n))
    for i, (x, y) in enumerate(usable):
        xs[i, : len(y)], ys[i, : len(y)], ms[i, : len(y)] = x, y, 1
    return xs, ys, ms


def fit(train: dict[str, list], l2: float = L2, steps: int = STEPS) -> np.ndarray:
    """Adam on the mean (per corpus, then over corpora) listwise loss -log P(answer file)."""
    data = [_padded(rows) for rows in train.values()]
    d = data[0][0].shape[2]
    w = np.zeros(d)
    w[: len(HAND_WEIGHTS)] = HAND_WEIGHTS  # start from the hand-set weights
    m, v = np.zeros(d), np.zeros(d)
    hand = w.copy()
    for step in range(1, steps + 1):
        grad = 2 * l2 * (w - hand) if TOWARD_HAND else 2 * l2 * w
        for xs, ys, ms in data:
            s = np.where(ms > 0, xs @ w, -np.inf)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            pos = p * ys
            coef = p - pos / pos.sum(axis=1, keepdims=True)  # Q x N
            grad += np.einsum("qn,qnd->d", coef, xs) / len(xs) / len(data)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= RATE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return w


def scored(rows: list, weights: np.ndarray) -> dict:
    def order(item):
        x, _, cands, _ = item
        s = x @ weights
        return [cands[i] for i in sorted(range(len(cands)), key=lambda i: (-s[i], cands[i]["id"]))]

    by_q = {id(q): item for item in rows for q in [item[3]]}
    return rf.score([item[3] for item in rows], lambda q: order(by_q[id(q)]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("dumps", type=Path)
    parser.add_argument("--write", action="store_true", help="fit on every corpus and write the weights file")
    parser.add_argument("--l2", type=float, default=L2)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--toward-hand", action="store_true")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="product")
    args = parser.parse_args()
    global ROW, TOWARD_HAND
    ROW, TOWARD_HAND = VARIANTS[args.variant], args.toward_hand
    suite = json.loads((Path(__file__).resolve().parent / "suite.json").read_text())
    lockbox = {c["name"] for c in suite["corpora"] if c.get("lockbox")}
    datasets = {n: d for n, d in rf.load(args.dumps).items() if n not in lockbox}
    prepared = {n: prepare(d) for n, d in datasets.items()}
    print(f"{'held out':18}{'keyword':>9}{'vector':>9}{'hand':>9}{'learned':>9}{'margin':>9}   weights")
    for held in prepared:
        w = fit({n: r for n, r in prepared.items() if n != held}, args.l2, args.steps)
        data = datasets[held]
        kw = rf.score(data, rf.keyword_order)["file"]
        vec = rf.score(data, rf.vector_order)["file"]
        hand_w = np.zeros(len(w))
        hand_w[: len(HAND_WEIGHTS)] = HAND_WEIGHTS
        hand = scored(prepared[held], hand_w)["file"]
        learned = scored(prepared[held], w)["file"]
        print(f"{held:18}{kw:9.4f}{vec:9.4f}{hand:9.4f}{learned:9.4f}{learned - max(kw, vec):+9.4f}   "
              + " ".join(f"{x:.3f}" for x in w))
    if args.write and args.variant != "product":
        raise SystemExit("only the product's features are written (FEATURES)")
    if args.write:
        w = fit(prepared, args.l2, args.steps)
        target = WEIGHTS_FILE
        target.write_text(json.dumps({
            "features": list(FEATURES), "weights": [round(float(x), 6) for x in w],
            "fitted_on": sorted(prepared), "l2": args.l2, "script": "eval/fit_fusion.py",
        }, indent=2) + "\n")
        print(f"wrote {target}: " + " ".join(f"{n}={x:.4f}" for n, x in zip(FEATURES, w, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
