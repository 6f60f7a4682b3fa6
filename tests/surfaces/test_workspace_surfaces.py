"""The workspace rule (ADR 0020) on the MCP surfaces a search test does not reach: the resource
list, and note_write with an absolute path, through the real SDK client in process."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from helpers import fresh_machine
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.surfaces.server import build_server

from mcp import Client


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """Personal ~/notes (with an init vault inside it), project A (the agent's) and project B."""
    home = fresh_machine(monkeypatch, tmp_path, rerank=False)
    write(home / "notes" / "mine.md", "# Mine\n\nmy own note\n")
    vault = home / "notes" / "team"
    write(vault / ".vault-index" / "config.yaml", "roles: {}\n")
    write(vault / "notes" / "team-plan.md", "# Team plan\n\nthe team's note\n")
    a, b = tmp_path / "A", tmp_path / "B"
    for root, name in ((a, "alpha-adr.md"), (b, "beta-secret.md")):
        (root / ".git").mkdir(parents=True)
        write(root / "docs" / name, f"# {name}\n\ntext\n")
    monkeypatch.chdir(home)
    app = App.open(Settings.from_env())
    app.index([str(home / "notes")])
    app.index([str(vault)])  # as `init` registers it
    app.close()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(b))
    app = App.open(Settings.from_env())
    app.adopt_workspace()  # B's agent has run once: B's docs are in the index, as B's
    app.close()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(a))
    monkeypatch.chdir(a)
    return {"home": home, "vault": vault, "a": a, "b": b, "tmp": tmp_path}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def _session(server, steps):
    out = {}
    async with Client(server) as client:
        for key, tool, arguments in steps:
            result = await client.call_tool(tool, arguments)
            out[key] = result.structured_content
        out["resources"] = {r.name for r in (await client.list_resources()).resources}
    return out


def test_the_resource_list_names_only_this_workspaces_notes(machine):
    """Old code listed every note in the index: B's docs and the vault's notes, by name."""
    server = build_server(App.open(Settings.from_env()), memory_file=machine["tmp"] / "memory.jsonl")
    out = anyio.run(_session, server, [("sources", "list_sources", {})])  # the first call adopts A's docs
    assert {"alpha-adr.md", "mine.md"} <= out["resources"]
    assert not {name for name in out["resources"] if "beta" in name or "team" in name}, out["resources"]


def test_note_write_cannot_reach_a_vault_inside_the_personal_folder(machine):
    """Old code wrote it as a plain note of ~/notes, past the vault's roles, schema and hooks."""
    target = machine["vault"] / "notes" / "sneaky.md"
    server = build_server(App.open(Settings.from_env()), memory_file=machine["tmp"] / "memory.jsonl")
    out = anyio.run(_session, server, [
        ("write", "note_write", {"op": "create", "path": str(target), "body": "planted",
                                 "frontmatter": {"title": "Sneaky"}}),
        ("read", "note_read", {"path": str(machine["vault"] / "notes" / "team-plan.md")}),
    ])
    # issue 36: refused in the words a missing note gets (a vault the project does not see)
    assert out["write"]["status"] == "not_found", out["write"]
    assert not target.exists()
    assert out["read"]["status"] != "ok", out["read"]


def test_a_vault_server_cannot_name_a_note_outside_the_vault_as_a_facts_source(machine, monkeypatch):
    """Served from a vault (as `serve --http --vault` from the home folder is), an editor's fact
    sourced in the person's own notes was written to the one memory graph, where every project's
    recall showed it, and "not an existing file" told it which personal files exist."""
    vault, home = machine["vault"], machine["home"]
    write(vault / ".vault-index" / "config.yaml", 'roles:\n  editor:\n    read: ["*"]\n    write: ["*"]\n')
    monkeypatch.setenv("VAULT_ROLE", "editor")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    monkeypatch.chdir(home)
    memory = machine["tmp"] / "memory.jsonl"
    server = build_server(App.open(Settings.from_env(), start=vault), memory_file=memory, vault_root=vault)
    entity = {"name": "Planted", "entityType": "note"}
    errors = anyio.run(_errors, server, [
        {"entities": [{**entity, "source": str(home / "notes" / "mine.md")}]},
        {"entities": [{**entity, "source": str(home / "notes" / "missing.md")}]},
        {"entities": [{**entity, "source": "notes/team-plan.md"}]},  # relative: the vault's own note
    ])
    assert errors[0] and errors[1], errors  # old code: the first was written
    assert errors[0].replace("mine", "X") == errors[1].replace("missing", "X")  # no existence oracle
    assert errors[2] is None, errors[2]
    assert "mine.md" not in memory.read_text() and str(vault / "notes" / "team-plan.md") in memory.read_text()


