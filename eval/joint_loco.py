"""Joint leave-one-corpus-out over grids of fusion constants, on candidate dumps.

`eval/replay_fusion.py` varies one constant at a time; this varies several together (with the
vectorised scorer in `eval/fast_replay.py`), so an interaction (a larger keyword weight that
only pays once it is gated by the chunk's coverage) is not missed. For each held-out corpus the
variant is chosen on the other corpora (`vault_index.tooling.loco`, the incumbent first, so it
stays unless another gains MIN_GAIN), then scored on the held-out one. Also printed: the
variants with the best worst-corpus margin in-sample (what the best possible choice would be
if every corpus could be looked at; not a held-out figure).

Usage: PYTHONPATH=mcp python eval/joint_loco.py DUMP_DIR [mean|worst] [part of a grid's title]
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fast_replay as fr  # noqa: E402
import replay_fusion as rf  # noqa: E402
from vault_index.tooling.loco import choose_on, leave_one_corpus_out  # noqa: E402

INCUMBENT = {**rf.START, "bm": 0.2, "bm_pow": 3}  # fusion.py before the confidence gate (ADR 0005)
# fusion.py before the matched share: the confidence gate's constants, unmatched terms weighing 0
GATED = {**rf.SHIPPED, "u": 0}
GRIDS = {
    # unmatched query terms in the keyword confidence (fusion.matched_share, weight u), on its own
    # and jointly with the gate's constants; the incumbent is the fusion before it (GATED)
    "unmatched terms in the confidence": {"_from": GATED, "u": [0, 0.5, 1, 1.5, 2]},
    "unmatched terms x confidence gate x coverage weight x keyword term x note weight": {
        "_from": GATED, "u": [0, 0.5, 1, 1.5, 2], "conf": [1.25, 1.5, 2, 3], "w": [0.3, 0.4, 0.5],
        "bm": [0.2, 0.3, 0.4], "note": [0.2, 0.3]},
    # the keyword confidence (fusion.keyword_confidence: min(1, conf x coverage of the best keyword
    # hit) scales the coverage and keyword-score terms) with the constants it interacts with. The
    # grid ranges were widened where a choice sat on an edge (bm 0.3 first sat on the top of
    # 0.1-0.3, conf 1.5 on the bottom of 1.5-3).
    "confidence gate x coverage weight x keyword term x note weight": {
        "conf": [1.25, 1.5, 2, 3], "w": [0.25, 0.3, 0.4, 0.5], "bm": [0.2, 0.3, 0.4], "bm_pow": [1, 3],
        "note": [0.2, 0.25, 0.3, 0.35]},
    # the keyword-score term: weight, power, gated by the chunk's own coverage ** bm_cov, with and
    # without the note-level score (best chunk + file_agg x mean of the next two)
    "keyword term x coverage gate x note-level score": {
        "bm": [0.2, 0.1, 0.3, 0.4, 0.05], "bm_pow": [3, 1, 2], "bm_cov": [0, 1, 2], "file_agg": [0, 0.2]},
    # the same without the note-level score, which costs chunk NDCG@5 (LoCoMo 0.829 to 0.75)
    "keyword term x coverage gate, note-level score off": {
        "bm": [0.2, 0.1, 0.3, 0.4, 0.05], "bm_pow": [3, 1, 2], "bm_cov": [0, 1, 2]},
    # the 0002 constants, jointly, under the shipped keyword term
    "coverage weight x note-centroid weight": {"w": [0.25, 0.0, 0.1, 0.4], "note": [0.2, 0.0, 0.1, 0.3]},
}


def run(datasets: dict, criterion: str, only: str = "") -> None:
    names = list(datasets)
    prepared = {n: [fr.prepare(q) for q in data] for n, data in datasets.items()}
    bases = {n: {"keyword": rf.score(d, rf.keyword_order), "vector": rf.score(d, rf.vector_order)}
             for n, d in datasets.items()}
    for n, b in bases.items():
        print(f"{n}: keyword {b['keyword']['file']:.3f} vector {b['vector']['file']:.3f} (file NDCG@5)")
    for title, space in GRIDS.items():
        if only and only not in title:
            continue
        space = dict(space)
        incumbent = space.pop("_from", INCUMBENT)
        keys = list(space)
        variants = [incumbent] + [{**incumbent, **dict(zip(keys, vals, strict=True))}
                                  for vals in itertools.product(*space.values())]
        table = {n: [fr.score(prepared[n], v) for v in variants] for n in names}
        margins = {n: [rf.margin(s, bases[n]) for s in rows] for n, rows in table.items()}

        def show(i: int, keys=keys, variants=variants) -> str:
            return ", ".join(f"{k} {variants[i].get(k)}" for k in keys)

        print(f"\n{title} ({len(variants)} variants, criterion {criterion}); incumbent: {show(0)}")
        print("| held out | chosen on the others | held-out file NDCG@5 (margin) | chunk NDCG@5 |")
        for held, i in leave_one_corpus_out(margins, criterion).items():
            s = table[held][i]
            print(f"| {held} | {show(i)} | {s['file']:.3f} ({margins[held][i]:+.3f}) | {s['chunk']:.3f} |")
        i = choose_on(margins, names, criterion)
        print(f"chosen on all: {show(i)}: " + ", ".join(f"{n} {margins[n][i]:+.3f}" for n in names))
        print("best worst-corpus margins in-sample:")
        ranked = sorted(range(len(variants)), key=lambda j: (-min(margins[n][j] for n in names), j))
        for j in [0] + ranked[:6]:
            cells = ", ".join(f"{n} {margins[n][j]:+.3f} c {table[n][j]['chunk']:.3f}" for n in names)
            print(f"  {show(j)}: {cells}", flush=True)


def shipped(datasets: dict) -> None:
    """fusion.py as shipped (replay_fusion.SHIPPED): margins to 4 places and every kind against both modes."""
    print("\nshipped:", rf.SHIPPED)
    for n, data in datasets.items():
        s = fr.score([fr.prepare(q) for q in data], rf.SHIPPED)
        kw, vec = rf.score(data, rf.keyword_order), rf.score(data, rf.vector_order)
        kinds = ", ".join(f"{k} ({c}) {v:.3f} vs {kw['kinds'][k][0]:.3f} / {vec['kinds'][k][0]:.3f}"
                          for k, (v, c) in sorted(s["kinds"].items()))
        gain = s["file"] - max(kw["file"], vec["file"])
        print(f"  {n}: file {s['file']:.4f} ({gain:+.4f}), chunk {s['chunk']:.3f}; {kinds}")


if __name__ == "__main__":
    data = rf.load(Path(sys.argv[1]))
    shipped(data)
    run(data, sys.argv[2] if len(sys.argv) > 2 else "mean", sys.argv[3] if len(sys.argv) > 3 else "")
