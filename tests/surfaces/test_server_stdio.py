"""The MCP server over stdio, driven by the real MCP SDK client against a spawned `vault-index`."""

from __future__ import annotations

import json
import subprocess

import anyio
from helpers import CLI, cli_env, snapshot, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from vault_index.config import DEFAULT_DB, DEFAULT_MEMORY_FILE

CORE_TOOLS = {"index_paths", "search_notes", "get_note", "list_sources", "remove_source"}
GRAPH_TOOLS = {"graph_create", "graph_search", "graph_open", "recall"}
WRITE_TOOLS = {"lesson_add", "lesson_supersede", "lesson_retire", "adr_create"}
VAULT_TOOLS = {"note_read", "note_write", "tension_log", "vault_review", "note_links"}  # the curated vault
TOOLS = CORE_TOOLS | GRAPH_TOOLS | WRITE_TOOLS | VAULT_TOOLS  # all declared in surfaces/tools.py
READ_TOOLS = {"search_notes", "get_note", "list_sources", "graph_search", "graph_open", "recall", "note_read",
              "vault_review", "note_links"}
TIMEOUT_S = 60


def _stat_or_none(path):
    return (path.stat().st_mtime_ns, path.stat().st_size) if path.exists() else None


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _session_checks(params, vault, second, outside, errlog) -> dict:
    seen: dict = {}
    with anyio.fail_after(TIMEOUT_S):
        async with (
            stdio_client(params, errlog=errlog) as (read, write_stream),
            ClientSession(read, write_stream) as session,
        ):
            init = await session.initialize()
            seen["instructions"] = init.instructions

            tools = {t.name: t for t in (await session.list_tools()).tools}
            seen["tools"] = tools

            indexed = await session.call_tool("index_paths", {"paths": [str(second)], "name": "zoo"})
            seen["index"] = indexed

            seen["search"] = await session.call_tool("search_notes", {"query": "brake pads groove", "limit": 3})
            seen["search_new"] = await session.call_tool(
                "search_notes", {"query": "echidna", "mode": "keyword", "path_prefix": str(second)}
            )
            seen["search_source"] = await session.call_tool(
                "search_notes", {"query": "echidna brake", "mode": "keyword", "source": "zoo"})
            seen["search_unknown"] = await session.call_tool("search_notes", {"query": "x", "source": "nope"})
            seen["get"] = await session.call_tool("get_note", {"path": "bike.md", "max_lines": 3})
            seen["get_outside"] = await session.call_tool("get_note", {"path": "../" + outside.name})
            seen["get_secret"] = await session.call_tool("get_note", {"path": "secrets/keys.md"})
            seen["bad_query"] = await session.call_tool("search_notes", {"query": ""})
            seen["sources"] = await session.call_tool("list_sources", {})
            seen["remove"] = await session.call_tool("remove_source", {"path": "zoo"})  # by name
            seen["sources_after"] = await session.call_tool("list_sources", {})
            seen["remove_again"] = await session.call_tool("remove_source", {"path": str(second)})
            seen["links"] = await session.call_tool("note_links", {"direction": "neighbors", "path": "bike.md"})
    return seen


