"""Issue 22 (Medium): one deeply nested JSON line must not end the plugin shim (and the server with
it): it answers a parse error and goes on answering. On the old code the shim died with a
RecursionError and never answered the lines after it."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import REPO

SHIM = """
import sys, time
sys.path.insert(0, {scripts!r})
from _plugin_shim import Shim
def build():
    time.sleep(600)  # never done in this test: the shim answers from its snapshot
raise SystemExit(Shim(build).run())
"""


def test_a_deeply_nested_line_is_a_parse_error_and_the_shim_keeps_serving():
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    lines = ["[" * 200_000 + "]" * 200_000, '{"a":' * 50_000 + "1" + "}" * 50_000,
             json.dumps(initialize), json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})]
    run = subprocess.run([sys.executable, "-c", SHIM.format(scripts=str(REPO / "scripts"))],
                         input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    assert "RecursionError" not in run.stderr and run.returncode == 0
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    assert [a.get("id") for a in answers] == [None, None, 1, 2]
    assert answers[0]["error"]["code"] == -32700
    assert answers[2]["result"]["serverInfo"] and answers[3]["result"]["tools"]
