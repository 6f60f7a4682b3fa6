"""CommonMark corners the hand-written parser missed, now read through markdown-it-py: setext
headings, `#` inside quotes and lists, indented code, inline code spans, aliases."""

from __future__ import annotations

import pytest
from vault_index.engine.parsing.parse import alias_title, parse_note

SETEXT = """Garden log
==========

intro text

Beds
----

beds text
"""


def test_setext_headings_make_sections_with_exact_line_ranges():
    note = parse_note("/v/g.md", SETEXT)
    assert note.title == "Garden log"
    assert [(s.heading, s.line_start, s.line_end, s.text) for s in note.sections] == [
        ("Garden log", 4, 4, "intro text"),
        ("Garden log > Beds", 9, 9, "beds text"),
    ]


def test_hashes_inside_quotes_lists_and_indented_code_are_not_headings():
    text = "# Top\n\n> # quoted\n\n- # in a list\n\n    # indented code\n\ntail\n"
    note = parse_note("/v/q.md", text)
    assert [s.heading for s in note.sections] == ["Top"]
    lines = text.split("\n")
    section = note.sections[0]
    assert "\n".join(lines[section.line_start - 1 : section.line_end]) == section.text


def test_tags_and_links_inside_code_spans_and_indented_code_are_ignored():
    text = "# T\n\nreal #kept and [[Real link]], `#notatag [[Not a link]]`\n\n    #alsonot [[Nor this]]\n"
    note = parse_note("/v/c.md", text)
    assert note.tags == ("kept",)
    assert note.links == ("Real link",)


def test_an_unclosed_fence_runs_to_the_end_and_hides_headings():
    note = parse_note("/v/f.md", "# A\n\n```\n# not a heading\n")
    assert [s.heading for s in note.sections] == ["A"]
    assert "# not a heading" in note.sections[0].text


def test_aliases_from_list_string_and_singular_key():
    assert parse_note("/v/a.md", "---\naliases: [K8s, kube]\n---\nx\n").aliases == ("K8s", "kube")
    assert parse_note("/v/b.md", "---\naliases: one, two\n---\nx\n").aliases == ("one", "two")
    assert parse_note("/v/c.md", "---\nalias: solo\n---\nx\n").aliases == ("solo",)
    odd = parse_note("/v/d.md", "---\naliases: {a: 1}\n---\n# Title\n")
    assert odd.aliases == () and alias_title(odd) == "Title"
    assert alias_title(parse_note("/v/e.md", "---\naliases: [k8s]\n---\n# Kubernetes\n")) == "Kubernetes (k8s)"


# Inline parsing runs only where a tag or wikilink can come out (issue 26): the notes must parse
# as they would with markdown-it's own inline rule on every line.
TRICKY_INLINE = [
    "Plain words only, *emphasis* and `code` and <b>html</b> and <https://x.example>.",
    "An entity tag &#35;numeric and &#x23;hex and &amp;#escaped.",
    "Only an entity makes this tag: &num;entitytag.\n\nAnd this link: &lbrack;&lbrack;Entity Link&rbrack;&rbrack;.",
    "Brackets by entity &lbrack;&lbrack;Spelled Link&rbrack;&rbrack; and [[Real Link|alias]].",
    "Escaped \\#nottag, code `#incode` and `[[not a link]]`, real #tag and a#b.",
    "A [markdown](link.md) with #tag in its [text #inlink](x) and ![img #alt](y.png).",
    "# Heading #not-inline-tag\n\nSetext #tag\n===\n\n> quoted #qtag [[Quoted]]\n\n- item #itag\n",
    "<div>\n#htmltag [[InHtml]]\n</div>\n\n    #indented [[InCode]]\n",
    "Line ending in a hash #\nand #next-line tag, [[Split\nLink]] and [[Whole]].",
]


@pytest.mark.parametrize("text", TRICKY_INLINE)
def test_skipping_inline_parse_without_hash_bracket_or_entity_changes_nothing(text):
    from markdown_it import MarkdownIt
    from vault_index.engine.parsing import parse as parse_module

    ours = parse_module.parse_note("/v/n.md", text)
    full, parse_module._MD = parse_module._MD, MarkdownIt("commonmark")  # markdown-it's own inline rule
    try:
        theirs = parse_module.parse_note("/v/n.md", text)
    finally:
        parse_module._MD = full
    assert (ours.tags, ours.links, ours.sections) == (theirs.tags, theirs.links, theirs.sections)
    if "&num;" in text:
        assert "entitytag" in ours.tags and "Entity Link" in ours.links, (ours.tags, ours.links)


def test_a_note_without_hash_bracket_or_entity_is_not_inline_parsed():
    from vault_index.engine.parsing.parse import _markdown

    tokens = _markdown().parse("# Title\n\nwords *and* `code`\n\nmore #tag here\n")
    inline = [t for t in tokens if t.type == "inline"]
    assert [bool(t.children) for t in inline] == [False, False, True]
