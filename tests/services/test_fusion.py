"""fusion.py: pure ranking functions, checked against their formulas computed here by hand."""

from __future__ import annotations

import math
import random

import pytest
from vault_index.services.search import fusion


def test_idf_is_log_of_total_plus_one_over_doc_count_and_zero_for_unmatched_terms():
    assert fusion.idf(1, 99) == pytest.approx(math.log(100 / 1))
    assert fusion.idf(50, 99) == pytest.approx(math.log(100 / 50))
    assert fusion.idf(0, 99) == 0.0
    assert fusion.idf(1, 99) > fusion.idf(10, 99) > fusion.idf(99, 99) > 0


def test_coverage_is_the_idf_weighted_share_of_present_terms():
    weights = [3.0, 1.0, 0.0]
    assert fusion.coverage([True, False, True], weights) == pytest.approx(3.0 / 4.0)
    assert fusion.coverage([False, True, True], weights) == pytest.approx(1.0 / 4.0)
    assert fusion.coverage([True, True, False], weights) == pytest.approx(1.0)
    assert fusion.coverage([True, True], [0.0, 0.0]) == 0.0  # nothing matched anywhere: no evidence
    with pytest.raises(ValueError):
        fusion.coverage([True], [1.0, 2.0])


def test_coverage_fusion_adds_weighted_coverage_power_to_the_cosine():
    vector = fusion.ranked([(1, 0.80), (2, 0.70), (3, 0.30)])
    keyword = fusion.ranked([(4, 12.0), (2, 9.0)])  # 4: keyword-only
    coverages = {1: 0.0, 2: 0.5, 3: 1.0, 4: 0.9}
    weight, power = 0.25, 3
    fused = fusion.coverage_fusion(vector, keyword, coverages, weight=weight, power=power, keyword_weight=0.0,
                                   note_weight=0.0, confidence_scale=None)
    floor = 0.30  # the lowest cosine the vector side returned
    expected = {
        1: 0.80 + weight * 0.0**power,
        2: 0.70 + weight * 0.5**power,
        3: 0.30 + weight * 1.0**power,
        4: floor + weight * 0.9**power,
    }
    assert dict(fused).keys() == expected.keys()
    for cid, score in fused:
        assert score == pytest.approx(expected[cid], rel=1e-12)
    assert [cid for cid, _ in fused] == sorted(expected, key=lambda c: (-expected[c], c))


def test_coverage_fusion_defaults_to_the_module_constants_and_breaks_ties_by_id():
    vector = fusion.ranked([(9, 0.5), (3, 0.5)])
    keyword = fusion.ranked([(3, 2.0), (9, 2.0)])
    fused = fusion.coverage_fusion(vector, keyword, {9: 1.0, 3: 1.0}, {9: 0.2, 3: 0.2})
    assert [cid for cid, _ in fused] == [3, 9]
    keyword_part = fusion.COVERAGE_WEIGHT * 1.0**fusion.COVERAGE_POWER + fusion.KEYWORD_SCORE_WEIGHT * 1.0
    assert fused[0][1] == pytest.approx(0.5 + fusion.NOTE_WEIGHT * 0.2 + keyword_part)  # confidence 1


def test_keyword_confidence_is_the_scaled_coverage_of_the_best_keyword_hit():
    keyword = fusion.ranked([(4, 9.0), (2, 3.0)])
    assert fusion.keyword_confidence(keyword, {4: 0.4, 2: 1.0}, scale=1.5) == pytest.approx(0.6)
    assert fusion.keyword_confidence(keyword, {4: 0.9, 2: 0.0}, scale=1.5) == 1.0  # capped
    assert fusion.keyword_confidence(keyword, {2: 1.0}, scale=1.5) == 0.0  # the best hit holds nothing
    assert fusion.keyword_confidence([], {1: 1.0}) == 0.0  # no keyword side: no keyword evidence


