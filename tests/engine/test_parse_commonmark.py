"""CommonMark corners the hand-written parser missed, now read through markdown-it-py: setext
headings, `#` inside quotes and lists, indented code, inline code spans, aliases."""

from __future__ import annotations

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
