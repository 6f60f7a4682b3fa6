"""Pure ranking functions (lists in, lists out) and their named constants.

Every constant here was chosen on the eval (`vault-index eval`); docs/adr/0002-fusion.md has the
sweep. Change one only with a before/after eval run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vault_index.types import Candidate

# Bump when the formula changes, so results and baselines say which ranking produced them.
FUSION_VERSION = "rrf-adaptive-1"
RRF_K = 60  # the usual reciprocal-rank-fusion constant; flat enough that rank 1 does not dominate
CANDIDATES_PER_SIDE = 50  # how deep each side is read before fusion
RERANK_TOP = 10  # how many fused hits the cross-encoder reorders
# Keyword weight bounds. A query whose words are ordinary in the vault (a paraphrase) fuses at
# KEYWORD_WEIGHT_MIN, where keywords only break ties; a query made of rare words (names, dates,
# ticket ids) moves towards KEYWORD_WEIGHT_MAX, where the exact match leads. No single fixed weight
# served both kinds of question on the eval.
KEYWORD_WEIGHT_MIN = 0.1
KEYWORD_WEIGHT_MAX = 1.5
# A term is rare when at most this share of chunks contain it (and never fewer than RARE_DF_MIN).
RARE_DF_SHARE = 0.01
RARE_DF_MIN = 3
VECTOR_WEIGHT = 1.0
DEPRECATED_PENALTY = 0.5  # deprecated notes stay findable but rank below live ones


def rare_df_limit(total_chunks: int) -> int:
    return max(RARE_DF_MIN, int(total_chunks * RARE_DF_SHARE))


def keyword_weight(term_doc_counts: Sequence[int], total_chunks: int) -> float:
    """The keyword side's fusion weight for one query, from how rare its matched terms are.

    Terms that match nothing carry no evidence either way and are left out.
    """
    matched = [df for df in term_doc_counts if df > 0]
    if not matched:
        return KEYWORD_WEIGHT_MIN
    limit = rare_df_limit(total_chunks)
    rare_share = sum(1 for df in matched if df <= limit) / len(matched)
    return KEYWORD_WEIGHT_MIN + (KEYWORD_WEIGHT_MAX - KEYWORD_WEIGHT_MIN) * rare_share


def ranked(pairs: Sequence[tuple[int, float]]) -> list[Candidate]:
    """(id, score) pairs already in best-first order -> candidates with 1-based ranks."""
    return [Candidate(cid, rank, score) for rank, (cid, score) in enumerate(pairs, start=1)]


def reciprocal_rank_fusion(
    sides: Sequence[tuple[Sequence[Candidate], float]], k: int = RRF_K
) -> list[tuple[int, float]]:
    """Weighted RRF: sum of weight / (k + rank) over the sides that found each id, best first."""
    scores: dict[int, float] = {}
    for candidates, weight in sides:
        for candidate in candidates:
            scores[candidate.chunk_id] = scores.get(candidate.chunk_id, 0.0) + weight / (k + candidate.rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


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
    """Apply the deprecated penalty and re-sort (stable for equal scores)."""
    adjusted = [
        (cid, score * DEPRECATED_PENALTY if statuses.get(cid) == "deprecated" else score)
        for cid, score in scored
    ]
    return sorted(adjusted, key=lambda item: -item[1])
