"""Agent-supplied sub-queries (issue 23): extra phrasings of a question, fused with its own ranking.

A calling agent knows what it is after but not the vault's words. Besides the question it may send
keyword forms (run on the keyword side), paraphrases (run as the question is: both sides, fused)
and a short hypothetical answer passage (run on the vector side). Each phrasing's ranked list is
combined with the question's own by weighted reciprocal rank fusion, the question's list counting
QUESTION_WEIGHT times (qmd's rule). With no sub-query the search never comes here: its ranking is
the plain question's. ADR 0027 has the measurements behind the two constants.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vault_index.errors import UsageError

# Bounds on what an agent may send: a few phrasings, each a sentence or two, so that one search
# costs at most a handful of side runs (each paraphrase and passage is one more embedding).
MAX_PER_KIND = 3
MAX_SUBQUERY_CHARS = 500
# The question's list counts this many times one sub-query's (qmd's rule): one sub-query alone
# cannot outvote the question's first place; two agreeing can tie it. 1 and 2 measured alike
# (0.980, 0.979); 3 and more lost (ADR 0027).
QUESTION_WEIGHT = 2.0
# Reciprocal rank fusion's damping, weight / (RRF_K + rank): chosen leave-one-corpus-out on five
# corpora (1 on four folds, 5 on one; 1 to 5 within 0.001 of each other); qmd's and the RRF
# paper's 60 lost 0.009 file NDCG@5: a small k lets each list's first places decide (ADR 0027).
RRF_K = 1


@dataclass(frozen=True)
class SubQueries:
    """Extra phrasings of one question; empty tuples (the default) mean a plain search."""

    keywords: tuple[str, ...] = ()  # keyword forms: the names and terms the notes may use
    paraphrases: tuple[str, ...] = ()  # the question said another way
    hypothetical: tuple[str, ...] = ()  # a short passage as the answer might read

    def empty(self) -> bool:
        return not (self.keywords or self.paraphrases or self.hypothetical)


@dataclass(frozen=True)
class Phrasing:
    label: str  # how explain names it: "keywords 1", "paraphrase 2", "hypothetical 1"
    text: str
    keyword: bool  # runs the keyword side
    vector: bool  # runs the vector side


def sub_queries(keywords: str | Iterable[str] | None = None, paraphrases: str | Iterable[str] | None = None,
                hypothetical: str | Iterable[str] | None = None) -> SubQueries | None:
    """A checked SubQueries from what a surface received (a string or a list per kind, blanks
    dropped); None when nothing is left. UsageError when a bound is passed."""
    found = SubQueries(_texts(keywords), _texts(paraphrases), _texts(hypothetical))
    check(found)
    return None if found.empty() else found


def _texts(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(item, str) for item in items):
        raise UsageError("sub-queries must be text")
    return tuple(text for text in (" ".join(item.split()) for item in items) if text)


def check(found: SubQueries) -> None:
    """UsageError when a kind has more than MAX_PER_KIND phrasings or one is over MAX_SUBQUERY_CHARS."""
    for kind in ("keywords", "paraphrases", "hypothetical"):
        texts = getattr(found, kind)
        if len(texts) > MAX_PER_KIND:
            raise UsageError(f"at most {MAX_PER_KIND} {kind} sub-queries per search ({len(texts)} given)")
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise UsageError(f"{kind} sub-queries must be non-empty text")
            if len(text) > MAX_SUBQUERY_CHARS:
                raise UsageError(f"a {kind} sub-query is {len(text)} characters; keep each under "
                                 f"{MAX_SUBQUERY_CHARS + 1} (a sentence or two)")


def phrasings(found: SubQueries) -> list[Phrasing]:
    """Each sub-query with the side(s) it runs: keywords the keyword side, paraphrases both (fused
    as the question is), a hypothetical passage the vector side."""
    return ([Phrasing(f"keywords {i}", t, True, False) for i, t in enumerate(found.keywords, 1)]
            + [Phrasing(f"paraphrase {i}", t, True, True) for i, t in enumerate(found.paraphrases, 1)]
            + [Phrasing(f"hypothetical {i}", t, False, True) for i, t in enumerate(found.hypothetical, 1)])


def combine(question: Sequence[tuple[int, float]], others: Sequence[Sequence[tuple[int, float]]],
            question_weight: float = QUESTION_WEIGHT, k: float = RRF_K) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion, best first: question_weight / (k + rank) from the
    question's list plus 1 / (k + rank) from each other list; ties by chunk id."""
    scores: dict[int, float] = {}
    for weight, order in ((question_weight, question), *((1.0, o) for o in others)):
        for rank, (cid, _) in enumerate(order, start=1):
            scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def found_by(question: Sequence[tuple[int, float]], runs: Sequence[tuple[Phrasing, Sequence[tuple[int, float]]]]
             ) -> dict[int, dict[str, int]]:
    """For explain: chunk id -> {phrasing label: its rank in that phrasing's list}."""
    ranks: dict[int, dict[str, int]] = {}
    for label, order in (("question", question), *((p.label, o) for p, o in runs)):
        for rank, (cid, _) in enumerate(order, start=1):
            ranks.setdefault(cid, {})[label] = rank
    return ranks
