"""Does expanding the top hits by one link hop help? The measurement behind docs/adr/0013.

`python -m vault_index.tooling.eval_links` (env as for `vault-index eval`: VAULT_EMBED_MODEL,
VAULT_EVAL_DB) runs the golden questions through the hybrid pipeline, then re-ranks the result's
files with each weight in WEIGHTS: the top EXPAND_TOP files pass `weight * their score` to each
note one link away (either direction), a note keeping its best score. Weight 0 is search as it is.
File-level metrics per weight are printed; nothing is changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vault_index.tooling.evaluation import EVAL_DEPTH, METRICS, _mean, eval_app, load_golden, score_ranking

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
EXPAND_TOP = 3


def expanded_files(store, hits, weight: float, top: int = EXPAND_TOP) -> list[str]:
    """The hits' files re-ranked with their one-hop neighbours added at `weight` x parent score."""
    score: dict[str, float] = {}
    for hit in hits:
        score.setdefault(hit.path, float(hit.score))
    if weight > 0:
        for path in list(score)[:top]:
            for row in store.links("neighbors", path, depth=1):
                gift = weight * score[path]
                if gift > score.get(row["path"], float("-inf")):
                    score[row["path"]] = gift
    return sorted(score, key=lambda p: -score[p])[:EVAL_DEPTH]


def measure(app, questions, weights=WEIGHTS) -> dict[float, dict]:
    results = {w: [] for w in weights}
    for q in questions:
        hits = app.search(q.query, "hybrid", EVAL_DEPTH, per_note=False).hits  # chunks, as the eval scores
        for w in weights:
            results[w].append(score_ranking([f in q.files for f in expanded_files(app.store, hits, w)]))
    return {w: _mean(rows) for w, rows in results.items()}


def main(argv: list[str] | None = None) -> int:
    root = Path.cwd()
    vault = (root / "example-vault").resolve()
    questions = load_golden(root / "eval" / "golden.jsonl", root)
    app = eval_app(vault)
    try:
        app.index([str(vault)])
        table = measure(app, questions)
    finally:
        app.close()
    print(f"{'weight':>8}" + "".join(f"{'file ' + m:>16}" for m in METRICS))
    for weight, row in table.items():
        print(f"{weight:>8}" + "".join(f"{row[m]:>16.3f}" for m in METRICS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
