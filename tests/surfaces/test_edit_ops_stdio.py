"""The edit operations over stdio: a spawned `vault-index serve --vault DIR`, driven by the real MCP
SDK client, on an indexed plain notes folder and on a vault made by `vault-index init`."""

from __future__ import annotations

import subprocess

import anyio
import pytest
from helpers import CLI, cli_env, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TIMEOUT_S = 90
NOTE = "# Trip\n\n## Packing\n\nboots\n\n## Route\n\nnorth ridge quokka\n"


async def _session(params, calls):
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
            await session.initialize()
            return [(await session.call_tool(name, args)).structured_content for name, args in calls]


@pytest.mark.parametrize("kind", ["plain", "vault"])
def test_section_replace_and_move_over_stdio_are_searchable_at_once(tmp_path, kind):
    env = cli_env(tmp_path / "home" / "index.db")
    env.pop("CLAUDE_PROJECT_DIR", None)
    env.pop("VAULT_ROLE", None)
    root = tmp_path / kind
    if kind == "plain":
        write(root, "trips/alps.md", NOTE)
        write(root, "index.md", "See [[alps]].\n")
        folder = "trips"
    else:
        subprocess.run([CLI, "init", str(root), "--no-index"], env=env, check=True, capture_output=True)
        write(root, "research/alps.md", "---\ntitle: Trip\nstatus: draft\ncreated: 2026-01-02\nupdated: "
                                        "2026-01-02\n---\n" + NOTE)
        folder = "research"
    subprocess.run([CLI, "index", str(root)], env=env, check=True, capture_output=True, timeout=TIMEOUT_S)
    params = StdioServerParameters(command=CLI, args=["serve", "--vault", str(root)], env=env, cwd=str(root))
    path = f"{folder}/alps.md"
    read, = anyio.run(_session, params, [("note_read", {"path": path})])
    section, moved, found = anyio.run(_session, params, [
        ("note_write", {"op": "replace_section", "path": path, "heading": "Route", "body": "south face quokka",
                        "base_version": read["version"]}),
        ("note_write", {"op": "move", "path": path, "new_path": f"{folder}/alps-2026.md"}),
        ("search_notes", {"query": "quokka", "mode": "keyword"}),
    ])
    assert section["status"] == "written", section
    assert moved["status"] == "written", moved
    assert (root / folder / "alps-2026.md").read_text().endswith("## Packing\n\nboots\n\n## Route\n\nsouth face "
                                                                  "quokka\n")
    assert [hit["path"] for hit in found["hits"]][:1] == [str(root / folder / "alps-2026.md")]
    assert "south face" in found["hits"][0]["snippet"]
