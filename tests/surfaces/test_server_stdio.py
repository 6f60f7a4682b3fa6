"""The MCP server over stdio, driven by the real MCP SDK client against a spawned `vault-index`."""

from __future__ import annotations

import json
import subprocess

import anyio
from helpers import CLI, cli_env, snapshot, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from vault_index.config import DEFAULT_DB

TOOLS = {"index_paths", "search_notes", "get_note", "list_sources", "remove_source"}
READ_TOOLS = {"search_notes", "get_note", "list_sources"}
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

            indexed = await session.call_tool("index_paths", {"paths": [str(second)]})
            seen["index"] = indexed

            seen["search"] = await session.call_tool("search_notes", {"query": "brake pads groove", "limit": 3})
            seen["search_new"] = await session.call_tool(
                "search_notes", {"query": "echidna", "mode": "keyword", "path_prefix": str(second)}
            )
            seen["get"] = await session.call_tool("get_note", {"path": "bike.md", "max_lines": 3})
            seen["get_outside"] = await session.call_tool("get_note", {"path": "../" + outside.name})
            seen["get_secret"] = await session.call_tool("get_note", {"path": "secrets/keys.md"})
            seen["bad_query"] = await session.call_tool("search_notes", {"query": ""})
            seen["sources"] = await session.call_tool("list_sources", {})
            seen["remove"] = await session.call_tool("remove_source", {"path": str(second)})
            seen["sources_after"] = await session.call_tool("list_sources", {})
            seen["remove_again"] = await session.call_tool("remove_source", {"path": str(second)})
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

    server_env = {k: v for k, v in env.items() if k.startswith(("VAULT_", "HF_"))}
    params = StdioServerParameters(command=CLI, args=[], env=server_env, cwd=str(tmp_path))
    with open(tmp_path / "server-stderr.log", "w") as errlog:
        seen = anyio.run(_session_checks, params, vault, second, outside, errlog)

    assert "4 markdown notes" in seen["instructions"] and str(vault) in seen["instructions"]
    assert "only keyword search is live" in seen["instructions"]

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
    assert sources[str(vault)]["files"] == 4 and sources[str(second)] == {"path": str(second), "files": 1,
                                                                          "chunks": 1}
    assert seen["remove"].structured_content == {"removed_files": 1}
    assert [s["path"] for s in seen["sources_after"].structured_content["sources"]] == [str(vault)]
    assert seen["remove_again"].is_error and "not a registered source" in _text(seen["remove_again"])

    assert (snapshot(vault), snapshot(second)) == before
    assert db.exists()
    assert _stat_or_none(DEFAULT_DB) == home_db_before  # the user's own index was never touched

