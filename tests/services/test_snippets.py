"""A hit's snippet: the lines that matched, within the budget (services/search/snippets.py)."""

from __future__ import annotations

from vault_index.services.search.snippets import SNIPPET_CHARS, snippet


def test_snippet_keeps_its_budget_and_its_opening_text_without_a_matched_word():
    lines = "\n".join(f"line {i} filler words here" for i in range(60))
    text = "Status: accepted\n" + lines + "\nthe wombat line\n" + lines
    cut = snippet(text, ["wombat"])
    assert "wombat" in cut and "Status" not in cut and len(cut) <= SNIPPET_CHARS + 2
    assert cut.startswith("…the wombat line\n")  # from the matched line, not from the lines above it
    assert snippet("Status: accepted", ["gateway"]) == "Status: accepted"  # matched on its title alone
    assert snippet(text, ["absent"]).startswith("Status: accepted\nline 0") and len(snippet(text, [])) <= 481
    assert snippet("a decorse b", ["cors"]) == "a decorse b"  # a word's start, not any substring
