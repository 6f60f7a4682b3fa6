"""The terminal's `search` and `recall` apply the local person's role as the stdio server does
(issue 21): with VAULT_ROLE=reader the drafts collection stays out of both, and the CLI returns
the same files as the MCP server started with the same environment in the same folder."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest
from helpers import CLI, REPO, cli_env
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TIMEOUT_S = 60
QUERY = "open questions vault"


def run(env, cwd, *args, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture
def vault(tmp_path):
    root = (tmp_path / "team").resolve()
    env = cli_env(tmp_path / "index.db", CLAUDE_PROJECT_DIR=str(root), VAULT_MEMORY_FILE=str(tmp_path / "mem.jsonl"))
    env.pop("VAULT_ROLE", None)
    run(env, tmp_path, "init", str(root), "-s")
    return root, env


def _paths(proc) -> set[str]:
    return {hit["path"] for hit in json.loads(proc.stdout)["hits"]}


async def _server_paths(params) -> set[str]:
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("search_notes", {"query": QUERY, "mode": "keyword", "limit": 10})
            return {hit["path"] for hit in found.structured_content["hits"]}


def test_cli_search_filters_by_vault_role_like_the_server(vault):
    root, env = vault
    draft = str(root / "drafts" / "open-questions.md")
    editor = _paths(run(env, root, "search", QUERY, "--mode", "keyword", "--json"))
    assert draft in editor  # the config's local_role (editor) reads drafts
    reader_env = {**env, "VAULT_ROLE": "reader"}
    reader = _paths(run(reader_env, root, "search", QUERY, "--mode", "keyword", "--json"))
    assert reader and draft not in reader
    assert all(not p.startswith(str(root / "drafts")) for p in reader)
    # the agent in the same folder, with the same environment, sees exactly these files
    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index"],
                                   env={**reader_env, "PYTHONPATH": str(REPO / "mcp")}, cwd=str(root))
    assert anyio.run(_server_paths, params) == reader
    # recall at the terminal applies the same grants
    recalled = json.loads(run(reader_env, root, "recall", QUERY, "--json").stdout)
    assert recalled["notes"] and draft not in {n["path"] for n in recalled["notes"]}
    assert draft in {n["path"] for n in json.loads(run(env, root, "recall", QUERY, "--json").stdout)["notes"]}


def test_cli_search_as_a_role_that_reads_nothing_is_refused(vault):
    root, env = vault
    config = root / ".vault-index" / "config.yaml"
    config.write_text(config.read_text().replace("roles:\n", "roles:\n  outsider: {read: [], write: []}\n"))
    refused = run({**env, "VAULT_ROLE": "outsider"}, root, "search", QUERY, code=3)
    assert "outsider" in refused.stderr and refused.stdout == ""
