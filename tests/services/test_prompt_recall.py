"""services/prompt_recall.select: what the prompt hook injects, as the eval calls it on an App."""

from __future__ import annotations

import pytest
from helpers import FakeEmbedder, write
from vault_index.services import prompt_recall
from vault_index.services.search import confidence

# P(relevant) = sigmoid(-6 + 12 * the first hit's coverage of the prompt's terms): the tests' own
# weights, so nothing here depends on the fitted file.
MODELS = {"threshold": 0.5, "models": {
    kind: {"features": list(confidence.FEATURES[kind]), "bias": -6.0,
           "weights": [12.0 if name == "cov1" else 0.0 for name in confidence.FEATURES[kind]]}
    for kind in ("keyword", "hybrid")}}


@pytest.fixture(autouse=True)
def confident(monkeypatch):
    monkeypatch.setattr(confidence, "_models", lambda: MODELS)


@pytest.fixture
def app(tmp_path, open_app):
    root = tmp_path / "notes"
    long_line = "The pump relay clicks when the float switch trips, and the log says so. " * 12
    for n in range(5):
        write(root, f"pump-{n}.md", f"# Pump {n}\n\n## Relay\n\n{long_line}\n\nPump relay float switch note {n}.\n")
    write(root, "bread.md", "# Bread\n\n## Starter\n\nFeed the sourdough starter twice a day.\n")
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    return app


def test_a_confident_answer_gives_at_most_three_notes_within_the_token_budget(app):
    found = prompt_recall.select(app, "pump relay float switch")
    assert found.mode == "hybrid" and found.confidence is not None and found.confidence >= 0.5
    assert 1 <= len(found.notes) <= prompt_recall.MAX_NOTES
    assert found.tokens == prompt_recall.tokens(found.text) <= prompt_recall.MAX_TOKENS
    # the confidence is said to be the first note's, never all of them (walkthrough D)
    assert f"confidence {found.confidence:.2f} for the first" in found.text
    assert ("the others are the next nearest" in found.text) == (len(found.notes) > 1)
    for note in found.notes:
        assert note.display in found.text and f":{note.line} (" in found.text
        assert "pump" in note.heading.lower() and len(note.snippet) <= prompt_recall.SNIPPET_CHARS + 1


def test_nothing_relevant_is_silent_but_still_says_its_confidence(app):
    found = prompt_recall.select(app, "kubernetes ingress certificate renewal")
    assert found.text == "" and found.notes == () and found.tokens == 0
    assert found.reason in ("no hits", "nothing relevant")
    assert found.confidence is not None and found.confidence < confidence.threshold()


def test_notes_injected_before_are_left_out_and_not_replaced(app):
    first = prompt_recall.select(app, "pump relay float switch")
    again = prompt_recall.select(app, "pump relay float switch", {n.path for n in first.notes})
    assert again.notes == () and again.reason == "already injected"
    # the first note, the one the confidence judges, was injected before: the others would go in under
    # its confidence (walkthrough C: two unrelated notes "confidence 0.95"), so nothing goes in
    lead = prompt_recall.select(app, "pump relay float switch", {first.notes[0].path})
    assert lead.notes == () and lead.reason == "already injected" and lead.confidence == first.confidence
    later = prompt_recall.select(app, "pump relay float switch", {first.notes[1].path})
    assert [n.path for n in later.notes] == [first.notes[0].path, *[n.path for n in first.notes[2:]]]


def test_slash_commands_and_empty_prompts_are_not_searched(app):
    for text in ("/recall pump relay", "   ", ""):
        found = prompt_recall.select(app, text)
        assert found.text == "" and found.confidence is None


def test_keyword_mode_uses_the_same_budget_and_threshold(app):
    found = prompt_recall.select(app, "pump relay float switch", mode=prompt_recall.KEYWORD)
    assert found.mode == "keyword" and 1 <= len(found.notes) <= 3 and found.tokens <= prompt_recall.MAX_TOKENS


def test_the_budget_cuts_the_last_note_rather_than_overflowing():
    notes = tuple(prompt_recall.Recalled(f"/p/n{i}.md", f"n{i}.md", 3, "A > B", "word " * 60) for i in range(3))
    kept, text = prompt_recall.render(notes, 0.9)
    assert prompt_recall.tokens(text) <= prompt_recall.MAX_TOKENS and len(kept) >= 2


def test_an_answer_survives_the_socket_and_a_malformed_one_is_empty(app):
    found = prompt_recall.select(app, "pump relay float switch")
    back = prompt_recall.Injection.from_dict(found.as_dict())
    assert back.notes == found.notes and back.text == found.text and back.confidence == found.confidence
    assert prompt_recall.Injection.from_dict({"notes": [{"path": 1}]}).text == ""


@pytest.mark.parametrize("prompt, why", [
    ("the pump relay float switch test fails:\nAssertionError: relay stayed open", "pasted text"),
    ("pump relay float switch broken in firmware/relay.rs", "a file path"),
    ("pump relay float switch: RuntimeError: relay stayed open", "an error"),
    ("why does this function read the pump relay float switch twice?", "this code"),
    ("rename the pump relay float switch constant", "an instruction"),
])
def test_a_prompt_about_the_code_at_hand_stays_silent_though_a_note_matches_its_words(app, prompt, why):
    words = prompt_recall.select(app, "pump relay float switch")
    assert words.notes, "the same words alone inject: the gate, not the confidence, keeps these silent"
    found = prompt_recall.select(app, prompt)
    assert found.notes == () and found.text == "" and found.reason == f"about the code at hand ({why})"


@pytest.mark.parametrize("prompt", [
    "how did we wire the pump relay float switch?",
    "what did we decide about this project's release cadence?",  # "this" not naming code
    "explain the pump relay float switch decision",  # asks the notes, not the code
    "Do I need a contributor licence agreement?",
])
def test_a_question_to_the_notes_is_not_taken_for_the_code_at_hand(prompt):
    from vault_index.services.prompt_form import at_hand

    assert at_hand(prompt) == ""


def test_notes_injected_while_vectors_wait_say_they_were_ranked_by_keywords(tmp_path, open_app):
    """Walkthrough G: with none of a fresh project's chunks embedded, the hook injected "confidence
    0.94" and said nothing of what was pending, where search_notes named it."""
    from vault_index.engine import indexer

    root = tmp_path / "fresh"
    for n in range(3):
        write(root, f"pump-{n}.md", f"# Pump {n}\n\n## Relay\n\nPump relay float switch note {n}.\n")
    app = open_app(FakeEmbedder())
    indexer.sync(app.store, app.models, [str(root)], embed=False)  # keyword-indexed, vectors to come
    waiting = prompt_recall.select(app, "pump relay float switch")
    assert waiting.notes and "notes still waiting for vectors were ranked by keywords alone" in waiting.text
    app.index([str(root)])
    done = prompt_recall.select(app, "pump relay float switch")
    assert done.notes and "wait for vectors" not in done.text
