"""lesson_* and adr_create through the real MCP SDK client, in process, on the server build_server makes."""

from __future__ import annotations

import anyio
import pytest
from helpers import write
from vault_index.services.curation import lessons
from vault_index.services.graph import graph
from vault_index.surfaces.server import build_server

from mcp import Client

WRITE_TOOLS = {"lesson_add", "lesson_supersede", "lesson_retire", "adr_create"}


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    write(root, "docs/readme.md", "# Docs\n\nproject documents\n")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    return root


async def _calls(server, steps):
    seen = {}
    async with Client(server) as client:
        seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        for key, name, arguments in steps:
            seen[key] = await client.call_tool(name, arguments)
    return seen


def test_write_tools_record_lessons_and_reindex(project, tmp_path, open_app):
    app = open_app(None)
    app.index([str(project / "docs")])
    server = build_server(app, memory_file=tmp_path / "memory.jsonl")
    entry = {"lesson": "Take the lock before reading", "cause": "a lost update", "detect": "two-process test"}
    seen = anyio.run(_calls, server, [
        ("add", "lesson_add", {**entry, "tags": ["io"]}),
        ("add2", "lesson_add", {"lesson": "Quokka rule", "cause": "c", "detect": "d"}),
        ("supersede", "lesson_supersede", {"old_id": "L-0001", "lesson": "Lock, re-read, then write",
                                           "cause": "learned more", "detect": "same test"}),
        ("retire", "lesson_retire", {"id": "l-2", "reason": "no longer applies"}),
        ("retire_again", "lesson_retire", {"id": "L-0002", "reason": "twice"}),
        ("unknown", "lesson_retire", {"id": "L-0099", "reason": "r"}),
        ("bad_id", "lesson_retire", {"id": "drop table", "reason": "r"}),
        ("two_lines", "lesson_add", {"lesson": "a\nb", "cause": "c", "detect": "d"}),
    ])
    tools = seen["tools"]
    assert WRITE_TOOLS <= set(tools)
    for name in WRITE_TOOLS:
        hints = tools[name].annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (False, False, False), name
    assert "old_id" in tools["lesson_supersede"].input_schema["properties"]

    path = project / "docs" / "lessons.md"
    add = seen["add"]
    assert not add.is_error
    assert add.structured_content == {"id": "L-0001", "status": "active", "path": str(path), "superseded": None,
                                      "reindexed": True, "notices": []}
    assert seen["supersede"].structured_content["id"] == "L-0003"
    assert seen["supersede"].structured_content["superseded"] == "L-0001"
    assert seen["retire"].structured_content["id"] == "L-0002"
    assert seen["retire"].structured_content["status"] == "retired"
    assert seen["retire_again"].is_error and "already retired" in _text(seen["retire_again"])
    assert seen["unknown"].is_error and "L-0099 is not in the lessons file" in _text(seen["unknown"])
    assert seen["bad_id"].is_error and seen["two_lines"].is_error

    every = {x.id: x.status for x in lessons.list_lessons(path, include_all=True)}
    assert every == {"L-0001": "superseded", "L-0002": "retired", "L-0003": "active"}
    assert lessons.check_lessons(path) == []
    hits = app.search("quokka", mode="keyword").hits  # the retire re-indexed the file too
    assert [h.path for h in hits] == [str(path)] and "no longer applies" in app.get_note(str(path))["content"]


def test_adr_create_writes_links_and_reindexes(project, tmp_path, open_app):
    memory = tmp_path / "memory.jsonl"
    note = write(project, "notes/index.md", "# Index\n")
    graph.create(memory, entities=[{"name": "Vector search", "entityType": "component", "source": str(note)}])
    app = open_app(None)
    app.index([str(project / "docs")])
    server = build_server(app, memory_file=memory)
    record = {"title": "Keep wombat vectors in numpy", "context": "c", "options": "### A\n\nnumpy",
              "decision": "numpy", "relates_to": ["vector search", "Nothing like it"]}
    seen = anyio.run(_calls, server, [
        ("create", "adr_create", record),
        ("again", "adr_create", {**record, "status": "proposed", "relates_to": None}),
        ("bad", "adr_create", {**record, "decision": "## Decision\nhidden"}),
        ("empty", "adr_create", {**record, "title": ""}),
    ])
    made = seen["create"].structured_content
    path = project / "docs" / "adr" / "0001-keep-wombat-vectors-in-numpy.md"
    assert made == {"path": str(path), "entity": "ADR 0001: Keep wombat vectors in numpy",
                    "related": ["Vector search"], "missing": ["Nothing like it"], "reindexed": True,
                    "notices": ["not in the graph, so not linked: Nothing like it"]}
    assert seen["again"].structured_content["path"].endswith("0002-keep-wombat-vectors-in-numpy.md")
    assert seen["bad"].is_error and "use '###'" in _text(seen["bad"])
    assert seen["empty"].is_error
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, "0002-keep-wombat-vectors-in-numpy.md"]
    (entity,) = graph.open_entities(memory, [made["entity"]])["entities"]
    assert entity["entityType"] == "decision" and entity["relations"][0]["to"] == "Vector search"
    second = path.parent / "0002-keep-wombat-vectors-in-numpy.md"
    assert {h.path for h in app.search("wombat", mode="keyword").hits} == {str(path), str(second)}