def test_every_tool_over_stdio(tmp_path, vault):
    db = tmp_path / "mcp" / "index.db"
    env = cli_env(db)
    # index one vault first so the server's start-up instructions have something to count
    subprocess.run([CLI, "index", str(vault), "-s"], env=env, check=True, capture_output=True, timeout=60)
    second = tmp_path / "second"
    write(second, "spiny.md", "# Spiny\n\nThe echidna lays eggs.\n")
    outside = write(tmp_path, "outside.md", "# Outside\n\nnot for the agent\n")
    before = snapshot(vault), snapshot(second)
    home_db_before = _stat_or_none(DEFAULT_DB)

    server_env = {k: v for k, v in env.items() if k.startswith(("VAULT_", "HF_", "PYTHONPATH"))}
    server_env["VAULT_MEMORY_FILE"] = str(tmp_path / "memory.jsonl")
    params = StdioServerParameters(command=CLI, args=[], env=server_env, cwd=str(tmp_path))
    with open(tmp_path / "server-stderr.log", "w") as errlog:
        seen = anyio.run(_session_checks, params, vault, second, outside, errlog)

    assert "4 markdown notes" in seen["instructions"] and str(vault) in seen["instructions"]
    assert "only keyword search is live" in seen["instructions"]

    assert not seen["links"].is_error and seen["links"].structured_content["data"]["direction"] == "neighbors"
    tools = seen["tools"]
    assert set(tools) == TOOLS
    for name in READ_TOOLS:
        assert tools[name].annotations.read_only_hint is True, name
    for name in TOOLS - READ_TOOLS:
        assert tools[name].annotations.read_only_hint is False, name
    assert tools["remove_source"].annotations.destructive_hint is True
    assert "query" in tools["search_notes"].input_schema["properties"]

    index = seen["index"]
    assert not index.is_error and index.structured_content["indexed"] == 1
    assert index.structured_content["vector_used"] is False

    search = seen["search"]
    assert not search.is_error
    data = search.structured_content
    assert data["query"] == "brake pads groove" and data["vector_used"] is False and data["reranked"] is False
    assert 1 <= len(data["hits"]) <= 3
    top = data["hits"][0]
    assert top["path"] == str(vault / "bike.md") and top["heading"] == "Bike maintenance > Brakes"
    assert "brake pads" in top["snippet"] and top["line_start"] <= top["line_end"]
    assert json.loads(_text(search))["hits"][0]["path"] == top["path"]  # text mirrors the structure

    new = seen["search_new"].structured_content["hits"]
    assert [h["path"] for h in new] == [str(second / "spiny.md")]

    note = seen["get"]
    assert not note.is_error
    lines = (vault / "bike.md").read_text().split("\n")
    assert note.structured_content["content"] == "\n".join(lines[:3])
    assert note.structured_content["truncated"] is True and note.structured_content["title"] == "Bike maintenance"

    for key in ("get_outside", "get_secret"):
        refused = seen[key]
        assert refused.is_error, key
        assert "outside every registered source" in _text(refused) or "never served" in _text(refused), key
        assert "not for the agent" not in _text(refused) and "zanzibar" not in _text(refused)
    assert "outside" in _text(seen["get_outside"])

    assert seen["bad_query"].is_error

    sources = {s["path"]: s for s in seen["sources"].structured_content["sources"]}
    assert set(sources) == {str(vault), str(second)}
    assert sources[str(vault)]["files"] == 4 and sources[str(second)] == {"name": "zoo", "path": str(second),
                                                                          "files": 1, "chunks": 1, "vectors": 0}
    assert sources[str(vault)]["name"] == vault.name  # the default: the folder's base name
    assert [h["path"] for h in seen["search_source"].structured_content["hits"]] == [str(second / "spiny.md")]
    assert seen["search_unknown"].is_error and "zoo" in _text(seen["search_unknown"])
    assert seen["remove"].structured_content == {"removed_files": 1}
    assert [s["path"] for s in seen["sources_after"].structured_content["sources"]] == [str(vault)]
    assert seen["remove_again"].is_error and "not a registered source" in _text(seen["remove_again"])

    assert (snapshot(vault), snapshot(second)) == before
    assert db.exists()
    assert _stat_or_none(DEFAULT_DB) == home_db_before  # the user's own index was never touched



async def _graph_checks(params, vault, errlog) -> dict:
    seen: dict = {}
    garden = str(vault / "garden.md")
    with anyio.fail_after(TIMEOUT_S):
        async with (
            stdio_client(params, errlog=errlog) as (read, write_stream),
            ClientSession(read, write_stream) as session,
        ):
            init = await session.initialize()
            seen["instructions"] = init.instructions
            seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            seen["create"] = await session.call_tool("graph_create", {
                "entities": [{"name": "Garden sensor", "entityType": "project", "source": garden},
                             {"name": "Mira", "entityType": "person", "source": "bike.md"}],
                "observations": [{"entity": "garden sensor", "text": "Capacitive probe lasts longer",
                                  "source": garden}],
                "relations": [{"from": "Mira", "to": "Garden sensor", "relationType": "built", "source": garden}],
            })
            seen["create_again"] = await session.call_tool("graph_create", {
                "entities": [{"name": "GARDEN SENSOR", "entityType": "project", "source": garden}]})
            seen["missing_source"] = await session.call_tool("graph_create", {
                "entities": [{"name": "Ghost", "entityType": "x", "source": "no/such/file.md"}]})
            seen["dangling"] = await session.call_tool("graph_create", {
                "relations": [{"from": "Mira", "to": "Nobody", "relationType": "knows", "source": garden}]})
            seen["too_long"] = await session.call_tool("graph_create", {
                "entities": [{"name": "n" * 201, "entityType": "x", "source": garden}]})
            seen["search"] = await session.call_tool("graph_search", {"query": "capacitive probe", "limit": 5})
            seen["open"] = await session.call_tool("graph_open", {"names": ["mira", "Nobody"]})
            seen["open_empty"] = await session.call_tool("graph_open", {"names": []})
            seen["recall"] = await session.call_tool("recall", {"query": "capacitive probe", "limit": 2})
    return seen


