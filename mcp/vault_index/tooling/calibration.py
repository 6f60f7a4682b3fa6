"""Fitting and checking the search confidence (services/search/confidence.py).

A pair is one question searched in one corpus's index: in its own corpus it is labelled by whether
the first hit's file answers it; in another corpus (a wrong-vault pair) it is never relevant. Own
and wrong-vault pairs weigh the same in total per question (a wrong-vault pair weighs 1 / the
number of other corpora), so the fitted probability is for a question that is as likely to be
asked of the wrong vault as of the right one. The model is a weighted, lightly L2-regularised
logistic regression, fitted by Newton's method; small enough to read, no library beyond numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vault_index.services.search import confidence

# Shrinks the weights a little. Chosen leave-one-corpus-out on the suite's six corpora (mean held-out
# hybrid ECE 0.110 at 1e-2, 0.070 at 1e-3, 0.062 at 1e-4): stronger flattened the probabilities.
L2 = 1e-4
BINS = 10  # the reliability table's bins, equal width on [0, 1] (the ECE uses ten)


@dataclass(frozen=True)
class Pair:
    question: str  # "<corpus>/<id>"
    asked_of: str  # the corpus searched (its own, or another: a wrong-vault pair)
    own: str  # the question's corpus
    kind: str  # the question's kind (lookup, paraphrase, ...)
    run: str  # the confidence model that scores it (hybrid, keyword, vector)
    signals: dict
    label: int  # 1: the first hit's file answers the question
    weight: float
    top3: bool = False  # an answering file among the first three notes (what the prompt hook injects)


def collect(app, corpus: str, questions, own: str, others: int, modes: tuple[str, ...]) -> list[Pair]:
    """Every question of `questions` (corpus `own`) searched in `app` (corpus `corpus`) in each mode."""
    pairs = []
    for q in questions:
        for mode in modes:
            result = app.search(q.query, mode, 5, per_note=True)
            kind = result.judged_by  # the model whose signals these are
            if kind is None:
                continue
            files = [h.path for h in result.hits]
            right = own == corpus
            label = int(right and bool(files) and files[0] in q.files)
            top3 = right and any(f in q.files for f in files[:3])
            pairs.append(Pair(f"{own}/{q.id}", corpus, own, q.kind, kind, result.signals, label,
                              1.0 if right else 1.0 / max(1, others), top3))
    return pairs


def matrix(pairs: list[Pair], kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    names = confidence.FEATURES[kind]
    x = np.array([[float(p.signals.get(n, 0.0)) for n in names] for p in pairs], dtype=float).reshape(-1, len(names))
    return x, np.array([p.label for p in pairs], dtype=float), np.array([p.weight for p in pairs], dtype=float)


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = L2, rounds: int = 50) -> tuple[np.ndarray, float]:
    """(weights, bias) of the weighted logistic regression; the bias is not regularised."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2 * w.sum())
    penalty[-1] = 0.0
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-np.clip(xb @ beta, -40, 40)))
        gradient = xb.T @ (w * (p - y)) + penalty * beta
        hessian = (xb * (w * p * (1 - p))[:, None]).T @ xb + np.diag(penalty) + 1e-9 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def predict(x: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(x @ weights + bias, -40, 40)))


def reliability(p: np.ndarray, y: np.ndarray, w: np.ndarray, bins: int = BINS) -> tuple[float, list[dict]]:
    """(expected calibration error, table): per bin its weight share, mean confidence and the
    weighted share of relevant first hits; ECE is the weighted mean gap."""
    edges = np.linspace(0, 1, bins + 1)
    index = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    total, ece, table = w.sum(), 0.0, []
    for b in range(bins):
        inside = index == b
        mass = w[inside].sum()
        if mass <= 0:
            table.append({"bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}", "pairs": 0, "confidence": None,
                          "relevant": None})
            continue
        mean_p = float((w[inside] * p[inside]).sum() / mass)
        rate = float((w[inside] * y[inside]).sum() / mass)
        ece += mass / total * abs(mean_p - rate)
        table.append({"bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}", "pairs": int(inside.sum()),
                      "confidence": round(mean_p, 3), "relevant": round(rate, 3)})
    return float(ece), table


def auc(p: np.ndarray, y: np.ndarray) -> float:
    """The probability that a relevant pair outscores an irrelevant one (ties count half)."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    values = np.concatenate([pos, neg])
    for value in np.unique(values):  # average ranks of ties
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def format_table(table: list[dict]) -> str:
    lines = ["| confidence bin | pairs | mean confidence | share relevant |", "| --- | --- | --- | --- |"]
    for row in table:
        shown = "- | -" if row["confidence"] is None else f"{row['confidence']:.3f} | {row['relevant']:.3f}"
        lines.append(f"| {row['bin']} | {row['pairs']} | {shown} |")
    return "\n".join(lines)
