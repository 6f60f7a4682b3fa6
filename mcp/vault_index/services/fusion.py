"""Pure ranking functions (lists in, lists out) and their named constants.

Every fusion constant here was checked leave-one-corpus-out on the eval suite (`vault-index eval
--suite eval/suite.json`: the example vault, LoCoMo, the Rust book): picked on the other corpora,
scored on the held-out one. docs/adr/0005-fusion-across-corpora.md has the table (0002 has the
first sweep, on the example vault alone). Change one only with a before/after suite run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vault_index.types import Candidate

# Bump when the formula changes, so results and baselines say which ranking produced them.
FUSION_VERSION = "cosine+idf-coverage+note+bm25-3"
CANDIDATES_PER_SIDE = 50  # how deep each side is read before fusion
RERANK_TOP = 10  # how many fused hits the cross-encoder reorders
# Fused score = cosine similarity + COVERAGE_WEIGHT * coverage ** COVERAGE_POWER, where coverage
# is the IDF-weighted share of the query's matched terms that the chunk contains. A paraphrase
# matches only common words scattered over many chunks: coverage stays low everywhere and the
# cosine order stands. A question full of names, dates and ids has a chunk that holds all its
# rare terms: coverage near 1 lifts it above chunks that merely sound alike. The power keeps
# partial matches small. Chosen by a sweep on the eval (docs/adr/0002-fusion.md); weighted RRF,
# whatever its keyword weight, lost either the paraphrases or the names there: do not go back to
# it without a before/after eval run.
COVERAGE_WEIGHT = 0.25
COVERAGE_POWER = 3
# Plus NOTE_WEIGHT * cosine(query, centroid of the chunk's note). A question that describes a
# note's subject without its words matches the note as a whole better than any one chunk of it;
# on the eval this lifted hard paraphrases (0.849 -> 0.883 file NDCG@5) and left the other kinds
# unchanged. At 0.3 and above it started to pull short lookups towards big notes.
NOTE_WEIGHT = 0.2
# Plus KEYWORD_SCORE_WEIGHT * (bm25 / best bm25 of the query) ** KEYWORD_SCORE_POWER for chunks the
# keyword side returned. Trigger: on LoCoMo (long chats, questions full of names and rare words)
# the cosine-first fusion lost to plain BM25 (file NDCG@5 0.775 vs 0.811), and on the Rust book
# it barely beat it. Why: coverage only says which query terms a chunk holds, not how often or in
# how short a text; bm25 does, and normalised by the query's best it is on the cosine's scale
# whatever the corpus. The power keeps all but the top keyword hits small, so a paraphrase whose
# keyword list is noise keeps the cosine order; a linear term (power 1) lifted the answer's sibling
# chunks and cost the example vault 0.04 chunk NDCG@5. Outcome: hybrid beats the better single
# mode by 0.025+ on all three corpora. Chosen on all three (the best worst-corpus margin that
# costs no corpus 0.01 at file or chunk level); leave-one-corpus-out, the held-out margins were
# +0.016 to +0.026 (ADR 0005). Do not raise the weight for one corpus without the suite.
KEYWORD_SCORE_WEIGHT = 0.2
KEYWORD_SCORE_POWER = 3
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
) -> list[tuple[int, float]]:
    """Fuse the two candidate lists, best first.

    cosine + weight * coverage ** power + note_weight * note cosine
    + keyword_weight * (bm25 / best bm25) ** keyword_power.
    A chunk only the keyword side found gets the lowest cosine the vector side returned.
    """
    note_similarity = note_similarity or {}
    strength = keyword_strength(keyword)
    cosines = {c.chunk_id: c.score for c in vector}
    floor = min(cosines.values()) if cosines else 0.0
    ids = list(cosines) + [c.chunk_id for c in keyword if c.chunk_id not in cosines]
    scored = {
        cid: cosines.get(cid, floor)
        + weight * coverages.get(cid, 0.0) ** power
        + note_weight * note_similarity.get(cid, 0.0)
        + keyword_weight * strength.get(cid, 0.0) ** keyword_power
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
