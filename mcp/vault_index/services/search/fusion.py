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
# Each was picked leave-one-corpus-out on the five corpora of eval/suite.json; ADR 0005 has the
# tables and what was tried. Change one only with a before/after suite run.
#
# coverage: the IDF-weighted share of the query's matched terms in the chunk; near 1 for the chunk
# holding a question's rare names, dates and ids, and the power keeps partial matches small.
COVERAGE_WEIGHT = 0.4
COVERAGE_POWER = 3
# note cosine: cosine(query, centroid of the chunk's note), for a question that describes a note's
# subject without its words.
NOTE_WEIGHT = 0.3
# bm25 / the query's best bm25 (keyword hits only): how often and in how short a text, on the
# cosine's scale whatever the corpus.
KEYWORD_SCORE_WEIGHT = 0.3
KEYWORD_SCORE_POWER = 1
# Scales the keyword terms down when the best keyword hit holds little of the question (a paraphrase):
# without it both handbooks lost to plain vectors (ADR 0005, "a per-query keyword confidence").
CONFIDENCE_SCALE = 1.5
# Terms the vault holds nowhere weigh this x the largest IDF against the keyword side, which must not
# win on the few common words a paraphrase shares (ADR 0005, "words the vault never uses").
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
