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


def test_html_anchors_never_show_in_a_snippet():
    """Issue 39 (the fresh walkthrough): MkDocs-style pages open sections with raw anchors
    (`<a name="x"></a>`, `<a id="y"></a>`), and they showed as the snippet's first line."""
    text = '<a name="cors-setup"></a>\n## CORS\n\n<a id="allow"></a>The gateway allows <a id=origin/>one origin.\n'
    cut = snippet(text, ["gateway"])
    assert "<a" not in cut and "</a>" not in cut and "The gateway allows one origin." in cut, cut
    assert "<a" not in snippet(text, [])
    link = 'See <a href="https://example.org/cors">the CORS page</a> for the gateway.'
    assert snippet(link, ["gateway"]) == link  # a link is content, not an anchor
