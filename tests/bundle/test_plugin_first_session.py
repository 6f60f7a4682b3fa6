"""Must-show 3 of issue 10, with the real Claude Code CLI and a fake model: the plugin's first
session in a cold data folder (no environment yet) has its MCP server connected, and its
SessionStart output gives only advice a plugin user can follow.

The install is the real one (venv + pip from the package index, one to a few minutes; CI's pip
cache is warm from setup.py), so this is the slowest test of the suite; it is bounded by the
SessionStart hook's own 600 s timeout.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer

import claude_harness
import pytest
from claude_harness import FINAL_TEXT, ROOT, VENV_PYTHON, FakeApiHandler, FakeModel, Sandbox, text_block
from helpers import claude_cli

pytestmark = [
    pytest.mark.extras,  # .ci/run installs the claude CLI, then runs these with -m extras
    pytest.mark.skipif(claude_cli() is None, reason="the claude CLI is not installed (set CLAUDE_CLI)"),
    pytest.mark.skipif(not VENV_PYTHON.exists(), reason=f"no {VENV_PYTHON}: run setup.py first"),
]
INSTALL_TIMEOUT_S = 600  # the SessionStart hook's own timeout in hooks/hooks.json
CLONE_ONLY = ("scripts/invariants.py", "setup.py", ".venv", "vault-index index", "scripts/learn.py",
              "$CLAUDE_PLUGIN_ROOT")


@pytest.fixture(scope="module")
def fake_api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApiHandler)
    server.daemon_threads = True
    server.fake = FakeModel()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_first_session_in_a_cold_data_folder_connects_and_advises_only_what_works(tmp_path, fake_api,
                                                                                 monkeypatch):
    monkeypatch.setattr(claude_harness, "CLAUDE_TIMEOUT_S", INSTALL_TIMEOUT_S + 60)
    sandbox = Sandbox(tmp_path, fake_api)
    del sandbox.env["VAULT_INDEX_DB"], sandbox.env["VAULT_MEMORY_FILE"]  # plugin_run picks its data folder
    data = sandbox.config / "plugins" / "data" / "vault-index-inline"
    assert not data.exists()  # cold: no environment, no index
    fake_api.fake.script([text_block(FINAL_TEXT)])

    run = sandbox.claude("--plugin-dir", str(ROOT), prompt="What do my notes say about the garden?")

    assert {"name": "plugin:vault-index:vault-index", "status": "connected"} in run.init["mcp_servers"], \
        run.init["mcp_servers"]
    assert (data / "venv").is_dir() and (data / "install-stamp.json").is_file()
    [start] = run.hooks("SessionStart")
    assert start["exit_code"] == 0, start
    said = json.loads(start["stdout"]) if start["stdout"].strip() else {}
    context = said.get("hookSpecificOutput", {}).get("additionalContext", "") + said.get("systemMessage", "")
    assert "installed its environment" in context, start
    for phrase in CLONE_ONLY:
        assert phrase not in context, (phrase, context)
    assert run.final["result"] == FINAL_TEXT, run.why()
    # CLAUDE.md is not loaded for a plugin: the "search before answering" guidance reaches the
    # model through the server's instructions (the shim's, while the environment was building)
    [main] = fake_api.fake.of_kind("main")
    (tmp_path / "main-request.json").write_text(json.dumps(main["body"], indent=1))
    assert "search it with recall or search_notes before answering" in json.dumps(main["body"]), \
        f"no search-first guidance in the request (see {tmp_path / 'main-request.json'})"
    tools = {t.get("name", "") for t in main["body"].get("tools", [])}
    assert "mcp__plugin_vault-index_vault-index__recall" in tools, sorted(tools)
