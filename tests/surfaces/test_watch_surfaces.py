"""`vault-index watch` and `serve --watch`: edits made outside Claude Code reach search."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import anyio
from helpers import CLI, cli_env, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TIMEOUT_S = 60


def keyword_hits(env, query: str) -> list[str]:
    out = subprocess.run([CLI, "search", query, "--mode", "keyword", "--json"], env=env,
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    return [hit["path"] for hit in json.loads(out.stdout)["hits"]]


def test_watch_command_follows_an_editor_and_stops_cleanly_on_ctrl_c(tmp_path, vault):
    env = cli_env(tmp_path / "index.db")
    subprocess.run([CLI, "index", str(vault)], env=env, check=True, capture_output=True, timeout=TIMEOUT_S)
    proc = subprocess.Popen([CLI, "watch"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert "watching" in proc.stderr.readline()
        write(vault, "journal/today.md", "# Today\n\nThe okapiweather front arrived at noon.\n")
        deadline = time.monotonic() + TIMEOUT_S
        while not keyword_hits(env, "okapiweather") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert keyword_hits(env, "okapiweather")[0].endswith("today.md")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, err
    assert "indexed:" in err and "re-indexed 1" in err and "Traceback" not in err


async def _search_after_outside_edit(params, vault) -> list[str]:
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
            await session.initialize()
            write(vault, "garden.md", "# Garden\n\nA tapirsensor replaced the old probe.\n")  # an editor save
            for _ in range(100):
                result = await session.call_tool("search_notes", {"query": "tapirsensor", "mode": "keyword"})
                hits = result.structured_content["hits"]
                if hits:
                    return [hit["path"] for hit in hits]
                await anyio.sleep(0.2)
    return []


def test_server_with_watch_sees_edits_made_while_it_runs(tmp_path, vault):
    env = cli_env(tmp_path / "index.db", VAULT_MEMORY_FILE=str(tmp_path / "memory.jsonl"))
    subprocess.run([CLI, "index", str(vault)], env=env, check=True, capture_output=True, timeout=TIMEOUT_S)
    params = StdioServerParameters(command=str(CLI), args=["serve", "--watch"], env=env)
    paths = anyio.run(_search_after_outside_edit, params, vault)
    assert paths and paths[0].endswith("garden.md")
