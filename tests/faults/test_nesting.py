"""Fault suite: JSON nested thousands deep in the memory file and in a session transcript.

json recurses once per level; a RecursionError out of one line ended the server's start-up,
crashed `vault-index graph check` (the command meant to list such lines) and made the context
guard fall silent (fail open) on a session far over its threshold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import CLI, REPO, cli_env, write
from vault_index.services.graph import graph
from vault_index.surfaces.server import build_server

TIMEOUT_S = 60
DEEP = 100_000


def _memory_file(tmp_path):
    source = write(tmp_path / "project", "notes/pump.md", "# Pump\n\nthe pump note\n")
    good = {"type": "entity", "name": "Pump", "entityType": "device", "source": str(source),
            "created": "2026-01-01T00:00:00Z"}
    path = tmp_path / "memory.jsonl"
    path.write_text(json.dumps(good) + "\n" + "[" * DEEP + "]" * DEEP + "\n"
                    + '{"type": "entity", "x": ' + "{\"a\": " * DEEP + "1" + "}" * DEEP + "}\n", encoding="utf-8")
    return path


def test_a_deeply_nested_memory_line_is_reported_not_raised(tmp_path, open_app):
    memory = _memory_file(tmp_path)
    problems = graph.check_graph(memory)
    assert [p.split(": ", 1)[0] for p in problems] == [f"{memory}:2", f"{memory}:3"]
    assert all("nested too deeply" in p for p in problems)

    server = build_server(open_app(), memory)  # the start-up reads the graph for its instructions
    assert "graph check" in server.instructions

    done = subprocess.run([CLI, "graph", "check", "--memory-file", str(memory)], env=cli_env(tmp_path / "i.db"),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{memory}:2" in done.stdout + done.stderr and f"{memory}:3" in done.stdout + done.stderr


def _assistant(tokens: int, tool_input: object, message_id: str) -> str:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": tokens - 3,
             "output_tokens": 10}
    return json.dumps({"parentUuid": None, "isSidechain": False, "type": "assistant", "message": {
        "id": message_id, "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "mcp__x__y", "input": tool_input}],
        "usage": usage}})


def test_a_deeply_nested_usage_line_does_not_make_the_context_guard_fail_open(tmp_path):
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "handoff.json").write_text('{"threshold_tokens": 100000}', encoding="utf-8")
    transcript = tmp_path / "session.jsonl"
    deep = "[" * DEEP + "]" * DEEP
    earlier = _assistant(20_000, {"q": "small"}, "msg_1")
    latest = _assistant(300_000, {"q": "x"}, "msg_2").replace('{"q": "x"}', '{"q": ' + deep + "}")
    transcript.write_text(earlier + "\n" + latest + "\n", encoding="utf-8")
    payload = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": str(project),
                          "hook_event_name": "UserPromptSubmit", "prompt": "carry on"})
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "context_guard.py")], input=payload,
                          capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    answer = json.loads(done.stdout)
    assert answer["decision"] == "block" and "300,000" in answer["reason"]
