"""Obsidian habits on a fixture vault (tests/fixtures/obsidian-vault): templates folders are not
notes, aliases find their note, a question with an exact date ranks that day's note first,
embeds and tags are read. Real SQLite FTS5 and the real pipeline; only the model is fake."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest
from helpers import FakeEmbedder, snapshot
from vault_index.engine.files.sources import walk_notes
from vault_index.engine.parsing.parse import parse_note, split_frontmatter
from vault_index.services.search import dates

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "obsidian-vault"
TEMPLATES = ("Meta/Templates/Daily.md", "_templates/Meeting.md")


@pytest.fixture
def obsidian(tmp_path) -> Path:
    root = tmp_path / "obsidian-vault"
    shutil.copytree(FIXTURE, root)
    return root


@pytest.fixture
def indexed(obsidian, open_app):
    app = open_app(FakeEmbedder())
    report = app.index([str(obsidian)])
    return app, report


def _rel(root: Path, hit) -> str:
    return Path(hit.path).relative_to(root.resolve()).as_posix()


def test_templates_folders_are_not_indexed_as_notes_and_are_not_reported(obsidian, indexed):
    app, report = indexed
    walked = {p.relative_to(obsidian.resolve()).as_posix() for p in walk_notes(obsidian.resolve())}
    assert walked == {"Daily/2025-11-07.md", "Daily/2025-11-08.md", "Notes/Espresso machine.md",
                      "Notes/Garden plan.md", "Notes/Harvest log.md", "Notes/Home server.md"}
    assert not set(TEMPLATES) & walked
    assert report.indexed == len(walked)
    assert not any("Templates" in path or "_templates" in path for path, _ in report.problems)
    for hit in app.search("espresso machine pump meeting decisions", mode="keyword", limit=20).hits:
        assert not _rel(obsidian, hit).startswith(("Meta/", "_templates/"))
    # The hook's single-file path skips them too (the same rule as the walk).
    assert app.reindex_file(str(obsidian / "_templates" / "Meeting.md")) is None
    assert app.reindex_file(str(obsidian / "Meta" / "Templates" / "Daily.md")) is None


def test_template_placeholders_in_frontmatter_are_strings_not_broken_yaml(obsidian):
    text = (obsidian / "Meta" / "Templates" / "Daily.md").read_text()
    frontmatter, error, _ = split_frontmatter(text)
    assert error is None
    assert frontmatter["date"] == "{{date}}" and frontmatter["created"] == "{{date:YYYY-MM-DD}} {{time}}"
    meeting, error, _ = split_frontmatter((obsidian / "_templates" / "Meeting.md").read_text())
    assert error is None and meeting["attendees"] == ["{{attendee}}"]
    # Broken YAML without placeholders is still reported.
    assert split_frontmatter("---\ntitle: [unclosed\n---\nbody\n")[1]


def test_a_templates_folder_named_in_obsidian_settings_is_skipped_wherever_it_is(obsidian):
    (obsidian / ".obsidian" / "templates.json").write_text('{"folder": "Notes"}')
    walked = {p.relative_to(obsidian.resolve()).as_posix() for p in walk_notes(obsidian.resolve())}
    assert not any(path.startswith("Notes/") for path in walked)
    assert "Meta/Templates/Daily.md" not in walked  # still named as the daily-note template


@pytest.mark.parametrize("alias, title", [("Bramblebox", "Home server.md"), ("Gaggia", "Espresso machine.md"),
                                          ("coffee maker", "Espresso machine.md")])
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_an_alias_finds_its_note(obsidian, indexed, alias, title, mode):
    app, _ = indexed
    text = (obsidian / "Notes" / title).read_text()
    body = text.split("---", 2)[2]
    assert alias.lower() not in body.lower()  # found through the alias, not the body
    hits = app.search(alias, mode=mode, limit=5).hits
    assert hits and Path(hits[0].path).name == title


def test_a_question_with_an_exact_date_ranks_the_daily_note_first(obsidian, indexed):
    app, _ = indexed
    for question in ("What did I do on 2025-11-07?", "what happened on 7 November 2025",
                     "pump swap Nov 7, 2025"):
        result = app.search(question, mode="hybrid", limit=5, explain=True)
        assert _rel(obsidian, result.hits[0]) == "Daily/2025-11-07.md", question
        assert result.hits[0].explain["date"] == {"rule": dates.DATE_RULE_VERSION}
    # The note that only links to the day mentions the date four times: without the rule it leads.
    plain = app.search("What did I do on 2025-11-07?", mode="keyword", limit=5)
    assert _rel(obsidian, plain.hits[0]) == "Daily/2025-11-07.md"
    keyword_only = app.searcher._keyword(*_keyword_args(app, "What did I do on 2025-11-07?"))
    first_by_bm25 = app.store.chunk_rows([keyword_only[0].chunk_id])[keyword_only[0].chunk_id].path
    assert Path(first_by_bm25).name == "Espresso machine.md"


def _keyword_args(app, query):
    from vault_index.services.search.query import query_terms

    terms = query_terms(query)
    return terms, app.searcher._doc_counts(terms), None


def test_a_frontmatter_date_makes_a_daily_note_too(obsidian, indexed):
    app, _ = indexed
    hits = app.search("What happened on 9 November 2025?", mode="hybrid", limit=5).hits
    assert _rel(obsidian, hits[0]) == "Notes/Harvest log.md"
    # No date in the question: ranking is untouched by the rule.
    result = app.search("carrots squash harvest shed", mode="hybrid", limit=5, explain=True)
    assert all(hit.explain.get("date") is None for hit in result.hits)


def test_embeds_and_tags_are_read_and_indexing_changes_no_note(obsidian, open_app):
    before = snapshot(obsidian)
    note = parse_note("Daily/2025-11-07.md", (obsidian / "Daily" / "2025-11-07.md").read_text())
    assert note.links == ("Espresso machine",)  # the link and the embed ![[...#Pump]] name one note
    assert set(note.tags) == {"daily", "maintenance"}
    open_app(FakeEmbedder()).index([str(obsidian)])
    assert snapshot(obsidian) == before


def test_query_dates_and_note_dates():
    assert dates.query_dates("on 2025-11-07 and 2025/11/08") == {date(2025, 11, 7), date(2025, 11, 8)}
    assert dates.query_dates("7th Nov 2025") == {date(2025, 11, 7)}
    assert dates.query_dates("November 7, 2025") == {date(2025, 11, 7)}
    assert dates.query_dates("on 7 March") == frozenset()  # no year: not an exact date
    assert dates.query_dates("2025-02-30") == frozenset()  # no such day
    assert dates.note_date("/v/Daily/2025-11-07.md") == date(2025, 11, 7)
    assert dates.note_date("/v/2026-03-14-garden-club.md") == date(2026, 3, 14)
    assert dates.note_date("/v/x.md", "2025-11-09") == date(2025, 11, 9)
    assert dates.note_date("/v/x.md", date(2025, 11, 9)) == date(2025, 11, 9)
    assert dates.note_date("/v/x.md", "{{date}}") is None


def test_promote_dated_is_pure_and_bounded_per_note():
    order = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6), (5, 0.5)]
    day = date(2025, 11, 7)
    dated = {1: ("a", None), 2: ("d", day), 3: ("d", day), 4: ("d", day), 5: ("e", day)}
    new, promoted = dates.promote_dated(order, dated, frozenset({day}))
    assert [cid for cid, _ in new] == [2, 3, 5, 1, 4]
    assert promoted == {2, 3, 5}
    scores = [score for _, score in new]
    assert scores == sorted(scores, reverse=True)
    assert dates.promote_dated(order, dated, frozenset()) == (order, set())


def test_odd_obsidian_settings_name_nothing_and_never_block(obsidian, tmp_path):
    import os

    settings = obsidian / ".obsidian" / "templates.json"
    outside = tmp_path / "outside.json"
    outside.write_text('{"folder": "Notes"}')
    settings.unlink()
    settings.symlink_to(outside)  # a link is not followed
    walked = {p.relative_to(obsidian.resolve()).as_posix() for p in walk_notes(obsidian.resolve())}
    assert any(path.startswith("Notes/") for path in walked)
    settings.unlink()
    os.mkfifo(settings)  # a FIFO is not waited on
    assert any(p.name == "Home server.md" for p in walk_notes(obsidian.resolve()))
    settings.unlink()
    settings.write_text("{not json")
    assert any(p.name == "Home server.md" for p in walk_notes(obsidian.resolve()))
