"""A hit's snippet: the lines that matched, within the budget (services/search/snippets.py)."""

from __future__ import annotations

from helpers import FakeEmbedder, write
from vault_index.engine.parsing.chunk import chunk_note
from vault_index.engine.parsing.parse import parse_note
from vault_index.services.search.snippets import SNIPPET_CHARS, snippet

# How the Rust book opens a section: a comment to its writers, then an anchor, then the prose.
RUST_BOOK = ("# Enums\n\n## Defining an Enum\n\n<!-- Old headings. Do not remove or links may break. -->\n\n"
             '<a id="the-option-enum"></a>\n\nEnums give you a way of saying a value is one of a possible set.\n')


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


def test_html_comments_never_show_in_a_snippet():
    """Walkthrough A: the Rust book's `<!-- Old headings. ... -->` was a snippet's first line."""
    for terms in (["enums"], []):
        cut = snippet(RUST_BOOK, terms)
        assert "<!--" not in cut and "-->" not in cut and "Old headings" not in cut and "Enums give you" in cut
    many = "The gateway\n<!--\n  a note\n  over lines\n-->\nallows one origin <!-- inline --> only."
    assert snippet(many, ["gateway"]) == "The gateway\nallows one origin only."
    assert snippet("<!-- only a comment -->\n", ["gateway"]) == ""  # nothing shown beats the comment
    assert snippet("intro <!-- never closed\nand more", []) == "intro"  # unclosed: to the end, as CommonMark
    code = "```html\n<!-- header -->\n<div>\n```\nUse `<!-- more -->` to cut. A --> B"
    assert snippet(code, []) == code  # in code a comment is what the page shows; an arrow is no comment


def test_a_hits_snippet_drops_the_comment_the_stored_chunk_keeps(tmp_path, open_app):
    write(tmp_path / "book", "enums.md", RUST_BOOK)
    app = open_app(FakeEmbedder())
    app.index([str(tmp_path / "book")])
    hit = app.search("defining", mode="keyword").hits[0]  # a heading's word: the snippet is the opening text
    assert hit.heading == "Enums > Defining an Enum" and hit.snippet.startswith("Enums give you a way"), hit
    chunks = chunk_note(parse_note("enums.md", RUST_BOOK))
    assert any("<!-- Old headings" in c.text for c in chunks)  # the index's text, and so the eval, unchanged


def test_a_hit_by_title_or_meaning_opens_at_the_records_prose_not_its_status_lines():
    """Walkthrough C: a record found with none of the query's words in its chunk (by its title, by
    meaning) showed "Date: 2026-02-03 Status: Accepted The worker..."; the status lines ride with
    the record's first prose since chunking carries them there."""
    chunk = "Date: 2026-02-03\n\nStatus: Accepted\n\nThe worker retries each webhook three times."
    assert snippet(chunk, ["nomatch"]) == "The worker retries each webhook three times."
    assert snippet("Status: proposed", ["nomatch"]) == "Status: proposed"  # nothing else: kept
    assert snippet(chunk, ["accepted"]).startswith("…Status: Accepted")  # asked for: shown
