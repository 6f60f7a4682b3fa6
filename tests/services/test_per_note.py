"""services/search/per_note.py on hits alone: how recall folds chunk hits into one per note."""

from __future__ import annotations

from vault_index.engine.parsing.status_block import no_prose
from vault_index.services.search.per_note import hits_per_note
from vault_index.types import Hit


def test_recall_folds_a_decision_records_hits_onto_its_prose_too():
    """recall folds chunk hits per note itself (per_note.hits_per_note): the same rule as search."""
    status = Hit("/d/0004.md", "0004: Retry budget", 3, 5, 0.9, "Status: accepted\nDate: 2026-04-02\nDeciders: a")
    prose = Hit("/d/0004.md", "0004: Retry budget > Context", 9, 12, 0.5, "Payment calls were repeated, unbounded.")
    other = Hit("/d/0005.md", "0005: Status only", 3, 3, 0.4, "Status: proposed")
    folded = hits_per_note([status, prose, other])
    assert [(h.heading, h.score, h.more) for h in folded] == [("0004: Retry budget > Context", 0.9, 1),
                                                             ("0005: Status only", 0.4, 0)]
    assert folded[0].also[0].heading == "0004: Retry budget"


def test_an_adr_tools_status_section_is_not_the_hit_either():
    """adr-tools and MADR keep the status in its own section: "Accepted" under `## Status`."""
    status = Hit("/d/0001.md", "1. Record architecture decisions > Status", 5, 7, 0.9, "Accepted")
    prose = Hit("/d/0001.md", "1. Record architecture decisions > Context", 9, 12, 0.5, "We need to record decisions.")
    folded = hits_per_note([status, prose])
    assert [(h.heading, h.score) for h in folded] == [("1. Record architecture decisions > Context", 0.9)]


def test_a_notes_own_key_value_lines_are_its_content_not_a_status_block():
    assert no_prose("Status: accepted\nDate: 2026-04-02\n- **Deciders:** checkout team", "0004: Retry budget")
    assert not no_prose("Battery: 2xAA\nRange: 300 m", "Garden sensor > Spec")
    assert no_prose("Accepted", "1. Use Postgres > Status")
    assert not no_prose("Run kubectl get pods and check that every replica reports ready.", "Runbook > Status")
