"""Sweep the agent sub-query combination (issue 23, ADR 0027) on the suite's non-lockbox corpora.

Every variant runs through the real pipeline (App.search, mode hybrid, the eval's depth and file
NDCG@5); only services/search/subqueries.py's `combine` and `phrasings` are swapped per variant.
Each phrasing's own ranked list is computed once per corpus and reused by every variant (a memo
on Searcher._ranked), so a variant costs the combination and the pipeline's last stages only.
Constants are chosen leave-one-corpus-out (tooling/loco.py; variant 0, qmd's rule, is the
incumbent). Lockbox corpora are never opened (eval/LOCKBOX.md).

Usage: VAULT_EVAL_CACHE=... .venv/bin/python eval/sweep_subqueries.py [--save FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

from vault_index.services.search import search as search_module
from vault_index.services.search import subqueries
from vault_index.tooling.evaluation import EVAL_DEPTH, file_relevance, load_golden, score_ranking
from vault_index.tooling.loco import leave_one_corpus_out
from vault_index.tooling.suite import cache_dir, corpus_app, load_suite, prepare

REPO = Path(__file__).resolve().parent.parent
PLAIN_COMBINE, PLAIN_PHRASINGS = subqueries.combine, subqueries.phrasings


def qmd_bonus(question, others, question_weight=2.0, k=60):
    """qmd's rule in full: weighted RRF plus +0.05 for a first place and +0.02 for places 2-3 in any list."""
    scores = dict(PLAIN_COMBINE(question, others, question_weight, k))
    best: dict[int, int] = {}
    for order in (question, *others):
        for rank, (cid, _) in enumerate(order[:3], start=1):
            best[cid] = min(best.get(cid, rank), rank)
    for cid, rank in best.items():
        scores[cid] += 0.05 if rank == 1 else 0.02
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def only(kinds: set[str]):
    """phrasings() restricted to some kinds (ablation)."""
    return lambda found: [p for p in PLAIN_PHRASINGS(found) if p.label.split()[0] in kinds]


def split_paraphrases(found):
    """A paraphrase as two lists (its keyword side and its vector side) instead of one fused list."""
    out = []
    for p in PLAIN_PHRASINGS(found):
        if p.keyword and p.vector:
            out += [subqueries.Phrasing(p.label, p.text, True, False),
                    subqueries.Phrasing(p.label, p.text, False, True)]
        else:
            out.append(p)
    return out


def hypothetical_hybrid(found):
    """The hypothetical passage run as a paraphrase is (both sides, fused)."""
    return [subqueries.Phrasing(p.label, p.text, True, True) if p.label.startswith("hypo") else p
            for p in PLAIN_PHRASINGS(found)]


WEIGHTS = (1.0, 2.0, 3.0, 4.0, 6.0)
KS = (60, 30, 10, 5, 3, 1)
GRID = [("rrf w=2 k=60 (qmd)", partial(PLAIN_COMBINE, question_weight=2.0, k=60), PLAIN_PHRASINGS)] + [
    (f"rrf w={w:g} k={k}", partial(PLAIN_COMBINE, question_weight=w, k=k), PLAIN_PHRASINGS)
    for k in KS for w in WEIGHTS if (w, k) != (2.0, 60)]
OTHERS = [
    ("qmd + top-rank bonus", qmd_bonus, PLAIN_PHRASINGS),
    ("paraphrase split sides", PLAIN_COMBINE, split_paraphrases),
    ("hypothetical both sides", PLAIN_COMBINE, hypothetical_hybrid),
    ("keywords only", PLAIN_COMBINE, only({"keywords"})),
    ("paraphrases only", PLAIN_COMBINE, only({"paraphrase"})),
    ("hypothetical only", PLAIN_COMBINE, only({"hypothetical"})),
    ("no keywords", PLAIN_COMBINE, only({"paraphrase", "hypothetical"})),
]


def memoise_ranked() -> dict:
    """Each phrasing's (order, vector_used) computed once per corpus (clear the memo between
    corpora): the lists do not depend on the variant."""
    original = search_module.Searcher._ranked
    memo: dict = {}

    def ranked(self, query, terms, mode, allowed, notices, trace, rows):
        key = (query, mode, None if allowed is None else frozenset(allowed))
        if key not in memo:
            memo[key] = original(self, query, terms, mode, allowed, notices, trace, rows)
        order, used = memo[key]
        return list(order), used

    search_module.Searcher._ranked = ranked
    return memo


