"""Query text to FTS5: stopwords out, every term quoted, common terms out while a rarer one remains."""

from __future__ import annotations

from vault_index.services.search.query import MAX_QUERY_TERMS, fts_match, query_terms, quote, within_budget


def test_terms_are_lowercased_deduplicated_and_stopword_free():
    assert query_terms("What did Tobiah say about the VPN, the vpn and INFRA-2288?") == [
        "tobiah", "say", "vpn", "infra-2288"]
    assert query_terms("the of and to") == []
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == MAX_QUERY_TERMS


def test_quote_makes_any_input_a_string_literal():
    assert quote('say "hi"') == '"say ""hi"""'
    assert quote("NEAR(") == '"NEAR("'


def test_common_terms_leave_the_query_while_a_specific_one_remains():
    assert fts_match(["deploy", "tobiah"], [5000, 3], common_at=1000) == '"tobiah"'
    assert fts_match(["a1", "b2"], [10, 20], common_at=1000) == '"a1" OR "b2"'


def test_all_common_terms_are_required_together():
    assert fts_match(["deploy", "server"], [1000, 1000], common_at=1000) == '"deploy" AND "server"'


def test_terms_that_match_nothing_are_dropped():
    assert fts_match(["zzz", "tobiah"], [0, 2], common_at=1000) == '"tobiah"'
    assert fts_match(["zzz"], [0], common_at=1000) == ""


def test_the_posting_budget_keeps_the_rarest_terms_in_query_order():
    counted = [("beta", 500), ("alpha", 20), ("gamma", 9000), ("delta", 480)]
    assert within_budget(counted, 1000) == ["beta", "alpha", "delta"]  # 20 + 480 + 500 fit; 9,000 not
    assert within_budget(counted, 999) == ["alpha", "delta"]


def test_the_rarest_term_is_kept_even_when_it_alone_exceeds_the_budget():
    assert within_budget([("x", 7000), ("y", 5000)], 1000) == ["y"]


def test_equal_counts_keep_the_earlier_term():
    assert within_budget([("p", 600), ("q", 600)], 1000) == ["p"]


def test_a_budget_bounds_only_the_or_of_specific_terms():
    assert fts_match(["a", "b", "c"], [10, 400, 900], common_at=1000, budget=500) == '"a" OR "b"'
    assert fts_match(["a", "b", "c"], [10, 400, 900], common_at=1000, budget=None) == '"a" OR "b" OR "c"'
    # all common: the AND is not bounded (dropping a term would widen it; ADR 0014)
    assert fts_match(["deploy", "server"], [1000, 1000], common_at=1000, budget=10) == '"deploy" AND "server"'
    assert fts_match(["zzz", "a"], [0, 5000], common_at=1000, budget=10) == '"a"'