def test_matched_share_weighs_each_term_found_nowhere_as_the_rarest_term_times_the_constant():
    total = 99  # idf of a term in one chunk: log(100)
    assert fusion.matched_share([3, 40], total) == 1.0  # every term is somewhere in the index
    assert fusion.matched_share([0, 0], total) == 0.0  # nothing the index holds
    assert fusion.matched_share([], total) == 0.0
    matched = fusion.idf(3, total) + fusion.idf(40, total)
    expected = matched / (matched + 1.5 * math.log(100))
    assert fusion.matched_share([3, 0, 40], total, unmatched_weight=1.5) == pytest.approx(expected)
    assert fusion.matched_share([3, 0, 40], total, unmatched_weight=0.0) == 1.0  # the rule off
    # two unmatched words weigh more than one; a rare matched word holds more mass than a common one
    assert fusion.matched_share([3, 0, 0], total) < fusion.matched_share([3, 0], total)
    assert fusion.matched_share([1, 0], total) > fusion.matched_share([60, 0], total)


def test_keyword_confidence_is_scaled_by_the_matched_share():
    keyword = fusion.ranked([(4, 9.0)])
    assert fusion.keyword_confidence(keyword, {4: 0.6}, scale=1.5) == pytest.approx(0.9)
    assert fusion.keyword_confidence(keyword, {4: 0.6}, scale=1.5, share=0.5) == pytest.approx(0.45)
    assert fusion.keyword_confidence(keyword, {4: 1.0}, scale=1.5, share=0.5) == pytest.approx(0.75)


def test_a_question_in_words_the_vault_never_uses_keeps_the_vector_order():
    """The best keyword hit holds every MATCHED term (coverage 1), but half the question's words
    are found nowhere: with the matched share the keyword terms no longer overturn the cosine
    order; without it (share 1) the keyword hit jumps ahead."""
    vector = fusion.ranked([(1, 0.72), (2, 0.50)])
    keyword = fusion.ranked([(2, 8.0)])
    share = fusion.matched_share([12, 0, 0], 999)
    kept = fusion.coverage_fusion(vector, keyword, {1: 0.0, 2: 1.0}, note_weight=0.0, share=share)
    overturned = fusion.coverage_fusion(vector, keyword, {1: 0.0, 2: 1.0}, note_weight=0.0, share=1.0)
    assert share < 0.2
    assert [cid for cid, _ in kept] == [1, 2]
    assert [cid for cid, _ in overturned] == [2, 1]


def test_a_weak_best_keyword_hit_scales_the_keyword_terms_down_and_a_strong_one_keeps_them():
    """A paraphrase whose best keyword hit shares one common word keeps the cosine order; a
    question whose best hit holds its rare terms lets that hit overtake a closer cosine."""
    vector = fusion.ranked([(1, 0.62), (2, 0.55)])
    keyword = fusion.ranked([(2, 8.0)])
    weak = fusion.coverage_fusion(vector, keyword, {1: 0.0, 2: 0.1}, note_weight=0.0,
                                  weight=0.4, keyword_weight=0.3, keyword_power=1, confidence_scale=1.5)
    strong = fusion.coverage_fusion(vector, keyword, {1: 0.0, 2: 0.8}, note_weight=0.0,
                                    weight=0.4, keyword_weight=0.3, keyword_power=1, confidence_scale=1.5)
    assert [cid for cid, _ in weak] == [1, 2]
    assert dict(weak)[2] == pytest.approx(0.55 + 0.15 * (0.4 * 0.1**3 + 0.3))
    assert [cid for cid, _ in strong] == [2, 1]
    assert dict(strong)[2] == pytest.approx(0.55 + 1.0 * (0.4 * 0.8**3 + 0.3))


def test_coverage_fusion_with_no_vector_candidates_uses_a_zero_floor():
    fused = fusion.coverage_fusion([], fusion.ranked([(5, 3.0)]), {5: 1.0}, weight=0.4, power=2, keyword_weight=0.1)
    assert fused == [(5, pytest.approx(0.4 + 0.1))]  # its coverage 1.0: full confidence


def test_keyword_strength_is_bm25_over_the_best_of_the_list():
    strength = fusion.keyword_strength(fusion.ranked([(7, 8.0), (3, 4.0), (9, 0.0)]))
    assert strength == {7: 1.0, 3: 0.5, 9: 0.0}
    assert fusion.keyword_strength([]) == {}
    assert fusion.keyword_strength(fusion.ranked([(1, 0.0)])) == {}  # no positive score: no evidence