def score(app, questions, combine, phrasings) -> list[float]:
    subqueries.combine, subqueries.phrasings = combine, phrasings
    try:
        out = []
        for q in questions:
            result = app.search(q.query, "hybrid", EVAL_DEPTH, subqueries=q.subqueries)
            out.append(score_ranking(file_relevance(result.hits, q))["ndcg@5"])
        return out
    finally:
        subqueries.combine, subqueries.phrasings = PLAIN_COMBINE, PLAIN_PHRASINGS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", help="write the per-question scores (JSON) here")
    parser.add_argument("--only", action="append", default=[],
                        help="run only the variants whose name holds this text (repeatable; qmd's rule always runs)")
    args = parser.parse_args()
    memo = memoise_ranked()
    variants = [("plain question", None, None), *GRID, *OTHERS]
    if args.only:
        variants = [v for i, v in enumerate(variants) if i < 2 or any(text in v[0] for text in args.only)]
    per_q: dict[str, dict] = {}
    for corpus in load_suite(REPO / "eval" / "suite.json"):
        if corpus.lockbox:
            continue  # never opened here (eval/LOCKBOX.md)
        prepared = prepare(corpus, REPO, False, cache_dir())
        if isinstance(prepared, str):
            print(f"skip {corpus.name}: {prepared}", file=sys.stderr)
            continue
        vault, golden, root = prepared
        questions = [q for q in load_golden(golden, root) if q.subqueries is not None]
        if not questions:
            print(f"skip {corpus.name}: no question has sub-queries", file=sys.stderr)
            continue
        app = corpus_app(corpus.name, vault, cache_dir())
        memo.clear()
        try:
            app.index([str(vault)])
            rows = {}
            for name, combine, phrasings in variants:
                if combine is None:
                    rows[name] = [score_ranking(file_relevance(app.search(q.query, "hybrid", EVAL_DEPTH).hits, q))
                                  ["ndcg@5"] for q in questions]
                else:
                    rows[name] = score(app, questions, combine, phrasings)
            per_q[corpus.name] = {"kinds": [q.kind for q in questions], "ids": [q.id for q in questions],
                                  "scores": rows}
            print(f"{corpus.name}: {len(questions)} questions", file=sys.stderr)
        finally:
            app.close()
    report(per_q, [v[0] for v in variants])
    if args.save:
        Path(args.save).write_text(json.dumps(per_q) + "\n")
    return 0


def mean(values) -> float:
    return sum(values) / len(values) if values else 0.0


def report(per_q: dict, names: list[str]) -> None:
    corpora = list(per_q)
    means = {c: [mean(per_q[c]["scores"][n]) for n in names] for c in corpora}
    print(f"{'variant':28}" + "".join(f"{c[:16]:>18}" for c in corpora) + f"{'mean':>9}")
    for i, name in enumerate(names):
        row = [means[c][i] for c in corpora]
        print(f"{name:28}" + "".join(f"{v:>18.4f}" for v in row) + f"{mean(row):>9.4f}")
    # leave-one-corpus-out over the RRF grid (variant 0 of the grid, qmd's rule, is the incumbent)
    grid = [n for n in names if n.startswith("rrf ")]
    idx = [names.index(n) for n in grid]
    chosen = leave_one_corpus_out({c: [means[c][i] for i in idx] for c in corpora})
    print("\nleave-one-corpus-out over the RRF grid (chosen on the other corpora, scored here):")
    for c in corpora:
        i = idx[chosen[c]]
        print(f"  {c:18} {grid[chosen[c]]:22} {means[c][i]:.4f}   plain {means[c][0]:.4f}   "
              f"gain {means[c][i] - means[c][0]:+.4f}")
    print("\nby kind (plain -> qmd rule), file NDCG@5:")
    qmd = names.index(grid[0])
    for c in corpora:
        kinds = per_q[c]["kinds"]
        for kind in sorted(set(kinds)):
            sel = [j for j, k in enumerate(kinds) if k == kind]
            plain = mean([per_q[c]["scores"][names[0]][j] for j in sel])
            sub = mean([per_q[c]["scores"][names[qmd]][j] for j in sel])
            print(f"  {c:18} {kind:18} n={len(sel):3}  {plain:.4f} -> {sub:.4f}  ({sub - plain:+.4f})")


if __name__ == "__main__":
    sys.exit(main())
