"""Issue 21 must-show 3: `serve --http` in a vault serves that vault and nothing else (ADR 0020)."""

from __future__ import annotations

import subprocess

import httpx
from helpers import CLI, write
from remote_harness import CALL_TIMEOUT_S, make_vault, new_token, open_client, run, spawn


async def _search(url: str, token: str, query: str) -> list[str]:
    stack, client = await open_client(url, token, "legacy")
    async with stack:
        found = await client.call_tool("search_notes", {"query": query, "mode": "keyword", "limit": 10})
        listed = await client.call_tool("list_sources", {})
        return [h["path"] for h in found.structured_content["hits"]], listed.structured_content["sources"]


def test_serve_http_in_a_vault_serves_only_the_vault(tmp_path):
    root, env = make_vault(tmp_path)
    outside = write(tmp_path / "personal", "ocelot.md", "# Ocelot\n\nThe ocelot ledger lives outside the vault.\n")
    personal_env = {k: v for k, v in env.items() if k != "CLAUDE_PROJECT_DIR"}
    done = subprocess.run([CLI, "index", str(outside.parent), "-s"], env=personal_env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=CALL_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    token = new_token(env, "owner")["token"]
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    with spawn(env) as base:
        hits, sources = run(_search, base + "/mcp", token, "ocelot ledger")
        assert hits == []  # the word exists only in a note outside the vault
        assert [s["path"] for s in sources] == [str(root)]
        inside, _ = run(_search, base + "/mcp", token, "brake groove")
        assert str(root / "notes" / "bikes.md") in inside
        answer = httpx.post(base + "/mcp", json=initialize, timeout=30, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})
        assert answer.status_code == 200, answer.text
        assert str(outside.parent) not in answer.text and str(tmp_path / "personal") not in answer.text
