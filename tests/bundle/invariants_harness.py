"""The invariants tests' project: wired the way setup.py wires a clone, with one thing broken at a time.

The project is built the way setup.py wires a clone (.mcp.json, .claude/settings.json hooks), with
a real index, memory graph, golden set, lessons, ADR and CLAUDE.md. Each test breaks exactly one
of them and expects exactly that check to leave ok.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import REPO, cli_env, write
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App

SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))
import invariants  # noqa: E402
from _invariant_content import token_counter  # noqa: E402, F401  (for the tests that import it from here)
from _invariant_wiring import Context, registered_servers  # noqa: E402, F401
from vault_index.config import Settings  # noqa: E402

PYTHON = Path(sys.executable)
NOTE = "# Garden sensor\n\n## Battery\n\nTwo AA cells last nine months.\n\n### Sleep\n\nWakes every ten minutes.\n"
LESSONS = """# Lessons

Lessons learned here.

## L-0001: Re-index after every edit
- status: active
- date: 2026-11-30
- lesson: Re-index after every edit
- cause: A search missed a note written a minute earlier.
- detect: The edit hook test asserts the new text is found.
"""
ADR = """# 0001: Keep the index in SQLite

Status: accepted

## Context

One file, no server.

## Options measured

SQLite and a vector database.

## Decision

SQLite.
"""


def hook_command(script: str) -> str:
    # The shape setup.py writes: interpreter and script both under $CLAUDE_PROJECT_DIR.
    name, _, rest = script.partition(" ")
    command = f'"$CLAUDE_PROJECT_DIR/.venv/bin/python" "$CLAUDE_PROJECT_DIR/scripts/{name}"'
    return f"{command} {rest}".strip()


def settings_hooks() -> dict:
    def group(script, timeout, matcher=None):
        entry = {"matcher": matcher} if matcher else {}
        entry["hooks"] = [{"type": "command", "command": hook_command(script), "timeout": timeout}]
        return [entry]

    return {"hooks": {
        "SessionStart": group("invariants.py --hook", 60),
        "PostToolUse": group("reindex_hook.py", 60, "Write|Edit|MultiEdit"),
        "UserPromptSubmit": group("context_guard.py", 10),
        "PreCompact": group("precompact_snapshot.py", 30),
        "Stop": group("capture_hook.py", 30),
    }}


class Project:
    def __init__(self, root: Path, db: Path, memory: Path):
        self.root, self.db, self.memory = root, db, memory
        self.note = root / "notes" / "garden.md"
        self.claude = root.parent / "claude-config"

    def env(self, **extra: str) -> dict[str, str]:
        env = cli_env(self.db)
        for name in ("VAULT_MEMORY_FILE", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "VAULT_INDEX_PYTHON",
                     "VAULT_INDEX_SETUP_NOTE"):
            env.pop(name, None)  # VAULT_MEMORY_FILE unset: the .mcp.json default names self.memory
        env["CLAUDE_PROJECT_DIR"] = str(self.root)
        env["CLAUDE_CONFIG_DIR"] = str(self.claude)  # never the person's own ~/.claude.json
        env.update(extra)
        return env

    def context(self) -> Context:
        return Context(project=self.root, settings=Settings.from_env())

    def result(self, check) -> invariants.Result:
        return invariants._timed(check, self.context())

    def mcp(self) -> dict:
        return json.loads((self.root / ".mcp.json").read_text())

    def write_json(self, rel: str, data: dict) -> None:
        write(self.root, rel, json.dumps(data, indent=2))


def wired_project(tmp_path, monkeypatch) -> Project:
    """The project, wired and indexed; each test module's `project` fixture returns it."""
    root = tmp_path / "proj"
    db, memory = tmp_path / "state" / "index.db", tmp_path / "state" / "memory.jsonl"
    root.mkdir()
    # The whole folder, not just bin/python: a venv python finds its packages via ../pyvenv.cfg.
    (root / ".venv").symlink_to(PYTHON.parents[1], target_is_directory=True)
    (root / "scripts").symlink_to(SCRIPTS, target_is_directory=True)
    write(root, "notes/garden.md", NOTE)
    write(root, "eval/golden.jsonl", json.dumps(
        {"id": "q1", "query": "how long do the cells last", "file": "notes/garden.md",
         "heading": "Garden sensor > Battery", "also": [{"file": "notes/garden.md",
                                                          "heading": "Garden sensor > Battery > Sleep"}]}) + "\n")
    write(root, "docs/lessons.md", LESSONS)
    write(root, "docs/adr/0001-keep-the-index-in-sqlite.md", ADR)
    write(root, "CLAUDE.md", "# Working here\n\nSearch first. See @docs/guide.md for more.\n")
    write(root, "docs/guide.md", "Cite sources.\n")
    memory.parent.mkdir(parents=True)
    memory.write_text(json.dumps({"type": "entity", "name": "Garden sensor", "entityType": "project",
                                  "source": str(root / "notes" / "garden.md"),
                                  "created": "2026-11-30T12:00:00Z"}) + "\n")
    proj = Project(root, db, memory)
    proj.write_json(".mcp.json", {"mcpServers": {"vault-index": {
        "command": str(root / ".venv" / "bin" / "python"),
        "args": ["-m", "vault_index", "--memory-file", "${VAULT_MEMORY_FILE:-" + str(memory) + "}"]}}})
    proj.write_json(".claude/settings.json", settings_hooks())
    for key, value in proj.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("VAULT_MEMORY_FILE", raising=False)
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT", raising=False)
    monkeypatch.delenv("VAULT_INDEX_SETUP_NOTE", raising=False)
    app = App.open(Settings.from_env(), models=Models.fixed(None, None))
    try:
        app.index([str(root / "notes")])
    finally:
        app.close()
    return proj


def run_script(proj: Project, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / "invariants.py"), *args], input=stdin,
                          capture_output=True, text=True, env=proj.env(**env), cwd=proj.root, timeout=60)
