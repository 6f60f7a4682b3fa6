"""Claude Code stops an MCP server with SIGINT first; the server must go at once, stdin still open."""

from __future__ import annotations

import json
import signal
import subprocess

from helpers import CLI, cli_env


def test_sigint_stops_the_server_while_its_stdin_is_still_open(tmp_path):
    env = cli_env(tmp_path / "index.db", VAULT_MEMORY_FILE=str(tmp_path / "memory.jsonl"))
    proc = subprocess.Popen([CLI, "serve", "--watch"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "test", "version": "0"}}}
        proc.stdin.write(json.dumps(hello) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving, stdin left open
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 130
    finally:
        proc.kill()
        _, err = proc.communicate()
    assert "Traceback" not in err