async def _errors(server, facts) -> list[str | None]:
    out = []
    async with Client(server) as client:
        for arguments in facts:
            result = await client.call_tool("graph_create", arguments)
            out.append("\n".join(c.text for c in result.content) if result.is_error else None)
    return out


def test_an_unknown_source_name_lists_only_this_workspaces_sources(machine, monkeypatch):
    """Old code answered with every source name in the index: to a vault's reader, the names of
    the person's folders and of other projects' sources."""
    vault = machine["vault"]
    write(vault / ".vault-index" / "config.yaml", "roles:\n  reader:\n    read: [notes]\n    write: []\n")
    monkeypatch.setenv("VAULT_ROLE", "reader")
    server = build_server(App.open(Settings.from_env(), start=vault), memory_file=machine["tmp"] / "m.jsonl",
                          vault_root=vault)

    async def ask():
        async with Client(server) as client:
            result = await client.call_tool("search_notes", {"query": "plan", "source": "nope"})
            return "\n".join(c.text for c in result.content)

    said = anyio.run(ask)
    assert "no source is named 'nope'" in said, said
    assert said.rsplit("sources: ", 1)[1].strip() == "team", said  # not "docs, notes, team"


def test_a_taken_source_name_does_not_tell_an_agent_where_the_other_source_is(machine, monkeypatch):
    """index_paths(name=...) with another workspace's source name: old code's refusal named that
    source's folder (here the person's ~/notes) to a vault's editor."""
    vault = machine["vault"]
    write(vault / ".vault-index" / "config.yaml", 'roles:\n  editor:\n    read: ["*"]\n    write: ["*"]\n')
    monkeypatch.setenv("VAULT_ROLE", "editor")
    server = build_server(App.open(Settings.from_env(), start=vault), memory_file=machine["tmp"] / "m.jsonl",
                          vault_root=vault)

    async def ask():
        async with Client(server) as client:
            result = await client.call_tool("index_paths", {"paths": [str(vault / "notes")], "name": "notes"})
            return result.is_error, "\n".join(c.text for c in result.content)

    refused, said = anyio.run(ask)
    assert refused and "already used" in said, said
    assert str(machine["home"] / "notes") not in said.replace(str(vault), "the vault"), said


def test_a_projects_agent_cannot_read_or_write_a_vault_inside_the_project(machine):
    """A vault inside project A (A/kb): old code wrote A's agent's notes into it as plain project
    notes (no vault roles, schema, hooks or commit) and read its drafts, which its roles may hide."""
    a = machine["a"]
    kb = a / "kb"
    write(kb / ".vault-index" / "config.yaml", "roles:\n  reader:\n    read: [research]\n    write: []\n"
          "local_role: reader\n")
    write(kb / "drafts" / "secret-draft.md", "# Draft\n\nnot for readers\n")
    write(a / "docs" / "loose.md", "# Loose\n\na project note\n")
    server = build_server(App.open(Settings.from_env()), memory_file=machine["tmp"] / "m.jsonl")
    planted = kb / "drafts" / "planted.md"
    moved = kb / "research" / "moved.md"

    async def session():
        said = []
        async with Client(server) as client:
            for tool, arguments in (
                ("note_write", {"op": "create", "path": "kb/drafts/planted.md", "body": "x"}),
                ("note_write", {"op": "create", "path": str(planted), "body": "x"}),
                ("note_read", {"path": "kb/drafts/secret-draft.md"}),
                ("note_write", {"op": "move", "path": "docs/loose.md", "new_path": "kb/research/moved.md"}),
            ):
                result = await client.call_tool(tool, arguments)
                said.append((result.is_error, (result.structured_content or {}).get("status")))
        return said

    answers = anyio.run(session)
    # old code: written, stale (already there), ok, written; issue 36: each answers as a missing note
    assert all(error or status == "not_found" for error, status in answers), answers
    assert not planted.exists() and not moved.exists() and (a / "docs" / "loose.md").exists()


