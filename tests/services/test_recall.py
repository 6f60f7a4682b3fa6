"""Recall: notes, lessons and graph matches from one question, each with its source."""

from __future__ import annotations

import pytest
from helpers import write
from vault_index.errors import UsageError
from vault_index.services.graph import graph as memory
from vault_index.services.graph.graph import GraphInputError
from vault_index.services.recall import display_path, recall

LESSONS = """# Lessons

What running the garden sensor taught us.

## L-0001: Seal the sensor battery box with silicone before winter

- status: active
- date: 2026-01-10
- lesson: Seal the sensor battery box with silicone before winter
- cause: condensation drained the battery in December
- detect: open the box after the first frost and look for water
"""


@pytest.fixture
def project(vault, tmp_path, monkeypatch):
    """The conftest vault plus docs/lessons.md, as the project folder."""
    write(vault, "docs/lessons.md", LESSONS)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(vault))
    return vault


@pytest.fixture
def memfile(project, tmp_path):
    path = tmp_path / "memory.jsonl"
    memory.create(
        path,
        entities=[{"name": "Garden sensor", "entityType": "project", "source": str(project / "garden.md")}],
        observations=[{"entity": "Garden sensor", "text": "The battery box needs sealing against condensation",
                       "source": str(project / "docs/lessons.md")}],
    )
    return path


def test_recall_splits_lessons_from_notes_and_adds_the_graph(project, memfile, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(project)])
    found = recall(app, memfile, "sensor battery condensation", limit=3)
    assert found["query"] == "sensor battery condensation"
    assert found["lessons"] and {h["path"] for h in found["lessons"]} == {str(project / "docs/lessons.md")}
    assert {h["display"] for h in found["lessons"]} == {"docs/lessons.md"}
    assert any(h["heading"].endswith("L-0001: Seal the sensor battery box with silicone before winter")
               for h in found["lessons"])
    assert found["notes"] and all(not h["path"].endswith("lessons.md") for h in found["notes"])
    assert found["notes"][0]["path"] == str(project / "garden.md") and found["notes"][0]["display"] == "garden.md"
    for hit in found["notes"] + found["lessons"]:
        assert hit["line_start"] <= hit["line_end"] and hit["snippet"]
    (entity,) = found["graph"]
    assert entity["name"] == "Garden sensor"
    assert entity["source"] == str(project / "garden.md") and entity["display"] == "garden.md"
    assert entity["observations"][0]["source"] == str(project / "docs/lessons.md")


def test_each_list_is_capped_at_the_limit(project, memfile, open_app, fake_embedder):
    for n in range(3):
        write(project, f"more/sensor-{n}.md", f"# Sensor log {n}\n\nThe sensor battery read {n} volts.\n")
    app = open_app(fake_embedder)
    app.index([str(project)])
    found = recall(app, memfile, "sensor battery", limit=2)
    # the notes outrank the lesson, which is still found: recall fetches more than `limit`
    assert len(found["notes"]) == 2 and {h["display"] for h in found["notes"]} <= {
        f"more/sensor-{n}.md" for n in range(3)}
    assert [h["display"] for h in found["lessons"]] == ["docs/lessons.md"] * 2
    assert all(not h.path.endswith("lessons.md") for h in app.search("sensor battery", limit=2).hits)
    with pytest.raises(GraphInputError, match="limit"):
        recall(app, memfile, "sensor", limit=0)
    with pytest.raises(UsageError):
        recall(app, memfile, "   ")


def test_a_broken_memory_file_costs_only_the_graph_part(project, memfile, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(project)])
    with memfile.open("a") as handle:
        handle.write("{broken\n")
    before = memfile.read_bytes()
    found = recall(app, memfile, "sensor battery", limit=3)
    assert found["graph"] == [] and found["notes"]
    assert any("memory graph skipped" in n and ":3:" in n for n in found["notices"])
    assert memfile.read_bytes() == before


def test_a_missing_memory_file_is_an_empty_graph(project, open_app, fake_embedder, tmp_path):
    app = open_app(fake_embedder)
    app.index([str(project)])
    found = recall(app, tmp_path / "none" / "memory.jsonl", "brake pads", limit=3)
    assert found["graph"] == [] and found["notes"][0]["display"] == "bike.md"
    assert not (tmp_path / "none").exists()


def test_display_path_is_relative_inside_the_project_only(tmp_path):
    assert display_path(str(tmp_path / "a" / "b.md"), tmp_path) == "a/b.md"
    assert display_path("/elsewhere/c.md", tmp_path) == "/elsewhere/c.md"


def test_recall_passes_the_agents_sub_queries_to_the_notes_search_only(project, memfile, open_app, fake_embedder):
    from vault_index.services.search.subqueries import sub_queries

    app = open_app(fake_embedder)
    app.index([str(project)])
    question = "awful noise when I stop"
    plain = recall(app, memfile, question, limit=3)
    assert not plain["notes"] or plain["notes"][0]["heading"] != "Bike maintenance > Brakes"  # precondition
    found = recall(app, memfile, question, limit=3, subqueries=sub_queries(keywords="brake pads groove"))
    assert found["notes"][0]["heading"] == "Bike maintenance > Brakes"
    assert found["graph"] == plain["graph"]  # the graph is searched with the question alone


def test_recall_gives_one_item_per_note_with_its_other_sections_and_one_per_lesson(project, memfile, open_app,
                                                                                     fake_embedder):
    """Issue 39 item 7: a long note matching in many sections filled every note slot with its
    chunks; now it is one item listing where the others lie (`also`, `more`), and the other notes
    get the slots. Lessons stay one item per lesson (a section of lessons.md each)."""
    from vault_index.services.search.per_note import MAX_ALSO

    write(project, "docs/lessons.md", LESSONS + "\n## L-0002: Check the sensor battery monthly\n\n"
          "- status: active\n- lesson: Check the sensor battery monthly\n")
    parts = "\n\n".join(f"## Part {i}\n\nThe sensor battery log, part {i}: " + "filler words " * 40 for i in range(5))
    write(project, "long.md", "# Long\n\n" + parts + "\n")
    for n in range(2):
        write(project, f"more/sensor-{n}.md", f"# Sensor log {n}\n\nThe sensor battery read {n} volts.\n")
    app = open_app(fake_embedder)
    app.index([str(project)])
    found = recall(app, memfile, "sensor battery log part", limit=3)
    displays = [h["display"] for h in found["notes"]]
    assert len(displays) == len(set(displays)) == 3 and "long.md" in displays
    long = next(h for h in found["notes"] if h["display"] == "long.md")
    assert long["more"] == 4 and len(long["also"]) == MAX_ALSO
    assert all(set(s) == {"heading", "line_start", "line_end"} and s["heading"].startswith("Long > Part ")
               for s in long["also"])
    assert long["heading"] not in {s["heading"] for s in long["also"]}
    assert len(found["lessons"]) >= 2 and len({h["heading"] for h in found["lessons"]}) == len(found["lessons"])