def test_graph_tools_and_recall_over_stdio(tmp_path, vault):
    db = tmp_path / "mcp" / "index.db"
    memfile = tmp_path / "state" / "memory.jsonl"
    env = cli_env(db, VAULT_MEMORY_FILE=str(tmp_path / "env-memory.jsonl"))
    subprocess.run([CLI, "index", str(vault), "-s"], env=env, check=True, capture_output=True, timeout=60)
    before = snapshot(vault)
    home_memory_before = _stat_or_none(DEFAULT_MEMORY_FILE)

    server_env = {k: v for k, v in env.items() if k.startswith(("VAULT_", "HF_", "PYTHONPATH"))}
    server_env["CLAUDE_PROJECT_DIR"] = str(vault)
    # no command, only the option: `vault-index --memory-file X` serves, and X beats the env
    params = StdioServerParameters(command=CLI, args=["--memory-file", str(memfile)], env=server_env,
                                   cwd=str(tmp_path))
    with open(tmp_path / "server-stderr.log", "w") as errlog:
        seen = anyio.run(_graph_checks, params, vault, errlog)

    assert "memory graph holds 0 entities" in seen["instructions"] and "recall" in seen["instructions"]
    tools = seen["tools"]
    assert GRAPH_TOOLS <= set(tools)
    create = tools["graph_create"].annotations
    assert create.read_only_hint is False and create.destructive_hint is False
    for name in GRAPH_TOOLS - {"graph_create"}:
        assert tools[name].annotations.read_only_hint is True, name
    item = tools["graph_create"].input_schema["$defs"]["RelationIn"]
    assert {"from", "to", "relationType", "source"} <= set(item["properties"])

    created = seen["create"]
    assert not created.is_error, _text(created)
    assert created.structured_content["added"] == {"entity": 2, "observation": 1, "relation": 1}
    assert created.structured_content["memory_file"] == str(memfile)
    facts = [json.loads(line) for line in memfile.read_text().splitlines()]
    assert {f["source"] for f in facts} == {str(vault / "garden.md"), str(vault / "bike.md")}  # bike.md: relative
    assert not (tmp_path / "env-memory.jsonl").exists()
    assert seen["create_again"].structured_content["added"]["entity"] == 0
    assert seen["create_again"].structured_content["skipped"][0]["reason"] == "already in the graph"

    assert seen["missing_source"].is_error and "not an existing file" in _text(seen["missing_source"])
    assert seen["dangling"].is_error and "no entity named 'Nobody'" in _text(seen["dangling"])
    assert seen["too_long"].is_error and seen["open_empty"].is_error
    assert len(memfile.read_text().splitlines()) == 4  # the refused calls wrote nothing

    found = seen["search"].structured_content["entities"]
    assert found[0]["name"] == "Garden sensor" and found[0]["score"] > 0
    assert found[0]["observations"] == [{"text": "Capacitive probe lasts longer", "source": str(vault / "garden.md")}]
    assert found[0]["relations"][0]["from"] == "Mira"  # the wire uses the file's field names

    opened = seen["open"].structured_content
    assert [e["name"] for e in opened["entities"]] == ["Mira"] and opened["missing"] == ["Nobody"]

    recalled = seen["recall"]
    assert not recalled.is_error, _text(recalled)
    data = recalled.structured_content
    assert data["notes"][0]["path"] == str(vault / "garden.md") and data["notes"][0]["display"] == "garden.md"
    assert "capacitive probe" in data["notes"][0]["snippet"]
    assert data["lessons"] == [] and len(data["notes"]) <= 2
    assert data["graph"][0]["name"] == "Garden sensor" and data["graph"][0]["display"] == "garden.md"

    assert snapshot(vault) == before
    assert _stat_or_none(DEFAULT_MEMORY_FILE) == home_memory_before


def test_a_fresh_project_is_indexed_after_the_handshake_before_any_tool_call(tmp_path):
    """Walkthrough F: the server indexed a fresh project only at the agent's first tool call, so the
    first prompt's hook search found nothing (its README held the answer) and the notice "a running
    server embeds them" was untrue. After the handshake alone, the project's notes are in the index."""
    import sqlite3
    import time

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    write(project, "README.md", "# Proj\n\n## Run the service locally\n\nRun `make dev` and open port 8080.\n")
    write(project, "docs/guide.md", "# Guide\n\nThe okapi guide.\n")
    db = tmp_path / "index.db"
    env = {k: v for k, v in cli_env(db).items() if k.startswith(("VAULT_", "HF_", "PYTHONPATH", "PATH", "HOME"))}
    params = StdioServerParameters(command=CLI, args=[], env={**env, "CLAUDE_PROJECT_DIR": str(project)},
                                   cwd=str(project))

    def indexed() -> set[str]:
        with sqlite3.connect(db) as conn:
            return {path for (path,) in conn.execute("SELECT path FROM files")}

    async def session() -> set[str]:
        with anyio.fail_after(TIMEOUT_S):
            async with stdio_client(params) as (read, send), ClientSession(read, send) as client:
                await client.initialize()  # and no tool call at all
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and len(indexed()) < 2:
                    await anyio.sleep(0.2)
                return indexed()

    assert anyio.run(session) == {str(project / "README.md"), str(project / "docs" / "guide.md")}
