"""Issue 39 item 1 (second walkthrough): a server embeds only what its own workspace sees.

Project A's session ended with chunks still waiting for vectors; the server of project B, started as
the README's `claude mcp add ... "$vi" --watch` starts it (CLAUDE_PROJECT_DIR=B, cwd B), answered with
no notice while its watcher's catch-up sync embedded all of A's pending chunks. The real shipped model
runs here: the catch-up embeds only with a model that loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import anyio
from helpers import CLI, REPO, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

WAIT_S = 120


def _status(env: dict, project: Path) -> dict:
    done = subprocess.run([CLI, "status", "--json"], env={**env, "CLAUDE_PROJECT_DIR": str(project)}, cwd=project,
                          check=True, capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)


async def _b_session(env: dict, project: Path) -> list[list[str]]:
    """B's session: searches until nothing it sees waits for a vector (its catch-up sync is done)."""
    params = StdioServerParameters(command=CLI, args=["--watch"], env={**env, "CLAUDE_PROJECT_DIR": str(project)},
                                   cwd=str(project))
    said: list[list[str]] = []
    with anyio.fail_after(WAIT_S + 30):
        async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
            await session.initialize()
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                answer = (await session.call_tool("search_notes", {"query": "wombat rota"})).structured_content
                said.append(answer["notices"])
                if answer["vector_used"] and not [n for n in answer["notices"] if "no vector" in n]:
                    break
                await anyio.sleep(1)
    return said


def test_project_b_server_leaves_project_a_pending_chunks_to_a(tmp_path, shipped_model_cache):
    home = tmp_path / "home"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "VAULT_RERANK": "0",
           "VAULT_MODEL_CACHE": str(shipped_model_cache),
           "PYTHONPATH": str(REPO / "mcp")}  # this checkout's code (a shared venv may install another)
    a, b = tmp_path / "code" / "a", tmp_path / "code" / "b"
    for i in range(6):
        write(a, f"docs/page-{i}.md", f"# Page {i}\n\nThe narwhal queue, part {i}.\n")
    write(b, "docs/rota.md", "# Rota\n\nThe wombat rota starts Monday.\n")
    for project in (a, b):
        (project / ".git").mkdir()
    write(home / "notes", "first.md", "# First\n\nThe first personal note.\n")
    subprocess.run([CLI, "index", str(home / "notes")], env=env, cwd=home, check=True, capture_output=True,
                   timeout=300)
    write(home / "notes", "later.md", "# Later\n\nA wombat rota swap, written while no session ran.\n")
    before = _status(env, a)  # A's docs indexed by keywords only, as a session that ended first left them
    assert before["chunks"] >= 6 and before["vectors_pending"] == before["chunks"] - 1, before  # first.md has one
    said = anyio.run(_b_session, env, b)
    assert said and not [n for n in said[-1] if "no vector" in n], said  # B's own and personal chunks embedded
    after = _status(env, a)
    assert after["vectors_pending"] == before["vectors_pending"], (before, after)  # A's wait for A
