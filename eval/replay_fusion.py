"""Replay fusion variants on candidate dumps (eval/dump_candidates.py) and pick constants by LOCO.

Leave-one-corpus-out: for each corpus, every variant's constants are chosen on the OTHER corpora
(best mean, over those corpora, of hybrid file NDCG@5 minus the better single mode's), then the
choice is scored on the held-out corpus. Nothing here is used at search time; the chosen formula
lives in vault_index.services.fusion and is re-checked with `vault-index eval --suite`.

Usage: PYTHONPATH=mcp python eval/replay_fusion.py DUMP_DIR
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sys
from pathlib import Path

from vault_index.services.search import fusion
from vault_index.tooling.evaluation import heading_matches
from vault_index.tooling.loco import choose_on, leave_one_corpus_out


def load(dump_dir: Path) -> dict[str, list[dict]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(dump_dir.glob("*.json"))}


def ndcg_first(flags: list[bool]) -> float:
    for i, f in enumerate(flags[:5]):
        if f:
            return 1 / math.log2(i + 2)
    return 0.0


def rank_of_first(flags: list[bool]) -> int | None:
    return next((i for i, f in enumerate(flags) if f), None)


def file_flags(order: list[dict], q: dict) -> list[bool]:
    files = {a[0] for a in q["answers"]}
    seen = list(dict.fromkeys(c["path"] for c in order))
    return [f in files for f in seen]


def chunk_flags(order: list[dict], q: dict) -> list[bool]:
    out, seen = [], False
    for c in order:
        ok = any(c["path"] == f and heading_matches(c["heading"], h) for f, h in q["answers"])
        out.append(ok and not seen)
        seen = seen or ok
    return out


# --- orders -------------------------------------------------------------------------------------

def keyword_order(q):
    return sorted((c for c in q["cands"] if c["kw_rank"]), key=lambda c: c["kw_rank"])


def vector_order(q):
    return sorted((c for c in q["cands"] if c["vec"]), key=lambda c: -c["cos"])


_MONTHS = ("january february march april may june july august september october november december").split()
_DATE = re.compile(r"\b(" + "|".join(_MONTHS) + r"|(?:19|20)\d\d)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<=\w )([A-Z][a-z]+)")


def query_dates(query: str) -> set[str]:
    """Month names and years in the question (lowercase)."""
    return {m.lower() for m in _DATE.findall(query)}


def has_name(query: str) -> bool:
    """A capitalised word that does not start the question."""
    return bool(_NAME.search(query))


VEC_PIVOT = 0.5


def rarity(q: dict) -> float:
    """The query's rarest matched term's IDF over the largest IDF possible in the index, in [0, 1]."""
    idfs = [fusion.idf(df, q["total"]) for df in q["df"] if df > 0]
    top = math.log(q["total"] + 1) if q["total"] else 0.0
    return max(idfs) / top if idfs and top else 0.0


def fused_order(q, p: dict):
    """The parametrised family of fusions; p holds the constants of one variant."""
    cands = q["cands"]
    vec = [c for c in cands if c["vec"]]
    floor = min(c["cos"] for c in vec) if vec else 0.0
    bm = [c["bm25"] for c in cands if c["bm25"] is not None]
    top_bm = max(bm) if bm else 1.0
    # query-dependent keyword weight: share of the query's IDF mass in rare terms
    weight = p["w"]
    if p.get("rare_boost"):
        idfs = [fusion.idf(df, q["total"]) for df in q["df"] if df > 0]
        maxidf = math.log(q["total"] + 1) if q["total"] else 1.0
        rare = max(idfs) / maxidf if idfs else 0.0
        weight = p["w"] * (1 + p["rare_boost"] * (rare - 0.5))
    kw_top = sorted((c for c in cands if c["kw_rank"]), key=lambda c: c["kw_rank"])[:5]
    kw_confidence = max((c["cov"] for c in kw_top), default=0.0)
    top_cos = max((c["cos"] for c in vec), default=0.0)
    date_terms = query_dates(q["query"]) if p.get("date") else set()
    if p.get("names") and has_name(q["query"]):
        weight *= 1 + p["names"]
    # the keyword confidence of fusion.keyword_confidence: scale x coverage of the best keyword hit
    # ... times the query's matched share (fusion.matched_share) when p["u"] is set
    share = fusion.matched_share(q["df"], q["total"], p["u"]) if p.get("u") else 1.0
    trust = 1.0 if p.get("conf") is None else min(1.0, p["conf"] * (kw_top[0]["cov"] if kw_top else 0.0) * share)
    scores = {}
    for c in cands:
        cos = c["cos"] if (c["vec"] or p.get("real_cos")) and c["cos"] is not None else floor
        s = cos + p["note"] * c["note"]
        keyword_part = weight * c["cov"] ** p["pow"]
        if p.get("bm") and c["bm25"] is not None and top_bm > 0:
            term = p["bm"] * (c["bm25"] / top_bm) ** p.get("bm_pow", 1)
            if p.get("bm_cov"):
                term *= c["cov"] ** p["bm_cov"]
            if p.get("bm_gate"):
                term *= kw_confidence ** p["bm_gate"]
            if p.get("bm_vec"):
                term *= (1 + p["bm_vec"] * (VEC_PIVOT - top_cos))
            if p.get("bm_rare"):
                term *= rarity(q) ** p["bm_rare"]
            keyword_part += term
        s += trust * keyword_part
        if p.get("rrf"):
            if c["kw_rank"]:
                s += p["rrf"] / (p.get("rrf_k", 60) + c["kw_rank"]) * 60
        if date_terms:
            place = f"{c['path']} {c['title']} {c['heading']}".lower()
            if all(t in place for t in date_terms):
                s += p["date"]
        if p.get("note_max") and c["note_max"] is not None:
            s += p["note_max"] * c["note_max"]
        scores[c["id"]] = s
    order = sorted(cands, key=lambda c: (-scores[c["id"]], c["id"]))
    if p.get("file_agg"):
        # a note-level score: each file's best chunk plus a share of its second best
        per_file: dict[str, list[float]] = {}
        for c in order:
            per_file.setdefault(c["path"], []).append(scores[c["id"]])
        fscore = {f: v[0] + p["file_agg"] * (sum(v[1:3]) / 2 if len(v) > 1 else 0.0) for f, v in per_file.items()}
        order = sorted(order, key=lambda c: (-fscore[c["path"]], -scores[c["id"]]))
    return order


def score(data: list[dict], order_fn) -> dict:
    out = {"file": [], "chunk": [], "r5": [], "mrr": [], "kinds": {}}
    for q in data:
        order = order_fn(q)
        ff = file_flags(order, q)
        f = ndcg_first(ff)
        out["file"].append(f)
        out["chunk"].append(ndcg_first(chunk_flags(order, q)))
        r = rank_of_first(ff)
        out["r5"].append(1.0 if r is not None and r < 5 else 0.0)
        out["mrr"].append(1 / (r + 1) if r is not None else 0.0)
        out["kinds"].setdefault(q["kind"], []).append(f)
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    return {"file": mean(out["file"]), "chunk": mean(out["chunk"]), "r5": mean(out["r5"]),
            "mrr": mean(out["mrr"]), "kinds": {k: (mean(v), len(v)) for k, v in out["kinds"].items()}}


CURRENT = {"w": fusion.COVERAGE_WEIGHT, "pow": fusion.COVERAGE_POWER, "note": fusion.NOTE_WEIGHT}


def grid(space: dict) -> list[dict]:
    keys = list(space)
    return [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*(space[k] for k in keys))]


LEVELS = ("file",)  # the levels whose margins the choice averages; main() may add "chunk"


def margin(res: dict, base: dict, levels: tuple[str, ...] | None = None) -> float:
    """Hybrid NDCG@5 minus the better single mode's (the must-show criterion at file level),
    averaged over `levels`."""
    levels = levels or LEVELS
    return sum(res[lv] - max(base["keyword"][lv], base["vector"][lv]) for lv in levels) / len(levels)


def file_margin(res: dict, base: dict) -> float:
    return margin(res, base, ("file",))


def variant_table(datasets: dict, variants: list[dict]) -> dict[str, list[dict]]:
    return {name: [score(data, lambda q, p=p: fused_order(q, p)) for p in variants] for name, data in datasets.items()}


def loco_axis(datasets: dict, bases: dict, fixed: dict, name: str, values: list, criterion: str = "mean"):
    """One constant or rule varied with the others fixed: per held-out corpus, the value chosen on
    the other corpora and the held-out score; plus the value chosen on all corpora."""
    variants = [{**fixed, name: v} for v in values]
    table = variant_table(datasets, variants)
    margins = {n: [margin(r, bases[n]) for r in rows] for n, rows in table.items()}
    held = {n: (values[i], table[n][i]) for n, i in leave_one_corpus_out(margins, criterion).items()}
    return held, values[choose_on(margins, list(datasets), criterion)], table


def fmt(r: dict, base: dict) -> str:
    return f"{r['file']:.3f} ({file_margin(r, base):+.3f})"


def chain(datasets: dict, bases: dict, train: list[str], criterion: str, start: dict) -> dict:
    """The greedy pass over AXES then RULES from `start`, each value chosen on `train` only."""
    current = dict(start)
    for name, values in AXES + RULES:
        variants = [{**current, name: v} for v in values]
        table = variant_table({n: datasets[n] for n in train}, variants)
        margins = {n: [margin(r, bases[n]) for r in rows] for n, rows in table.items()}
        current[name] = values[choose_on(margins, train, criterion)]
    return current


# The family, listed simplest first (earliest wins ties): the keyword-score term first, then the
# constants of ADR 0002 with their old value first, then the rules, off first.
# The constants of ADR 0002 (before the keyword-score term and the confidence gate): where the
# one-at-a-time chain below starts. fusion.py ships SHIPPED (ADR 0005, dated sections).
START = {"w": 0.25, "pow": 3, "note": 0.2, "bm": 0.0, "bm_pow": 1}
SHIPPED = {"w": fusion.COVERAGE_WEIGHT, "pow": fusion.COVERAGE_POWER, "note": fusion.NOTE_WEIGHT,
           "bm": fusion.KEYWORD_SCORE_WEIGHT, "bm_pow": fusion.KEYWORD_SCORE_POWER, "conf": fusion.CONFIDENCE_SCALE,
           "u": fusion.UNMATCHED_TERM_WEIGHT}
# The keyword-score term (weight, power) is new: it is chosen jointly, off first.
KEYWORD_TERM = [(0.0, 1)] + [(b, p) for p in (1, 2, 3) for b in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4)]
HARM = 0.01  # the shipped choice may cost no corpus more than this, at file or chunk level
AXES = [
    ("w", [0.25, 0.0, 0.1, 0.4]),
    ("pow", [3, 1, 2]),
    ("note", [0.2, 0.0, 0.1, 0.3]),
]
RULES = [
    ("date", [0.0, 0.05, 0.1, 0.2]),  # bonus when the question's months/years are in the note's title/heading/path
    ("names", [0.0, 0.5, 1.0]),  # coverage weight x (1 + v) when the question has a capitalised name
    ("rare_boost", [0.0, 1.0, -1.0]),  # coverage weight by the share of rare terms
    ("bm_rare", [0.0, 1.0, 2.0]),  # keyword-score term x rarity of the query's rarest term
    ("bm_gate", [0.0, 1.0, 2.0]),  # keyword-score term x coverage of the best top-5 keyword hit
    ("bm_cov", [0.0, 1.0, 2.0]),  # keyword-score term x the chunk's own coverage
    ("file_agg", [0.0, 0.2]),  # note-level score: best chunk + share of the next two
    ("note_max", [0.0, 0.2]),  # plus the best cosine of any chunk of the note
    ("real_cos", [False, True]),  # keyword-only chunks get their real cosine, not the list's floor
]


def main() -> int:
    datasets = load(Path(sys.argv[1]))
    criterion = sys.argv[2] if len(sys.argv) > 2 else "mean"
    global LEVELS
    LEVELS = tuple(sys.argv[3].split("+")) if len(sys.argv) > 3 else ("file",)
    bases = {n: {"keyword": score(d, keyword_order), "vector": score(d, vector_order)} for n, d in datasets.items()}
    for n, b in bases.items():
        print(n, {m: (round(r["file"], 3), round(r["chunk"], 3)) for m, r in b.items()})
    print("criterion:", criterion, "of the margins at", "+".join(LEVELS))
    names = list(datasets)
    variants = [{**START, "bm": b, "bm_pow": p} for b, p in KEYWORD_TERM]
    table = variant_table(datasets, variants)
    margins = {n: [margin(r, bases[n]) for r in rows] for n, rows in table.items()}
    print("\nkeyword-score term (weight, power), held-out corpus: value chosen on the others -> held-out score")
    for held, i in leave_one_corpus_out(margins, criterion).items():
        r = table[held][i]
        print(f"  {held}: {KEYWORD_TERM[i]} -> file {fmt(r, bases[held])} chunk {r['chunk']:.3f}")
    # Shipped: the best worst-corpus file margin among variants that cost no corpus more than HARM
    # against the fusion before it (variant 0), at file or at chunk level.
    safe = [i for i in range(len(variants)) if all(
        table[n][i][lv] >= table[n][0][lv] - HARM for n in names for lv in ("file", "chunk"))]
    pick = max(safe, key=lambda i: (min(file_margin(table[n][i], bases[n]) for n in names), -i))
    print(f"  shipped (all corpora, no corpus {HARM} worse than before at either level): {KEYWORD_TERM[pick]}")
    print("| weight, power | " + " | ".join(names) + " |")
    for i, v in enumerate(KEYWORD_TERM):
        cells = [f"{fmt(table[n][i], bases[n])} c {table[n][i]['chunk']:.3f}" for n in names]
        print(f"| {v} | " + " | ".join(cells) + " |")
    current = {**START, "bm": KEYWORD_TERM[pick][0], "bm_pow": KEYWORD_TERM[pick][1]}
    print("\n| constant or rule (values tried) | " + " | ".join(f"{n} held out" for n in names) + " | chosen on all |")
    print("| --- " * (len(names) + 2) + "|")
    for name, values in AXES + RULES:
        held, chosen, _ = loco_axis(datasets, bases, current, name, values, criterion)
        cells = [f"{held[n][0]} -> {fmt(held[n][1], bases[n])}" for n in names]
        print(f"| {name} {values} | " + " | ".join(cells) + f" | {chosen} |", flush=True)
        current[name] = chosen
    print("\nper-fold chains (every constant and rule chosen on the other corpora only):")
    for held in names:
        params = chain(datasets, bases, [n for n in names if n != held], criterion, current)
        r = variant_table({held: datasets[held]}, [params])[held][0]
        print(f"  {held} held out: {params} -> file {fmt(r, bases[held])} chunk {r['chunk']:.3f}", flush=True)
    final = variant_table(datasets, [current])
    print("\nfinal (chain on all corpora)", current)
    for n in names:
        r = final[n][0]
        print(f"  {n}: file {fmt(r, bases[n])} chunk {r['chunk']:.3f} R@5 {r['r5']:.3f} MRR {r['mrr']:.3f} "
              + " ".join(f"{k} {v[0]:.3f}/{bases[n]['keyword']['kinds'][k][0]:.3f}/"
                         f"{bases[n]['vector']['kinds'][k][0]:.3f} ({v[1]})" for k, v in sorted(r["kinds"].items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
