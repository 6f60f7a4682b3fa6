"""A tool is a plain top-level function: a test calls it with a ToolContext, no server, no client."""

from __future__ import annotations

import anyio
from helpers import write
from vault_index.services.writes.write import Caller
from vault_index.surfaces.tool_context import ToolContext, _Vaults
from vault_index.surfaces.tools import TOOLS, build_server
from vault_index.surfaces.tools_notes import note_read, note_write
from vault_index.surfaces.tools_search import search_notes


def _context(app, root, tmp_path) -> ToolContext:
    app.serve_from(root)  # what build_server(vault_root=root) does before it makes its context
    return ToolContext(app, tmp_path / "memory.jsonl", lambda vault, ctx: Caller.local(vault, agent="test"),
                       _Vaults(app, root))


def test_note_write_is_called_as_a_function_and_writes_through_the_service(tmp_path, open_app):
    root = tmp_path / "notes"
    write(root, "index.md", "# Index\n\nThe notes.\n")
    app = open_app(None)
    app.index([str(root)])
    tc = _context(app, root, tmp_path)

    created = note_write(tc, "create", "ideas/kiln.md", None, body="Fire the kiln at dawn.\n")
    assert created.status == "written", created.message
    assert "Fire the kiln at dawn." in (root / "ideas" / "kiln.md").read_text()

    read = note_read(tc, "ideas/kiln.md", None)
    assert read.status == "ok" and "Fire the kiln at dawn." in read.data["body"]
    stale = note_write(tc, "replace", "ideas/kiln.md", None, body="Later.\n", base_version="0" * 16)
    assert stale.status == "stale"  # the version check of the write service, as over MCP
    found = search_notes(tc, "kiln dawn", None, mode="keyword")
    assert [hit.path for hit in found.hits] == [str(root / "ideas" / "kiln.md")]  # re-indexed by the write


def test_the_server_registers_the_table_in_its_order(tmp_path, open_app):
    app = open_app(None)
    listed = anyio.run(build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path).list_tools)
    assert [tool.name for tool in listed] == [fn.__name__ for fn, _ in TOOLS]
    assert [tool.annotations for tool in listed] == [hints for _, hints in TOOLS]


def test_search_notes_and_recall_take_the_agents_sub_queries(tmp_path, open_app):
    import pytest
    from mcp.server.mcpserver.exceptions import ToolError
    from vault_index.surfaces.tools_graph import recall

    root = tmp_path / "notes"
    write(root, "bike.md", "# Bike\n\n## Brakes\n\nReplace the brake pads when the groove wears away.\n\n"
                           "## Chain\n\nClean the chain with degreaser.\n")
    write(root, "kiln.md", "# Kiln\n\nFire the kiln at dawn and let it cool overnight.\n")
    app = open_app(None)  # keyword side only: the vague question's words are in no note
    app.index([str(root)])
    tc = _context(app, root, tmp_path)
    query = "awful noise when I stop"
    assert search_notes(tc, query, None, mode="hybrid", per_note=False).hits == []
    helped = search_notes(tc, query, None, mode="hybrid", per_note=False, keywords=["brake pads groove"],
                          paraphrases=["squeaking brakes"], hypothetical="Replace the pads when worn.")
    assert (helped.hits[0].path, helped.hits[0].heading) == (str(root / "bike.md"), "Bike > Brakes")
    found = recall(tc, query, None, limit=2, keywords=["brake pads groove"])
    assert found.notes[0]["heading"] == "Bike > Brakes"
    with pytest.raises(ToolError, match="keep each under"):
        search_notes(tc, query, None, paraphrases=["x" * 501])


def test_search_notes_gives_one_hit_per_note_with_its_other_sections_and_chunks_on_request(tmp_path, open_app):
    """Issue 39 item 7: `also` lists the note's other matched sections (heading and lines) over
    MCP as in the CLI's JSON; `per_note: false` gives chunks."""
    root = tmp_path / "notes"
    write(root, "bike.md", "# Bike\n\n## Brakes\n\nThe brake pads wear.\n\n## Cables\n\nBrake cables stretch.\n\n"
                           "## Levers\n\nBrake levers loosen.\n")
    write(root, "kiln.md", "# Kiln\n\nThe kiln has no brake.\n")
    app = open_app(None)
    app.index([str(root)])
    tc = _context(app, root, tmp_path)
    notes = search_notes(tc, "brake", None, mode="keyword")
    assert sorted(hit.path for hit in notes.hits) == [str(root / "bike.md"), str(root / "kiln.md")]
    bike = next(hit for hit in notes.hits if hit.path.endswith("bike.md"))
    assert bike.more == 2 and {s["heading"] for s in bike.also} | {bike.heading} == {
        "Bike > Brakes", "Bike > Cables", "Bike > Levers"}
    assert all(s["line_start"] <= s["line_end"] for s in bike.also)
    chunks = search_notes(tc, "brake", None, mode="keyword", per_note=False)
    assert [hit.path for hit in chunks.hits].count(str(root / "bike.md")) == 3
    assert all(hit.also == [] and hit.more == 0 for hit in chunks.hits)


def test_search_notes_explains_each_hit_and_a_miss_as_the_app_does(tmp_path, open_app, fake_embedder):
    root = tmp_path / "notes"
    write(root, "bike.md", "# Bike\n\n## Brakes\n\nReplace the brake pads when the groove wears away.\n")
    write(root, "kiln.md", "# Kiln\n\nFire the kiln at dawn and let it cool overnight.\n")
    app = open_app(fake_embedder)
    app.index([str(root)])
    tc = _context(app, root, tmp_path)
    found = search_notes(tc, "brake pads", None, mode="hybrid", explain=True, why="kiln.md")
    first = found.hits[0].explain
    assert first["keyword"]["rank"] == 1 and first["vector"]["rank"] >= 1  # both sides' ranks per hit
    assert found.why == app.why("brake pads", "kiln.md", mode="hybrid", limit=8)  # one code path
    assert found.why["keyword"]["rank"] is None and found.why["keyword"]["note"] == "no query word in it"
    plain = search_notes(tc, "brake pads", None, mode="hybrid")
    assert plain.hits[0].explain is None and plain.why is None
