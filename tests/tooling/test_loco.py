"""Leave-one-corpus-out: a held-out corpus never influences its own choice."""

from __future__ import annotations

import pytest
from vault_index.tooling.loco import choose_on, leave_one_corpus_out


def test_the_held_out_corpus_does_not_choose_its_own_variant():
    scores = {"a": [0.9, 0.1], "b": [0.2, 0.8], "c": [0.3, 0.7]}
    chosen = leave_one_corpus_out(scores)
    assert chosen["a"] == 1  # b and c prefer variant 1, whatever a says
    # Changing a's scores cannot change a's choice, only the others'.
    assert leave_one_corpus_out({**scores, "a": [0.0, 1.0]})["a"] == chosen["a"]


def test_choice_maximises_the_mean_or_the_worst_corpus():
    scores = {"a": [0.5, 0.9, 0.45], "b": [0.5, 0.2, 0.6]}
    assert choose_on(scores, ["a", "b"]) == 1  # mean 0.55 beats 0.5 and 0.525
    assert choose_on(scores, ["a", "b"], "worst") == 0  # worst 0.5 beats 0.45 and 0.2
    scores = {"a": [0.5, 0.9, 0.5], "b": [0.5, 0.1, 0.6]}
    assert choose_on(scores, ["a", "b"], "worst", min_gain=0.0) == 2  # same worst (0.5), better mean
    with pytest.raises(ValueError):
        choose_on(scores, ["a", "b"], "median")


def test_ties_keep_the_earliest_variant_so_an_untestable_rule_stays_off():
    scores = {"a": [0.4, 0.4], "b": [0.6, 0.6], "c": [0.5, 0.9]}
    assert leave_one_corpus_out(scores)["c"] == 0


def test_the_incumbent_stays_unless_beaten_by_the_minimum_gain():
    scores = {"a": [0.50, 0.504, 0.40], "b": [0.50, 0.504, 0.40]}
    assert choose_on(scores, ["a", "b"]) == 0  # +0.004 is noise
    assert choose_on(scores, ["a", "b"], min_gain=0.0) == 1
    scores = {"a": [0.50, 0.52], "b": [0.50, 0.50]}
    assert choose_on(scores, ["a", "b"]) == 1  # +0.01 on the mean is a real gain


def test_bad_tables_are_refused():
    with pytest.raises(ValueError):
        leave_one_corpus_out({"a": [1.0]})
    with pytest.raises(ValueError):
        choose_on({"a": [1.0], "b": [1.0, 2.0]}, ["a", "b"])