def test_adr_create_continues_the_projects_decisions_series(project, tmp_path, open_app):
    """Issue 39: a project with docs/decisions/0001-0003 got a second series at docs/adr/0001."""
    for number in ("0001", "0002", "0003"):
        write(project, f"docs/decisions/{number}-earlier.md", f"# {number}: Earlier\n\n## Context\n\nc\n")
    app = open_app(None)
    server = build_server(app, memory_file=tmp_path / "memory.jsonl")
    seen = anyio.run(_calls, server, [("create", "adr_create", {
        "title": "Queue the imports", "context": "c", "options": "o", "decision": "d"})])
    path = project / "docs" / "decisions" / "0004-queue-the-imports.md"
    assert seen["create"].structured_content["path"] == str(path) and path.exists()
    assert not (project / "docs" / "adr").exists()


def test_lessons_and_records_are_not_committed_in_a_plain_projects_repository(project, tmp_path, open_app,
                                                                               monkeypatch):
    """Issue 39: docs/mcp.md said lesson_add and adr_create commit; in a plain project (no
    .vault-index/config.yaml) they never did, and they must not: the repository is the person's."""
    import subprocess

    monkeypatch.delenv("VAULT_GIT_COMMIT", raising=False)

    def git(*args):
        return subprocess.run(["git", "-C", str(project), "-c", "user.name=T", "-c", "user.email=t@t", *args],
                              capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "the person's own commit")
    app = open_app(None)
    server = build_server(app, memory_file=tmp_path / "memory.jsonl")
    seen = anyio.run(_calls, server, [
        ("lesson", "lesson_add", {"lesson": "Pin the model", "cause": "c", "detect": "d"}),
        ("adr", "adr_create", {"title": "Keep SQLite", "context": "c", "options": "o", "decision": "d"})])
    assert not seen["lesson"].is_error and not seen["adr"].is_error
    assert git("rev-list", "--count", "HEAD").strip() == "1"  # no commit of ours
    assert git("status", "--porcelain", "--untracked-files=all").split() == [
        "??", "docs/adr/0001-keep-sqlite.md", "??", "docs/lessons.md"]  # written, left for the person


def test_a_write_outside_every_source_is_written_but_not_indexed(project, tmp_path, open_app, monkeypatch):
    content = tmp_path / "elsewhere"
    content.mkdir()
    monkeypatch.setenv("VAULT_CONTENT_DIR", str(content))
    app = open_app(None)
    server = build_server(app, memory_file=tmp_path / "memory.jsonl")
    seen = anyio.run(_calls, server, [("add", "lesson_add", {"lesson": "L", "cause": "c", "detect": "d"})])
    out = seen["add"].structured_content
    assert out["id"] == "L-0001" and out["reindexed"] is False and out["notices"] == []
    assert (content / "docs" / "lessons.md").exists()
    assert [s["path"] for s in app.sources()] == [str(project / "docs")]  # only the project's own docs


def test_a_lesson_in_the_projects_docs_is_searchable_without_indexing_by_hand(project, tmp_path, open_app):
    """ADR 0020: the project's docs/ joins its workspace on the first tool call."""
    app = open_app(None)
    server = build_server(app, memory_file=tmp_path / "memory.jsonl")
    seen = anyio.run(_calls, server, [
        ("add", "lesson_add", {"lesson": "Grease the quagga hinge", "cause": "c", "detect": "d"}),
        ("find", "search_notes", {"query": "quagga hinge", "mode": "keyword"})])
    assert seen["add"].structured_content["reindexed"] is True
    hits = seen["find"].structured_content["hits"]
    assert [h["path"] for h in hits] == [str(project / "docs" / "lessons.md")]


