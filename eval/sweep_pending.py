"""How good is hybrid search while part of an index waits for vectors? (ADR 0038)

For each corpus of the suite (lockbox corpora skipped): index it with vectors, then for each share
p of chunks, drop the vectors of a random p of them (a copy of the index, seeded) and score the
golden questions in hybrid (the holes fused as they are) and keyword-only. The keyword row does not
depend on p. `index_state.KEYWORD_ONLY_SHARE` is set from this: above it, keyword-only scores better.

    VAULT_EMBED_MODEL=shipped:minilm .venv/bin/python eval/sweep_pending.py [--corpora a,b] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "mcp"))

from vault_index.services import index_state  # noqa: E402
from vault_index.tooling import suite  # noqa: E402
from vault_index.tooling.evaluation import eval_app, evaluate, load_golden  # noqa: E402

SHARES = (0.0, 0.05, 0.1, 0.2, 0.4, 0.7, 0.95)


def _holed(db: Path, share: float, seed: int, out: Path) -> Path:
    """A copy of the index at `db` with the vectors of a random `share` of its chunks dropped."""
    shutil.copy(db, out)
    with sqlite3.connect(out) as conn:
        model = conn.execute("SELECT value FROM meta WHERE key = 'embed_model'").fetchone()[0]
        hashes = sorted(h for (h,) in conn.execute("SELECT DISTINCT hash FROM chunks"))
        dropped = random.Random(seed).sample(hashes, round(share * len(hashes)))
        conn.executemany("DELETE FROM embeddings WHERE hash = ? AND model = ?", ((h, model) for h in dropped))
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", help="comma-separated names (default: every non-lockbox corpus)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    index_state.KEYWORD_ONLY_SHARE = 1.0  # measure hybrid with its holes, never the fallback
    wanted = set(args.corpora.split(",")) if args.corpora else None
    work = Path(tempfile.mkdtemp(prefix="sweep-pending-"))
    print(f"{'corpus':20} {'p':>5} {'hybrid ndcg@5':>14} {'hybrid hit@1':>13} {'keyword ndcg@5':>15} "
          f"{'keyword hit@1':>14}")
    for corpus in suite.load_suite(ROOT / "eval" / "suite.json"):
        if corpus.lockbox or (wanted and corpus.name not in wanted):
            continue
        prepared = suite.prepare(corpus, ROOT, fast=True, cache=work)
        if isinstance(prepared, str):
            print(f"{corpus.name}: skipped ({prepared})")
            continue
        vault, golden, root = prepared
        questions = load_golden(golden, root)
        db = work / f"{corpus.name}.db"
        app = eval_app(vault, db)
        app.index([str(vault)])
        keyword = evaluate(app, questions, ["keyword"])["overall"]["keyword"]["file"]
        app.close()
        for share in SHARES:
            holed = eval_app(vault, _holed(db, share, args.seed, work / f"{corpus.name}-{share}.db"))
            hybrid = evaluate(holed, questions, ["hybrid"])["overall"]["hybrid"]["file"]
            holed.close()
            print(f"{corpus.name:20} {share:5.2f} {hybrid['ndcg@5']:14.3f} {hybrid['hit@1']:13.3f} "
                  f"{keyword['ndcg@5']:15.3f} {keyword['hit@1']:14.3f}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
