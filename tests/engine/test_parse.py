"""Markdown parsing: heading paths, fences, preamble title, line numbers, frontmatter, tags, links."""

from __future__ import annotations

from vault_index.engine.parsing.parse import parse_note, split_frontmatter

DOC = """---
title: Field guide
---
Intro line before any heading.

# A

text under a

## B

### C

deep text

```python
# not a heading
## also not
```

~~~
# still code
~~~

## D

text under d
"""


def _by_heading(note):
    return {s.heading: s for s in note.sections}


def test_heading_paths_nest_and_pop():
    note = parse_note("/v/guide.md", DOC)
    headings = [s.heading for s in note.sections]
    assert headings == ["Field guide", "A", "A > B > C", "A > D"]


def test_heading_attribute_blocks_stay_out_of_titles_and_heading_paths():
    """MkDocs (`{ #id }`, `{: .class }`) and Pandoc (`{#id .class key=value}`, `{-}`) attributes are
    markup for the site: issue 39 found `{ #cors-setup }` in every heading path of a docs folder."""
    note = parse_note("/d/cors.md", "# Gateway {#top}\n\nintro\n\n## CORS setup { #cors-setup }\n\na\n\n"
                                    "### Origins {#origins .wide data-x=\"a b\"}\n\nb\n\n## Appendix {-}\n\nc\n\n"
                                    "## Notes {: .note }\n\nd\n\n## Use {{ var }} here\n\ne\n\n## {#bare}\n\nf\n")
    assert note.title == "Gateway"
    assert [s.heading for s in note.sections] == [
        "Gateway", "Gateway > CORS setup", "Gateway > CORS setup > Origins", "Gateway > Appendix",
        "Gateway > Notes", "Gateway > Use {{ var }} here", "Gateway > {#bare}"]


def test_html_anchors_stay_out_of_heading_paths():
    """A raw `<a id=...></a>` opening a heading is a link target, not words (a walkthrough of issue
    39 saw `Cross-origin settings > <a id="legacy"></a>Legacy origin list`); a real link stays."""
    note = parse_note("/d/cors.md", '# Cross-origin settings\n\nintro\n\n'
                                    '## <a id="legacy"></a>Legacy origin list\n\na\n\n'
                                    "## <A NAME=old/>Old list\n\nb\n\n## See <a href=\"x.md\">x</a>\n\nc\n")
    assert [s.heading for s in note.sections][1:] == [
        "Cross-origin settings > Legacy origin list", "Cross-origin settings > Old list",
        'Cross-origin settings > See <a href="x.md">x</a>']


def test_html_comments_stay_out_of_titles_and_heading_paths():
    """Walkthrough A: a comment to the writers is no word of a heading; a heading that is only a
    comment adds nothing to the path; a code span in a heading is kept as written."""
    note = parse_note("/d/book.md", "# Enums <!-- ch06 -->\n\nintro\n\n## Defining <!-- old name --> an Enum\n\na\n\n"
                                    "## <!-- moved -->\n\n### Option\n\nb\n\n## The `<!-- more -->` marker\n\nc\n")
    assert note.title == "Enums"
    assert [s.heading for s in note.sections] == ["Enums", "Enums > Defining an Enum", "Enums > Option",
                                                  "Enums > The `<!-- more -->` marker"]


def test_headings_inside_code_fences_are_ignored_but_code_stays_in_the_section():
    sections = _by_heading(parse_note("/v/guide.md", DOC))
    assert not any("not a heading" in h or "still code" in h for h in sections)
    assert "# not a heading" in sections["A > B > C"].text
    assert "# still code" in sections["A > B > C"].text


def test_preamble_gets_the_title_from_frontmatter_then_h1_then_file_stem():
    assert parse_note("/v/guide.md", DOC).sections[0].heading == "Field guide"
    from_h1 = parse_note("/v/x.md", "before\n\n# Real title\n\nafter\n")
    assert from_h1.title == "Real title"
    assert from_h1.sections[0].heading == "Real title" and from_h1.sections[0].text == "before"
    from_stem = parse_note("/v/my-note.md", "just text\n")
    assert from_stem.title == "my-note"
    assert [s.heading for s in from_stem.sections] == ["my-note"]


def test_line_ranges_point_at_the_file_lines():
    lines = DOC.split("\n")
    note = parse_note("/v/guide.md", DOC)
    for section in note.sections:
        span = lines[section.line_start - 1 : section.line_end]
        assert "\n".join(span) == section.text, section.heading
    assert lines[_by_heading(note)["A > D"].line_start - 1] == "text under d"


def test_line_numbers_survive_crlf_line_endings():
    note = parse_note("/v/w.md", DOC.replace("\n", "\r\n"))
    lines = DOC.split("\n")
    assert all(lines[s.line_start - 1] == s.text.split("\n")[0] for s in note.sections)


def test_invalid_yaml_keeps_the_body_and_reports_the_problem():
    text = "---\ntitle: [unclosed\ntags: : :\n---\n# Heading\n\nbody survives here\n"
    note = parse_note("/v/bad.md", text)
    assert note.frontmatter == {}
    assert note.frontmatter_error and "invalid YAML" in note.frontmatter_error
    assert [s.text for s in note.sections] == ["body survives here"]
    assert note.sections[0].line_start == 7


def test_frontmatter_that_is_not_a_mapping_is_reported():
    frontmatter, error, body_start = split_frontmatter("---\n- a\n- b\n---\nbody\n")
    assert frontmatter == {} and error and "mapping" in error and body_start == 4


def test_unclosed_frontmatter_is_body():
    note = parse_note("/v/u.md", "---\ntitle: x\nno closing fence\n")
    assert note.frontmatter == {} and note.frontmatter_error is None
    assert "no closing fence" in note.sections[0].text


def test_tags_from_frontmatter_list_string_and_inline_not_from_code_or_headings():
    text = (
        "---\ntags: [Garden, '#soil']\n---\n# Title\n\nInline #Compost and #garden again, "
        "not an issue ref like a#b or &#39;.\n\n```\n#codetag\n```\n"
    )
    note = parse_note("/v/t.md", text)
    assert note.tags == ("garden", "soil", "compost")
    assert parse_note("/v/s.md", "---\ntags: alpha, beta gamma\n---\nx\n").tags == ("alpha", "beta", "gamma")


def test_wikilinks_with_alias_and_section_are_parsed_and_code_is_skipped():
    text = "See [[Note A]], [[Note B|alias]] and [[Note C#Part]] and [[Note A]].\n\n```\n[[In Code]]\n```\n"
    assert parse_note("/v/l.md", text).links == ("Note A", "Note B", "Note C")