def test_write_tools_refuse_text_that_would_forge_lines_and_write_nothing(project, tmp_path, open_app):
    memory = tmp_path / "memory.jsonl"
    server = build_server(open_app(None), memory_file=memory)
    seen = anyio.run(_calls, server, [
        ("first", "lesson_add", {"lesson": "One", "cause": "c", "detect": "d"}),
        ("forged", "lesson_add", {"lesson": "Do X\u2028## L-0001: Fake lesson", "cause": "c", "detect": "d"}),
        ("retired", "lesson_supersede", {"old_id": "L-0001", "lesson": "Do Y\x0b- status: retired",
                                         "cause": "c", "detect": "d"}),
        ("reason", "lesson_retire", {"id": "L-0001", "reason": "r\x00"}),
        ("title", "adr_create", {"title": "Use\x1fX", "context": "c", "options": "o", "decision": "d"}),
        ("title2", "adr_create", {"title": "Use X\u2028## Decision", "context": "c", "options": "o", "decision": "d"}),
        ("section", "adr_create", {"title": "T", "context": "c\u2028## Decision", "options": "o", "decision": "d"}),
    ])
    for key in ("forged", "retired", "reason", "title", "title2", "section"):
        assert seen[key].is_error and "U+" in _text(seen[key]), key
    every = lessons.list_lessons(project / "docs" / "lessons.md", include_all=True)
    assert [(x.id, x.status) for x in every] == [("L-0001", "active")]
    assert not (project / "docs" / "adr").exists() or list((project / "docs" / "adr").glob("*.md")) == []
    assert not memory.exists()


def test_graph_sources_must_lie_in_the_project_or_a_registered_source(project, tmp_path, open_app):
    memory = tmp_path / "memory.jsonl"
    vault = tmp_path / "vault"
    write(vault, "garden.md", "# Garden\n")
    write(project, "secrets/key.md", "# key\n")
    write(tmp_path, "outside.md", "# outside\n")
    app = open_app(None)
    app.index([str(vault)])
    server = build_server(app, memory_file=memory)

    def entity(key, name, source):
        return (key, "graph_create", {"entities": [{"name": name, "entityType": "t", "source": source}]})

    steps = [
        entity("project", "Docs", "docs/readme.md"),
        entity("source", "Garden", str(vault / "garden.md")),
        entity("exists", "X", str(tmp_path / "outside.md")),
        entity("absent", "X", str(tmp_path / "absent.md")),
        entity("climb", "X", "../../../../../../../../etc/passwd"),
        entity("secret", "X", "secrets/key.md"),
        entity("hidden", "X", ".claude/settings.json"),
    ]
    seen = anyio.run(_calls, server, steps)
    assert not seen["project"].is_error and not seen["source"].is_error
    outside = [_text(seen[k]).replace(str(tmp_path / "outside.md"), "P").replace(str(tmp_path / "absent.md"), "P")
               for k in ("exists", "absent")]
    assert seen["exists"].is_error and seen["absent"].is_error and outside[0] == outside[1]
    assert "not inside the project folder or a registered source" in outside[0]
    assert seen["climb"].is_error and "not inside the project folder" in _text(seen["climb"])
    for key in ("secret", "hidden"):
        assert seen[key].is_error and "hidden or secrets folder" in _text(seen[key]), key
    assert {e["name"] for e in graph.load(memory).entities.values()} == {"Docs", "Garden"}


def test_adr_create_links_a_record_whose_project_lies_outside_every_source(project, tmp_path, open_app):
    memory = tmp_path / "memory.jsonl"
    server = build_server(open_app(None), memory_file=memory)
    seen = anyio.run(_calls, server, [("create", "adr_create", {"title": "T", "context": "c", "options": "o",
                                                                 "decision": "d"})])
    assert seen["create"].structured_content["entity"] == "ADR 0001: T"
    assert seen["create"].structured_content["notices"] == []


def test_a_series_in_doc_adr_is_the_projects_own_and_its_new_record_is_found(project, tmp_path, open_app):
    """Walkthrough D: a project's series in doc/adr (outside docs/, notes/, README.md) got its next
    record with `reindexed: false`, and search never found it; walkthrough H: so /adr's first step
    (recall the record a new one repeats) could not work there. doc/adr and adr/ are now the project's."""
    write(project, "doc/adr/0001-first.md", "# 1. Kafka for order events\n\nDate: 2026-01-01\n\n## Status\n\n"
          "Accepted\n\n## Context\n\nOrders publish events.\n\n## Decision\n\nPublish to Kafka.\n\n"
          "## Consequences\n\nA broker to run.\n")
    server = build_server(open_app(None), memory_file=tmp_path / "memory.jsonl")
    seen = anyio.run(_calls, server, [
        ("before", "search_notes", {"query": "kafka order events", "mode": "keyword"}),
        ("create", "adr_create", {"title": "Events in protobuf", "context": "c", "options": "o",
                                  "decision": "protobuf", "consequences": "a schema registry"}),
        ("after", "search_notes", {"query": "protobuf", "mode": "keyword"})])
    assert seen["before"].structured_content["hits"][0]["path"] == str(project / "doc" / "adr" / "0001-first.md")
    made = seen["create"].structured_content
    assert made["path"] == str(project / "doc" / "adr" / "0002-events-in-protobuf.md") and made["reindexed"]
    assert not [n for n in made["notices"] if "not indexed" in n], made["notices"]
    assert made["path"] in [h["path"] for h in seen["after"].structured_content["hits"]]
