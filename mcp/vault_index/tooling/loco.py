"""Leave-one-corpus-out selection: a ranking constant is scored on a corpus it was not chosen on.

One corpus tuned alone fits itself and nothing else (the example vault's constants lost to plain
BM25 on LoCoMo and to plain vectors on a handbook). So every constant is chosen on the other
corpora of the suite and its score is read on the held-out one; the ADR shows that table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

CRITERIA = ("mean", "worst")
# A variant replaces the first one listed (the incumbent: the value in use, or a rule off) only
# when it gains at least this much on the training corpora. About one question moving from rank
# 1 to 2 in a corpus of 90 (0.37 / 90 = 0.004 NDCG@5): smaller gains are noise, and without this
# floor a 0.001 tie on two corpora dropped the coverage term, which LoCoMo needs (-0.026 held out).
MIN_GAIN = 0.005


def choose_on(
    scores: Mapping[str, Sequence[float]],
    corpora: Sequence[str],
    criterion: str = "mean",
    min_gain: float = MIN_GAIN,
) -> int:
    """Index of the variant with the best mean score over `corpora` (then the best worst), or with
    criterion "worst" the best worst score (then the best mean); variant 0 stays unless the best
    beats it by `min_gain` on the criterion.

    Ties go to the earliest variant, so list variants simplest first (a rule off before on): a
    rule that the training corpora cannot tell apart stays off.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}")
    if not corpora:
        raise ValueError("choose on at least one corpus")
    count = {len(scores[c]) for c in corpora}
    if len(count) != 1:
        raise ValueError("every corpus needs a score for every variant")
    (n,) = count

    def key(i: int) -> tuple[float, float, int]:
        values = [scores[c][i] for c in corpora]
        mean, worst = sum(values) / len(values), min(values)
        return (mean, worst, -i) if criterion == "mean" else (worst, mean, -i)

    best = max(range(n), key=key)
    return best if key(best)[0] - key(0)[0] >= min_gain else 0


def leave_one_corpus_out(
    scores: Mapping[str, Sequence[float]], criterion: str = "mean", min_gain: float = MIN_GAIN
) -> dict[str, int]:
    """For each corpus, the variant chosen on all the OTHER corpora (scores[corpus][variant])."""
    if len(scores) < 2:
        raise ValueError("leave-one-corpus-out needs at least two corpora")
    return {held: choose_on(scores, [c for c in scores if c != held], criterion, min_gain) for held in scores}
