"""Pure ranking functions (lists in, lists out) and their named constants.

Every fusion constant here was chosen on the eval suite (`vault-index eval --suite
eval/suite.json`: five corpora) and checked leave-one-corpus-out: picked on the other corpora,
scored on the held-out one. docs/adr/0005-fusion-across-corpora.md has the tables (0002
has the first sweep, on the example vault alone). Change one only with a before/after suite run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vault_index.types import Candidate

# Bump when the formula changes, so results and baselines say which ranking produced them.
FUSION_VERSION = "cosine+note+confidence*matched*(idf-coverage+bm25)"
CANDIDATES_PER_SIDE = 50  # how deep each side is read before fusion
RERANK_TOP = 10  # how many fused hits the cross-encoder reorders
# Fused score = cosine + NOTE_WEIGHT * note cosine
#               + confidence * (COVERAGE_WEIGHT * coverage ** COVERAGE_POWER
#                               + KEYWORD_SCORE_WEIGHT * (bm25 / best bm25) ** KEYWORD_SCORE_POWER)
# confidence = min(1, CONFIDENCE_SCALE * coverage of the best keyword hit * matched share)
# Every constant below was chosen on the five corpora of eval/suite.json (the example vault,
# LoCoMo, the Rust book, the Open Source Guides, Artsy's handbook) and checked leave-one-corpus-out:
# picked on four, scored on the fifth (docs/adr/0005-fusion-across-corpora.md has the tables and
# what was tried and dropped). Change one only with a before/after suite run.
#
# coverage: the IDF-weighted share of the query's matched terms that the chunk contains. A
# question full of names, dates and ids has a chunk that holds all its rare terms: coverage near
# 1 lifts it above chunks that merely sound alike; the power keeps partial matches small.
COVERAGE_WEIGHT = 0.4
COVERAGE_POWER = 3
# note cosine: cosine(query, centroid of the chunk's note). A question that describes a note's
# subject without its words matches the note as a whole better than any one chunk of it.
NOTE_WEIGHT = 0.3
# bm25 / best bm25 of the query, for chunks the keyword side returned: coverage says which query
# terms a chunk holds, bm25 also how often and in how short a text; relative to the query's best it
# is on the cosine's scale whatever the corpus.
KEYWORD_SCORE_WEIGHT = 0.3
KEYWORD_SCORE_POWER = 1
# confidence = min(1, CONFIDENCE_SCALE * coverage of the keyword side's best hit), per query.
# Trigger: on two handbooks (the Open Source Guides, Artsy's), the hybrid lost to plain vectors
# (-0.034 and -0.007 file NDCG@5) while on LoCoMo it needed the keyword terms (plain vectors
# 0.58, BM25 0.81). Why: a paraphrase shares only common words with its answer, and then the best
# keyword hit holds a small share of the question's weight; the keyword terms still gave that hit
# and its neighbours their full bonus. A question whose best keyword hit holds most of its rare
# terms (a name, an id, a date) keeps the full bonus. Outcome (file NDCG@5 over the better single
# mode, replayed in-sample): before -0.007 / +0.028 / +0.023 / -0.034 / +0.026, after +0.025 /
# +0.020 / +0.020 / +0.021 / +0.021 (Artsy, example vault, LoCoMo, Open Source Guides, Rust book);
# held out +0.025 / +0.015 / +0.020 / +0.004 / +0.021 (ADR 0005).
CONFIDENCE_SCALE = 1.5
# matched share = W_matched / (W_matched + UNMATCHED_TERM_WEIGHT * W_unmatched): the query's IDF mass
# on terms the index holds, against the mass of terms it holds nowhere, each of those weighing
# UNMATCHED_TERM_WEIGHT x the largest IDF there is (a term in one chunk).
# Trigger: coverage weighs a term that matches nothing as 0, so a paraphrase whose distinctive words
# are not the vault's ("website's ... became unreachable") kept its full keyword bonus on the few
# common words it did share, and a note that merely shared them outranked the vector side's answer.
# Why: words the vault never uses say the question is not in the vault's vocabulary, which is when
# the vector side is the one to trust. Outcome (file NDCG@5 over the better single mode, replayed;
# ADR 0005, fourth dated section): picked by leave-one-corpus-out on the value alone, mean criterion,
# 1.5 in every fold; held out +0.0265 / +0.0235 / +0.0373 / +0.0214 / +0.0375 (example vault,
# LoCoMo, Rust book, Open Source Guides, Artsy) against +0.0197 / +0.0215 / +0.0209 / +0.0214 /
# +0.0248 without it; chunk NDCG@5 up on four corpora.
UNMATCHED_TERM_WEIGHT = 1.5
DEPRECATED_PENALTY = 0.5  # deprecated notes stay findable but rank below live ones


def idf(doc_count: int, total_chunks: int) -> float:
    return math.log((total_chunks + 1) / doc_count) if doc_count > 0 else 0.0


def coverage(present: Sequence[bool], weights: Sequence[float]) -> float:
    """IDF-weighted share of query terms present in a chunk; terms matching nothing weigh 0."""
    total = sum(weights)
    return sum(w for p, w in zip(present, weights, strict=True) if p) / total if total else 0.0


def keyword_strength(keyword: Sequence[Candidate]) -> dict[int, float]:
    """Each keyword hit's bm25 over the best bm25 of the list: 1.0 for the top hit, in [0, 1]."""
    best = max((c.score for c in keyword), default=0.0)
    if best <= 0:
        return {}
    return {c.chunk_id: max(0.0, c.score) / best for c in keyword}