def test_coverage_fusion_adds_the_weighted_keyword_strength():
    vector = fusion.ranked([(1, 0.70), (2, 0.68), (3, 0.40)])
    keyword = fusion.ranked([(2, 10.0), (1, 2.0), (4, 5.0)])  # 4: keyword-only
    fused = fusion.coverage_fusion(vector, keyword, {}, {}, weight=0.0, note_weight=0.0,
                                   keyword_weight=0.3, keyword_power=2, confidence_scale=None)
    expected = {1: 0.70 + 0.3 * 0.2**2, 2: 0.68 + 0.3 * 1.0, 3: 0.40, 4: 0.40 + 0.3 * 0.5**2}
    assert dict(fused) == {cid: pytest.approx(v) for cid, v in expected.items()}
    assert [cid for cid, _ in fused] == [2, 1, 4, 3]  # bm25's clear winner overtakes a closer cosine


def test_the_keyword_strength_is_relative_so_a_corpus_bm25_scale_does_not_matter():
    vector = fusion.ranked([(1, 0.70), (2, 0.68)])
    small = fusion.coverage_fusion(vector, fusion.ranked([(2, 1.0), (1, 0.5)]), {})
    large = fusion.coverage_fusion(vector, fusion.ranked([(2, 100.0), (1, 50.0)]), {})
    assert small == [(cid, pytest.approx(score)) for cid, score in large]


def test_full_coverage_lifts_a_rare_term_match_over_a_slightly_closer_paraphrase():
    """The design intent: coverage near 1 beats a small cosine gap; a partial match does not."""
    gap = fusion.COVERAGE_WEIGHT * 0.5  # a cosine gap smaller than what full coverage adds
    vector = fusion.ranked([(1, 0.6 + gap), (2, 0.6)])
    assert fusion.coverage_fusion(vector, [], {1: 0.0, 2: 1.0}, keyword_weight=0.0, confidence_scale=None)[0][0] == 2
    assert fusion.coverage_fusion(vector, [], {1: 0.0, 2: 0.5}, keyword_weight=0.0, confidence_scale=None)[0][0] == 1


@pytest.mark.parametrize("seed", range(25))
def test_rerank_order_scores_never_rise_and_head_follows_the_reranker(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    fused = sorted(((i, rng.random() / 30) for i in range(n)), key=lambda p: -p[1])
    logits = [rng.uniform(-8, 8) for _ in fused[: fusion.RERANK_TOP]]
    out = fusion.rerank_order(fused, logits)
    scores = [s for _, s in out]
    assert all(a >= b for a, b in zip(scores, scores[1:], strict=False))
    assert sorted(cid for cid, _ in out) == sorted(cid for cid, _ in fused)
    head_ids = [cid for cid, _ in sorted(zip((c for c, _ in fused), logits, strict=False), key=lambda p: -p[1])]
    assert [cid for cid, _ in out[: len(head_ids)]] == head_ids
    assert [cid for cid, _ in out[fusion.RERANK_TOP :]] == [cid for cid, _ in fused[fusion.RERANK_TOP :]]


def test_rerank_order_requires_one_score_per_head_item():
    with pytest.raises(ValueError):
        fusion.rerank_order([(1, 0.5), (2, 0.4)], [0.1])


def test_demote_halves_deprecated_scores_and_resorts_stably():
    scored = [(1, 1.0), (2, 0.8), (3, 0.45), (4, 0.45)]
    out = fusion.demote(scored, {1: "deprecated", 2: "canonical"})
    assert out == [(2, 0.8), (1, 1.0 * fusion.DEPRECATED_PENALTY), (3, 0.45), (4, 0.45)]


def test_coverage_fusion_adds_the_weighted_note_similarity():
    vector = fusion.ranked([(1, 0.60), (2, 0.55)])
    notes = {1: 0.10, 2: 0.50}  # chunk 2 sits in a note much closer to the query
    fused = fusion.coverage_fusion(vector, [], {}, notes, note_weight=0.2)
    assert dict(fused) == {
        1: pytest.approx(0.60 + 0.2 * 0.10),
        2: pytest.approx(0.55 + 0.2 * 0.50),
    }
    assert [cid for cid, _ in fused] == [2, 1]
    assert [cid for cid, _ in fusion.coverage_fusion(vector, [], {}, notes, note_weight=0.0)] == [1, 2]