def test_the_projects_dashboard_leaves_out_a_vault_inside_the_project(machine):
    """vault_review in project A listed the notes of the vault A/kb (old code: its drafts too)."""
    a = machine["a"]
    write(a / "kb" / ".vault-index" / "config.yaml", "roles:\n  reader:\n    read: [research]\n    write: []\n"
          "local_role: reader\n")
    write(a / "kb" / "drafts" / "secret-draft.md", "# Draft\n\nnot for readers\n")
    server = build_server(App.open(Settings.from_env()), memory_file=machine["tmp"] / "m.jsonl")

    async def review():
        async with Client(server) as client:
            return (await client.call_tool("vault_review", {"recent_days": 30})).structured_content

    out = anyio.run(review)
    assert out["status"] in ("ok", "passed"), out
    assert "secret-draft" not in str(out["data"]), out["data"]
    assert out["data"]["notes"] == 1 and "kb" not in out["data"]["collections"], out["data"]  # A's own


def test_a_project_without_docs_keeps_its_graph_facts_to_itself(machine, monkeypatch):
    """Project C has no docs/ or notes/, so no source of its own: old code showed the facts its
    agent recorded (sourced in C's README) in every other project's graph_search and recall."""
    c = machine["tmp"] / "C"
    (c / ".git").mkdir(parents=True)
    write(c / "README.md", "# C\n\nthe plan\n")
    memory = machine["tmp"] / "memory.jsonl"

    def session(project: Path, calls):
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
        monkeypatch.chdir(project)
        server = build_server(App.open(Settings.from_env()), memory_file=memory)

        async def run():
            async with Client(server) as client:
                return [(await client.call_tool(tool, arguments)).structured_content for tool, arguments in calls]
        return anyio.run(run)

    fact = {"entities": [{"name": "Gamma acquisition", "entityType": "decision", "source": "README.md"}]}
    session(c, [("graph_create", fact)])
    ask = [("graph_search", {"query": "acquisition"}), ("recall", {"query": "Gamma acquisition"})]
    found, recalled = session(machine["a"], ask)
    assert found["entities"] == [] and recalled["graph"] == [], (found, recalled)
    found, _ = session(c, ask)
    assert [e["name"] for e in found["entities"]] == ["Gamma acquisition"]


def test_a_resync_of_every_source_names_no_other_projects_files(machine):
    """index_paths() with no paths re-syncs the sources A sees (issue 36: it re-synced every
    workspace's); old code's answer listed the problems of every workspace's files, so A's agent
    read B's file names. The terminal's status the same."""
    (machine["b"] / "docs" / "zeta-acquisition.md").write_bytes(b"\x00\x01 not text")
    server = build_server(App.open(Settings.from_env()), memory_file=machine["tmp"] / "m.jsonl")
    out = anyio.run(_session, server, [("sync", "index_paths", {})])
    assert not [p for p in out["sync"]["problems"] if "zeta" in p], out["sync"]
    app = App.open(Settings.from_env())
    try:
        assert not app.store.problems()  # A's agent did not even read B's files
        app.index(None)  # the person's sync of every source records B's problem
        assert app.store.problems() and not app.status()["problems"]  # B's problem is B's to see
    finally:
        app.close()


def test_the_first_search_in_a_project_waits_for_its_notes_vectors(machine):
    """The first tool call indexes the project's docs and embeds them on a thread. Old code let
    the first search answer before that thread had embedded anything, with the notice "no
    vectors ... yet; run `vault-index index`" although the server was embedding them right then."""
    import time

    from helpers import FakeEmbedder
    from vault_index.engine.embedding.models import Models

    class SlowEmbedder(FakeEmbedder):
        def embed_documents(self, texts):
            time.sleep(0.5)  # a real model's load and run; well under the first answer's wait
            return super().embed_documents(texts)

    app = App.open(Settings.from_env(), models=Models.fixed(SlowEmbedder()))
    app.index()  # the personal notes' vectors; the project's docs are not in the index yet
    server = build_server(app, memory_file=machine["tmp"] / "memory.jsonl")
    out = anyio.run(_session, server, [("found", "search_notes", {"query": "alpha adr text", "mode": "vector"})])
    found = out["found"]
    assert found["vector_used"] and not [n for n in found["notices"] if n.startswith("no vectors")], found
    assert [Path(h["path"]).name for h in found["hits"]][:1] == ["alpha-adr.md"], found["hits"]
