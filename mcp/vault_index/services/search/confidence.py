"""The confidence of a search answer: the probability that its first hit is relevant.

A logistic model per kind of run (hybrid, keyword only, vector only) over signals the pipeline
already has for the first hit: its cosine and its note's, its IDF coverage of the query, the
keyword side's confidence, the query's matched share, its rank on each side, and its lead over
the next note. Raw scores are not comparable across vaults or queries; this is, because it was
fitted on questions searched in their own corpus (labelled by whether the first file answers)
and in other corpora (wrong-vault pairs: never relevant), leave-one-corpus-out
(eval/fit_confidence.py writes `confidence.json` beside this module; docs/adr/0033).

`THRESHOLD` (in the same file) is what a surface needs to say more than "nothing relevant": the
prompt hook injects only above it, search_notes and recall say "nothing relevant" below it.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

WEIGHTS_FILE = Path(__file__).with_name("confidence.json")
# The signals of each model, in the order its weights are stored. Fewer, simpler signals: each is
# a number the pipeline computed anyway, bounded in [0, 1] or near it.
FEATURES = {
    "hybrid": ("cos1", "note1", "cov1", "kwconf", "share", "rrk", "rrv", "margin"),
    "keyword": ("cov1", "share", "kwconf", "ratio2"),
    "vector": ("cos1", "note1", "margin"),
}


@lru_cache(maxsize=1)
def _models() -> dict:
    try:
        return json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def threshold(kind: str | None = "hybrid") -> float:
    """The confidence above which the first hit of a `kind` run is treated as relevant, chosen
    with the weights by the same rule for each kind (eval/fit_confidence.py)."""
    models = _models()
    return float(models.get("thresholds", {}).get(kind or "", models.get("threshold", 0.5)))


def kind_of(mode_run: str) -> str | None:
    """Which model scores a run: 'hybrid' (and hybrid+rerank), 'keyword', 'vector'; None for grep."""
    if mode_run.startswith("hybrid"):
        return "hybrid"
    return mode_run if mode_run in ("keyword", "vector") else None


def score(kind: str | None, signals: dict[str, float]) -> float | None:
    """P(first hit relevant) under the fitted model of `kind`; None without a model or signals."""
    model = _models().get("models", {}).get(kind or "")
    if not model or not signals or model.get("features") != list(FEATURES[kind]):
        return None  # no model, or one fitted on other signals than these
    z = model["bias"] + sum(w * float(signals.get(name, 0.0)) for name, w in zip(FEATURES[kind], model["weights"],
                                                                                strict=True))
    return round(1 / (1 + math.exp(-max(-40.0, min(40.0, z)))), 4)


def signals(kind: str | None, top: int, second: int | None, trace) -> dict[str, float]:
    """The signals of the first hit `top` (chunk id), `second` the best chunk of another note, from
    the question's own run (`trace`, services/search/search._Trace)."""
    if kind is None:
        return {}
    k, v = trace.keyword.get(top), trace.vector.get(top)
    floor = min((c.score for c in trace.vector.values()), default=0.0)
    fused = trace.fused
    out: dict[str, float] = {}
    if kind in ("hybrid", "vector"):
        out["cos1"] = v.score if v else floor
        out["note1"] = trace.note.get(top, 0.0)
        if kind == "vector":
            scores = {cid: c.score for cid, c in trace.vector.items()}
        else:
            scores = fused
        out["margin"] = max(0.0, scores.get(top, 0.0) - scores.get(second, floor)) if second is not None \
            else scores.get(top, 0.0) - floor
    if kind in ("hybrid", "keyword"):
        out["cov1"] = trace.coverage.get(top, 0.0)
        out["share"] = trace.share
        out["kwconf"] = trace.confidence
    if kind == "hybrid":
        out["rrk"] = 1.0 / k.rank if k else 0.0
        out["rrv"] = 1.0 / v.rank if v else 0.0
    if kind == "keyword":
        best = k.score if k else 0.0
        other = trace.keyword.get(second) if second is not None else None
        out["ratio2"] = (other.score / best) if other and best > 0 else 0.0
    return {name: round(value, 6) for name, value in out.items()}


def first_two_notes(order: list[tuple[int, float]], rows: dict) -> tuple[int | None, int | None]:
    """The first chunk of `order` and the first chunk of another note after it (None when absent)."""
    top = second = None
    for cid, _ in order:
        if cid not in rows:
            continue
        if top is None:
            top = cid
        elif rows[cid].path != rows[top].path:
            second = cid
            break
    return top, second