def matched_share(doc_counts: Sequence[int], total_chunks: int,
                  unmatched_weight: float = UNMATCHED_TERM_WEIGHT) -> float:
    """The query's IDF mass on terms found in the index, over that plus `unmatched_weight` x the
    largest possible IDF for each term found nowhere (doc count 0), in [0, 1]; 1 when every term
    matches, 0 when none does."""
    matched = sum(idf(df, total_chunks) for df in doc_counts if df > 0)
    unmatched = unmatched_weight * idf(1, total_chunks) * sum(1 for df in doc_counts if df <= 0)
    return matched / (matched + unmatched) if matched + unmatched > 0 else 0.0


def keyword_confidence(keyword: Sequence[Candidate], coverages: dict[int, float],
                       scale: float = CONFIDENCE_SCALE, share: float = 1.0) -> float:
    """How far the keyword side can be trusted for this query, in [0, 1]: scale x the coverage of
    its best hit (the first of `keyword`) x the query's `matched_share`, capped at 1; 0 with no
    keyword hits."""
    if not keyword:
        return 0.0
    return min(1.0, scale * coverages.get(keyword[0].chunk_id, 0.0) * share)


def coverage_fusion(
    vector: Sequence[Candidate],
    keyword: Sequence[Candidate],
    coverages: dict[int, float],
    note_similarity: dict[int, float] | None = None,
    weight: float = COVERAGE_WEIGHT,
    power: int = COVERAGE_POWER,
    note_weight: float = NOTE_WEIGHT,
    keyword_weight: float = KEYWORD_SCORE_WEIGHT,
    keyword_power: float = KEYWORD_SCORE_POWER,
    confidence_scale: float | None = CONFIDENCE_SCALE,
    share: float = 1.0,
) -> list[tuple[int, float]]:
    """Fuse the two candidate lists, best first.

    cosine + note_weight * note cosine
    + confidence * (weight * coverage ** power + keyword_weight * (bm25 / best bm25) ** keyword_power),
    confidence = keyword_confidence(keyword, coverages, confidence_scale, share), or 1 when the scale is
    None; `share` is the query's matched_share (1: every query term is in the index).
    A chunk only the keyword side found gets the lowest cosine the vector side returned.
    """
    note_similarity = note_similarity or {}
    strength = keyword_strength(keyword)
    trust = 1.0 if confidence_scale is None else keyword_confidence(keyword, coverages, confidence_scale, share)
    cosines = {c.chunk_id: c.score for c in vector}
    floor = min(cosines.values()) if cosines else 0.0
    ids = list(cosines) + [c.chunk_id for c in keyword if c.chunk_id not in cosines]
    scored = {
        cid: cosines.get(cid, floor)
        + note_weight * note_similarity.get(cid, 0.0)
        + trust * (weight * coverages.get(cid, 0.0) ** power
                   + keyword_weight * strength.get(cid, 0.0) ** keyword_power)
        for cid in ids
    }
    return sorted(scored.items(), key=lambda item: (-item[1], item[0]))


def ranked(pairs: Sequence[tuple[int, float]]) -> list[Candidate]:
    """(id, score) pairs already in best-first order -> candidates with 1-based ranks."""
    return [Candidate(cid, rank, score) for rank, (cid, score) in enumerate(pairs, start=1)]


def rerank_order(
    fused: Sequence[tuple[int, float]], rerank_scores: Sequence[float], top: int = RERANK_TOP
) -> list[tuple[int, float]]:
    """Reorder the first `top` fused ids by cross-encoder score; the tail keeps fused order.

    Scores of the head become sigmoid(logit) in (0, 1); the tail is scaled under the head's lowest
    so that scores never rise down the list.
    """
    head = [(cid, 1 / (1 + math.exp(-s))) for (cid, _), s in zip(fused[:top], rerank_scores, strict=True)]
    head.sort(key=lambda item: -item[1])
    tail = list(fused[top:])
    if head and tail:
        floor = head[-1][1]
        scale = floor / tail[0][1] * 0.99 if tail[0][1] > 0 else 0.0
        tail = [(cid, s * scale) for cid, s in tail]
    return head + tail


def demote(scored: Sequence[tuple[int, float]], statuses: dict[int, str]) -> list[tuple[int, float]]:
    """Apply the deprecated penalty and re-sort (stable for equal scores).

    The penalty always lowers a score, negative ones included (a cosine can be below zero).
    """
    adjusted = [
        (cid, score - abs(score) * (1 - DEPRECATED_PENALTY) if statuses.get(cid) == "deprecated" else score)
        for cid, score in scored
    ]
    return sorted(adjusted, key=lambda item: -item[1])
