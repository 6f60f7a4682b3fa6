"""Dump each question's fusion candidates once per corpus, so fusion variants can be replayed.

For every question of every corpus in the suite: the union of the keyword and vector candidate
lists (as deep as the pipeline reads them), and per candidate its file, heading, keyword rank and
bm25, cosine (computed for keyword-only candidates too), IDF coverage, note-centroid cosine and
the best cosine of any chunk of its note. `eval/replay_fusion.py` scores variants on the dumps.

Usage: PYTHONPATH=mcp python eval/dump_candidates.py eval/suite.json OUT_DIR [--fast]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from vault_index.services.search import fusion
from vault_index.services.search.query import query_terms
from vault_index.tooling.evaluation import load_golden
from vault_index.tooling.suite import cache_dir, corpus_app, load_suite, prepare


def dump_corpus(app, questions) -> list[dict]:
    searcher = app.searcher
    index = searcher.vector_index()
    vectors = index._refresh()
    out = []
    for q in questions:
        terms = query_terms(q.query)
        counts = searcher._doc_counts(terms)
        keyword = searcher._keyword(terms, counts, None) if counts else []
        qv = np.asarray(app.models.embedder().embed_query(q.query), dtype=np.float32)
        all_scores = vectors.matrix @ qv
        k = fusion.CANDIDATES_PER_SIDE
        top = np.argpartition(-all_scores, k - 1)[:k]
        vec_ids = {int(vectors.ids[i]) for i in top}
        ids = vec_ids | {c.chunk_id for c in keyword}
        rows = app.store.chunk_rows(ids)
        cover = searcher._coverages(terms, counts, rows)
        note = index.note_similarity(qv, rows.keys())
        pos = {int(c): i for i, c in enumerate(vectors.ids.tolist())}
        kw = {c.chunk_id: c for c in keyword}
        # best chunk cosine per note, over all of the note's chunks
        files = {int(vectors.files[pos[c]]) for c in rows if c in pos}
        note_max = {f: float(all_scores[vectors.files == f].max()) for f in files}
        cands = []
        for cid, row in rows.items():
            p = pos.get(cid)
            cands.append({
                "id": cid, "path": row.path, "heading": row.heading, "title": row.title, "chars": len(row.text),
                "kw_rank": kw[cid].rank if cid in kw else None, "bm25": kw[cid].score if cid in kw else None,
                "cos": float(all_scores[p]) if p is not None else None, "vec": cid in vec_ids,
                "cov": cover.get(cid, 0.0), "note": note.get(cid, 0.0),
                "note_max": note_max.get(int(vectors.files[p])) if p is not None else None,
            })
        out.append({"id": q.id, "query": q.query, "kind": q.kind, "terms": terms,
                    "df": counts.per_term if counts else [], "total": counts.total if counts else 0,
                    "answers": q.answers, "cands": cands})
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("suite")
    parser.add_argument("out", type=Path)
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    suite = Path(args.suite).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    cache = cache_dir()
    for corpus in load_suite(suite):
        if args.only and corpus.name not in args.only.split(","):
            continue
        if corpus.lockbox:  # scored once, at the end, by `vault-index eval --lockbox` only (eval/LOCKBOX.md)
            print(f"skip {corpus.name}: a lockbox corpus", file=sys.stderr)
            continue
        prepared = prepare(corpus, suite.parent.parent, args.fast, cache)
        if isinstance(prepared, str):
            print(f"skip {corpus.name}: {prepared}", file=sys.stderr)
            continue
        vault, golden, root = prepared
        app = corpus_app(corpus.name + ("-fast" if args.fast else ""), vault, cache)
        try:
            app.index([str(vault)])
            data = dump_corpus(app, load_golden(golden, root))
        finally:
            app.close()
        (args.out / f"{corpus.name}.json").write_text(json.dumps(data))
        print(f"{corpus.name}: {len(data)} questions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
