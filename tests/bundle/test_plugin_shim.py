"""The plugin's first session: the shim answers the handshake at once, lists the real tools, and
hands over to the real server when the environment is built; an install cut short resumes.

scripts/tools-snapshot.json is what the shim answers before the real server exists; the first
test keeps it equal to the live server's answer. After changing a tool, regenerate it with
`VAULT_WRITE_TOOL_SNAPSHOT=1 .venv/bin/python -m pytest tests/bundle/test_plugin_shim.py -k snapshot`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from helpers import REPO
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(REPO / "scripts"))
import plugin_run  # noqa: E402

SNAPSHOT = REPO / "scripts" / "tools-snapshot.json"
PROBED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TIMEOUT_S = 120
BUILD_DELAY_S = 4.0


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "CLAUDE_"))}
    env.update(VAULT_INDEX_DB=str(tmp_path / "index.db"), VAULT_MEMORY_FILE=str(tmp_path / "memory.jsonl"),
               VAULT_EMBED_MODEL="none", VAULT_RERANK="0", PYTHONPATH=str(REPO / "mcp"),
               VAULT_LOCK_DIR=os.environ.get("VAULT_LOCK_DIR", str(tmp_path / "locks")))
    return env


def _raw_initialize(env: dict, version: str) -> dict:
    """One initialize over raw stdio (to see which protocol versions the server accepts)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
    run = subprocess.run([sys.executable, "-m", "vault_index", "serve"], input=json.dumps(request) + "\n",
                         capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    return json.loads(run.stdout.splitlines()[0])["result"]


async def _live_tools(env: dict) -> list[dict]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index", "serve"], env=env)
    with anyio.fail_after(TIMEOUT_S), open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]


def test_the_tool_snapshot_equals_the_live_server(tmp_path):
    env = _env(tmp_path)
    live = anyio.run(_live_tools, env)
    if os.environ.get("VAULT_WRITE_TOOL_SNAPSHOT") == "1":
        answers = {v: _raw_initialize(env, v) for v in PROBED_VERSIONS}
        accepted = [v for v, a in answers.items() if a["protocolVersion"] == v]
        first = answers[accepted[-1]]
        snapshot = {"initialize": {"protocolVersion": first["protocolVersion"],
                                   "capabilities": first["capabilities"], "serverInfo": first["serverInfo"]},
                    "protocol_versions": accepted, "tools": live}
        SNAPSHOT.write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert stored["tools"] == live, ("scripts/tools-snapshot.json is out of date; regenerate it "
                                     "(this module's docstring says how)")


SHIM_MAIN = """
import sys, time
sys.path.insert(0, {scripts!r})
from _plugin_shim import Shim
def build():
    time.sleep({delay})
    return [sys.executable, "-m", "vault_index", "serve"]
raise SystemExit(Shim(build).run())
"""


async def _through_shim(env: dict, note_dir: Path) -> dict:
    code = SHIM_MAIN.format(scripts=str(REPO / "scripts"), delay=BUILD_DELAY_S)
    params = StdioServerParameters(command=sys.executable, args=["-c", code], env=env)
    seen: dict = {}
    with anyio.fail_after(TIMEOUT_S), open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            started = time.monotonic()
            init = await session.initialize()
            seen["tools"] = [t.name for t in (await session.list_tools()).tools]
            seen["answered_in"] = time.monotonic() - started
            seen["instructions"] = init.instructions or ""
            # a call before the build ends waits for it, then the real server answers
            result = await session.call_tool("index_paths", {"paths": [str(note_dir)]})
            assert not result.is_error, result.content
            found = await session.call_tool("search_notes", {"query": "wombat ledger", "mode": "keyword"})
            seen["hits"] = [h["path"] for h in found.structured_content["hits"]]
            seen["after_build"] = [t.name for t in (await session.list_tools()).tools]
    return seen


def test_the_shim_connects_at_once_and_hands_over_to_the_real_server(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ledger.md").write_text("# Ledger\n\nThe wombat ledger balances on Fridays.\n", encoding="utf-8")
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    seen = anyio.run(_through_shim, {**_env(tmp_path), "CLAUDE_PROJECT_DIR": str(tmp_path)}, notes)
    assert seen["answered_in"] < BUILD_DELAY_S  # handshake and tool list came before the build ended
    assert seen["tools"] == [t["name"] for t in stored["tools"]]
    assert "search it with recall or search_notes before answering" in seen["instructions"]
    assert [Path(p).name for p in seen["hits"]] == ["ledger.md"]
    assert seen["after_build"] == seen["tools"]


class StopHalfway:
    """An installer that does its first step, then dies (as a closed session kills it)."""

    def __init__(self):
        self.seen_partial: list[bool] = []

    def __call__(self, root: Path, venv: Path, log) -> None:
        done = venv / "step-one-done"
        self.seen_partial.append(done.exists())
        if not done.exists():
            done.write_text("downloaded")
            raise OSError("killed")
        python = plugin_run.venv_python(venv)
        python.parent.mkdir(parents=True, exist_ok=True)
        python.write_text("")


def test_an_install_cut_short_resumes_and_only_a_finished_venv_is_put_in_place(tmp_path):
    root, data = tmp_path / "plugin", tmp_path / "data"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    installer = StopHalfway()
    with pytest.raises(OSError):
        plugin_run.ensure_environment(root, data, lambda m: None, installer)
    assert not (data / "venv").exists() and not plugin_run.is_ready(root, data)
    python, installed = plugin_run.ensure_environment(root, data, lambda m: None, installer)
    assert installer.seen_partial == [False, True]  # the second run found the first one's work
    assert installed and python.exists() and plugin_run.is_ready(root, data)
    assert (data / "venv" / "step-one-done").exists() and not (data / plugin_run.PARTIAL_NAME).exists()
    # a plugin update does not resume a folder built for another version
    (root / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    (data / plugin_run.PARTIAL_NAME).mkdir()
    (data / plugin_run.PARTIAL_NAME / "step-one-done").write_text("old")
    (data / plugin_run.PARTIAL_STAMP_NAME).write_text("{}")
    with pytest.raises(OSError):
        plugin_run.ensure_environment(root, data, lambda m: None, StopHalfway())
    assert (data / "venv" / "step-one-done").read_text() == "downloaded"  # the old venv still serves
