"""The search confidence (services/search/confidence.py) and its fitting (tooling/calibration.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import write
from vault_index.engine.embedding.models import Models
from vault_index.services.search import confidence
from vault_index.tooling import calibration as cal


def test_the_committed_model_scores_each_kind_with_the_signals_it_was_fitted_on():
    model = json.loads(confidence.WEIGHTS_FILE.read_text())
    assert 0 < model["threshold"] < 1
    for kind, names in confidence.FEATURES.items():
        assert model["models"][kind]["features"] == list(names)
        assert len(model["models"][kind]["weights"]) == len(names)
        assert model["held_out"][kind], "the held-out figures travel with the weights"
    strong = {"cos1": 0.8, "note1": 0.7, "cov1": 1.0, "kwconf": 1.0, "share": 1.0, "rrk": 1.0, "rrv": 1.0,
              "evidence": 2.5}
    weak = {"cos1": 0.1, "note1": 0.1, "cov1": 0.1, "kwconf": 0.1, "share": 0.3, "rrk": 0.0, "rrv": 0.2,
            "evidence": 0.2}
    assert confidence.score("hybrid", strong) > confidence.threshold() > confidence.score("hybrid", weak)


def test_a_model_fitted_on_other_signals_gives_no_confidence(monkeypatch):
    monkeypatch.setattr(confidence, "_models", lambda: {"threshold": 0.5, "models": {
        "keyword": {"features": ["cov1", "share"], "weights": [1.0, 1.0], "bias": 0.0}}})
    assert confidence.score("keyword", {"cov1": 1.0, "share": 1.0, "kwconf": 1.0, "ratio2": 0.0}) is None
    assert confidence.score(None, {"cov1": 1.0}) is None  # grep: no model applies


def test_the_fit_recovers_a_known_logistic_model_and_ece_measures_its_calibration():
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, size=(4000, 2))
    truth = np.array([4.0, -2.0]), -1.0
    y = (rng.uniform(size=4000) < cal.predict(x, *truth)).astype(float)
    w = np.ones(len(y))
    weights, bias = cal.fit(x, y, w)
    assert np.allclose(weights, truth[0], atol=0.5) and abs(bias - truth[1]) < 0.4
    calibrated, _ = cal.reliability(cal.predict(x, weights, bias), y, w)
    overconfident, table = cal.reliability(np.where(cal.predict(x, weights, bias) > 0.5, 0.99, 0.01), y, w)
    assert calibrated < 0.03 < overconfident
    assert sum(row["pairs"] for row in table) == len(y)


def test_auc_counts_ties_half():
    assert cal.auc(np.array([0.9, 0.5, 0.5, 0.1]), np.array([1, 1, 0, 0])) == pytest.approx(0.875)


@pytest.mark.real_model
def test_a_real_search_says_nothing_relevant_for_a_prompt_no_note_answers(tmp_path, shipped_model_cache, open_app):
    """With the shipped MiniLM: a question a note answers clears the threshold; a coding prompt
    no note answers does not, and the answer says so plainly."""
    vault = tmp_path / "notes"
    write(vault, "sourdough.md", "# Sourdough starter\n\nFeed the starter twice a day with equal weights of "
                                 "flour and water; keep it at 24 degrees. It doubles in four to six hours.\n")
    write(vault, "bike.md", "# Bike maintenance\n\nOil the chain after every rain ride and check the tyre "
                            "pressure weekly: 4.5 bar front, 5 bar rear.\n")
    write(vault, "garden.md", "# Garden sensors\n\nThe soil moisture sensors run on two AA batteries that "
                              "last about eight months; the gateway polls them every ten minutes.\n")
    app = open_app(Models("shipped:minilm", "none", shipped_model_cache, rerank=False).embedder())
    app.index([str(vault)])
    answered = app.search("how often should I feed my sourdough starter?", mode="hybrid", per_note=True)
    assert answered.hits[0].path.endswith("sourdough.md")
    assert answered.relevant and answered.confidence >= confidence.threshold()
    unrelated = app.search("TypeError: cannot read properties of undefined (reading 'map') in UserList.tsx",
                           mode="hybrid", per_note=True)
    assert unrelated.hits and not unrelated.relevant
    assert any(n.startswith("nothing relevant") for n in unrelated.notices)


def test_the_nothing_relevant_notice_never_shows_a_confidence_equal_to_its_threshold():
    """A walkthrough of issue 39 read "confidence is 0.39, under 0.39": rounding hid the gap."""
    from vault_index.services.app import nothing_relevant
    from vault_index.services.search import confidence

    limit = confidence.threshold("hybrid")
    shown = nothing_relevant(limit - 0.001, "hybrid")
    assert f"is {limit - 0.001:.3f}, under {limit:.2f}" in shown
    assert f"is {limit - 0.2:.2f}, under" in nothing_relevant(limit - 0.2, "hybrid")
