"""Chunking: one section per chunk, hashes of the embed text, size limits in chars and tokens."""

from __future__ import annotations

import pytest
from helpers import FakeEmbedder
from vault_index.engine.parsing.chunk import MAX_CHUNK_CHARS, approximate_tokens, chunk_note, embed_text_for
from vault_index.engine.parsing.parse import parse_note


def _long_section_doc() -> str:
    paragraphs = [" ".join(f"para{p}word{w}" for w in range(12)) for p in range(8)]
    one_line = " ".join(f"longline{w}" for w in range(300))  # a single 300-word line: split by words
    return "# Title\n\n## Long\n\n" + "\n\n".join(paragraphs) + "\n\n" + one_line + "\n\n## Short\n\nsmall end\n"


def test_long_section_is_split_within_char_and_token_limits_and_loses_no_word():
    text = _long_section_doc()
    note = parse_note("/v/long.md", text)
    counter = FakeEmbedder(max_tokens=40)
    chunks = chunk_note(note, counter.count_tokens, counter.max_tokens)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= MAX_CHUNK_CHARS
        assert counter.count_tokens(chunk.embed_text) <= 40
        assert chunk.embed_text == embed_text_for(note.title, chunk.heading, chunk.text)
    long_words = [w for c in chunks if c.heading == "Title > Long" for w in c.text.split()]
    long_section = next(s for s in note.sections if s.heading == "Title > Long")
    assert long_words == long_section.text.split()  # every word kept, in order
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert chunks[-1].heading == "Title > Short" and chunks[-1].text == "small end"


def test_split_chunks_point_at_the_lines_they_came_from():
    text = _long_section_doc()
    lines = text.split("\n")
    note = parse_note("/v/long.md", text)
    counter = FakeEmbedder(max_tokens=40)
    for chunk in chunk_note(note, counter.count_tokens, counter.max_tokens):
        span = "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        for word in chunk.text.split():
            assert word in span, (word, chunk.line_start, chunk.line_end)


def test_char_limit_holds_with_the_default_approximate_counter():
    body = "\n".join("x" * 50 + f" line {i}" for i in range(200))  # one paragraph, 200 lines
    note = parse_note("/v/chars.md", "# Big\n\n" + body + "\n")
    chunks = chunk_note(note, approximate_tokens, 512)
    assert len(chunks) > 1
    assert all(len(c.text) <= MAX_CHUNK_CHARS for c in chunks)
    assert all(approximate_tokens(c.embed_text) <= 512 for c in chunks)
    kept = [line for c in chunks for line in c.text.split("\n") if line]
    assert kept == body.split("\n")


def test_a_single_word_longer_than_the_limit_is_cut_by_characters():
    note = parse_note("/v/blob.md", "# Blob\n\n" + "z" * 5000 + "\n")
    chunks = chunk_note(note, approximate_tokens, 512)
    assert all(len(c.text) <= MAX_CHUNK_CHARS for c in chunks)
    assert "".join(c.text for c in chunks) == "z" * 5000


def test_small_paragraphs_of_one_section_are_packed_together():
    note = parse_note("/v/p.md", "# T\n\none\n\ntwo\n\nthree\n")
    chunks = chunk_note(note)
    assert len(chunks) == 1 and chunks[0].text == "one\n\ntwo\n\nthree"
    assert (chunks[0].line_start, chunks[0].line_end) == (3, 7)


def test_hash_depends_on_context_so_the_same_text_under_another_heading_differs():
    a = chunk_note(parse_note("/v/a.md", "# One\n\nsame body\n"))[0]
    b = chunk_note(parse_note("/v/a.md", "# Two\n\nsame body\n"))[0]
    c = chunk_note(parse_note("/v/b.md", "# One\n\nsame body\n"))[0]
    assert a.hash != b.hash
    assert a.hash == c.hash  # path is not part of the key: identical content shares a vector


def test_chunk_text_is_verbatim_from_the_file_when_a_paragraph_is_split_by_lines():
    """Lines of one paragraph rejoin with one newline, paragraphs with a blank line: no invented text."""
    lines = [f"line {i} of a long list about sensors and batteries" for i in range(60)]
    body = "\n".join(lines) + "\n\nA second paragraph after a blank line.\n"
    text = "# Note\n\n" + body
    chunks = chunk_note(parse_note("n.md", text), approximate_tokens, max_tokens=80)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text in text
        assert "\n".join(text.split("\n")[chunk.line_start - 1 : chunk.line_end]).strip() == chunk.text


NYGARD = ("# 1. Use Postgres\n\nDate: 2026-01-01\n\n## Status\n\nAccepted\n\n"
          "## Context\n\nMany writers share one database.\n")
MADR = ("# Use Postgres\n\n* Status: accepted\n* Deciders: data team\n* Date: 2026-01-01\n\n"
        "## Context and Problem Statement\n\nMany writers share one database.\n\n## Decision Outcome\n\nPostgres.\n")


@pytest.mark.parametrize("text, heading, first_line, count", [
    (NYGARD, "1. Use Postgres > Context", "Date: 2026-01-01\n\nStatus: Accepted\n\nMany writers", 1),
    (MADR, "Use Postgres > Context and Problem Statement", "* Status: accepted\n* Deciders: data team", 2),
])
def test_a_records_status_block_rides_with_its_first_prose(text, heading, first_line, count):
    """Issue 39 item 8: a status block alone made a chunk that ranked first on the title's words and
    was shown as the answer. It joins the next section with prose (a `## Status` word keeps its
    label), from the block's first line; nothing of the note is lost."""
    chunks = chunk_note(parse_note("/v/0001.md", text))
    assert (chunks[0].heading, chunks[0].line_start) == (heading, 3)
    assert chunks[0].text.startswith(first_line) and chunks[0].text.endswith("Many writers share one database.")
    assert len(chunks) == count and not any(c.heading.endswith("Status") for c in chunks)


def test_a_status_block_stays_its_own_chunk_when_nothing_follows_and_a_long_paragraph_still_takes_it():
    alone = chunk_note(parse_note("/v/0002.md", "# 2. Refunds\n\nStatus: proposed\n"))
    assert [(c.heading, c.text) for c in alone] == [("2. Refunds", "Status: proposed")]
    long = "Payment calls were repeated without a limit. " * 60  # one line, split to fit
    chunks = chunk_note(parse_note("/v/0003.md", f"# 3. Budget\n\nStatus: accepted\n\n## Context\n\n{long}\n"))
    assert chunks[0].text.startswith("Status: accepted\n\nPayment calls") and len(chunks) >= 2
    assert all(c.heading == "3. Budget > Context" for c in chunks)


def test_a_short_paragraph_after_a_split_long_one_joins_its_last_piece():
    """Walkthrough H: a list of eight long steps was split by lines and the line after it became a
    chunk of its own ("Open http://localhost:8040/docs ..."), which outranked the steps it follows."""
    steps = "\n".join(f"{n}. Step {n} runs `tool-{n} --flag value-{n}` against the local stack." for n in range(1, 9))
    text = f"# Orders\n\n## Run it\n\n{steps}\n\nOpen the docs page."
    chunks = chunk_note(parse_note("n.md", text), approximate_tokens, max_tokens=120)
    assert len(chunks) > 1 and chunks[-1].text.endswith("8. Step 8 runs `tool-8 --flag value-8` against the "
                                                        "local stack.\n\nOpen the docs page.")
    assert [(c.line_start, c.line_end) for c in chunks][-1][1] == 14
    assert all(approximate_tokens(c.embed_text) <= 120 for c in chunks)
