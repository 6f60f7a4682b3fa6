"""Other agents' memory (issue 37) through the real MCP tool functions: Claude Code's auto-memory of a
project is found in that project and in no other workspace, and no write tool touches it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.services.writes.write import Caller
from vault_index.surfaces.tool_context import ToolContext, _Vaults
from vault_index.surfaces.tools_graph import recall
from vault_index.surfaces.tools_notes import note_write
from vault_index.surfaces.tools_search import list_sources, search_notes

TOPIC = "# Deploy\n\nThe staging deploy needs the pangolin flag set, or it hangs.\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A fresh HOME with Claude Code's memory of project A (and A's transcript beside it), project B,
    an init vault, and a personal notes folder the person indexed."""
    for name in ("VAULT_PROJECT", "CLAUDE_PROJECT_DIR", "VAULT_CONTENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("VAULT_INDEX_HOME", str(home / ".mcp-memory"))
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "index.db"))
    monkeypatch.setenv("VAULT_EMBED_MODEL", "none")
    monkeypatch.setenv("VAULT_RERANK", "0")
    a, b, vault = tmp_path / "work" / "my.proj", tmp_path / "B", tmp_path / "vault"
    for root in (a, b):
        (root / ".git").mkdir(parents=True)
    write(vault / ".vault-index" / "config.yaml", "roles:\n  owner: {read: ['*'], write: ['*']}\nlocal_role: owner\n")
    write(vault / "notes" / "v.md", "# V\n\nthe vault's pangolin note\n")
    claude = home / ".claude" / "projects" / re.sub("[^A-Za-z0-9]", "-", str(a))  # as Claude Code names it
    topic = write(claude / "memory" / "deploy.md", TOPIC)
    write(claude / "session.md", "pangolin in a transcript-like file beside memory/")  # not memory: never read
    write(home / ".claude" / "CLAUDE.md", "pangolin in the user's own Claude settings")  # never read
    mine = write(home / "notes" / "mine.md", "# Mine\n\nnothing about that animal\n")
    monkeypatch.chdir(home)
    app = App.open(Settings.from_env())
    app.index([str(mine.parent)])
    app.index([str(vault)])
    app.close()
    return {"a": a, "b": b, "vault": vault, "home": home, "topic": topic, "tmp": tmp_path}


def test_claude_code_names_a_projects_folder_by_its_path_with_every_other_character_a_dash():
    from vault_index.services.access.agent_memory import claude_folder_name

    assert claude_folder_name("/work/my.proj") == "-work-my-proj"
    assert claude_folder_name("/home/me/code/a_b c") == "-home-me-code-a-b-c"


def context(monkeypatch, root: Path, tmp: Path, project: Path | None) -> ToolContext:
    """A server's tool context as Claude Code starts one in `project` (None: no project named)."""
    if project is None:
        monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    else:
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.chdir(root)
    app = App.open(Settings.from_env())
    app.serve_from(root)
    return ToolContext(app, tmp / "memory.jsonl", lambda vault, ctx: Caller.local(vault, agent="test"),
                       _Vaults(app, root))


def found(tc: ToolContext) -> set[str]:
    return {hit.path for hit in search_notes(tc, "pangolin flag", None, mode="keyword").hits}


def test_claude_codes_memory_of_a_project_is_found_there_and_nowhere_else(machine, monkeypatch):
    """Old code: the topic file was in no source, so the project's agent never found it."""
    a, topic, tmp = machine["a"], machine["topic"], machine["tmp"]
    tc = context(monkeypatch, a, tmp, a)
    assert found(tc) == {str(topic)}  # not the transcript-like file, not ~/.claude/CLAUDE.md
    assert str(topic) in {hit["path"] for hit in recall(tc, "pangolin flag", None).notes}
    memory = [s for s in list_sources(tc, None).sources if s.get("kind") == "claude-memory"]
    assert [(s["name"], s["path"], s["files"]) for s in memory] == [(f"{a.name}/claude-memory", str(topic.parent), 1)]
    tc.app.close()
    for root, project in ((machine["b"], machine["b"]), (machine["home"], None), (machine["vault"], None)):
        other = context(monkeypatch, root, tmp, project)
        assert str(topic) not in found(other), root  # another project, personal, a vault
        assert not [s for s in list_sources(other, None).sources if s.get("kind")], root
        other.app.close()


@pytest.mark.parametrize("op", ["create", "replace", "append", "prepend", "find_replace", "move"])
def test_a_write_to_claude_codes_memory_is_refused_as_read_only(machine, monkeypatch, op):
    a, topic, tmp = machine["a"], machine["topic"], machine["tmp"]
    tc = context(monkeypatch, a, tmp, a)
    found(tc)  # the first call adopts the memory folder: it is now a source this project sees
    target = topic.parent / "new.md" if op == "create" else topic
    out = note_write(tc, op, str(target), None, body="planted", base_version="0" * 16, find="pangolin",
                     new_path=str(topic.parent / "moved.md"), frontmatter={"title": "x"} if op == "create" else None)
    assert out.status == "refused", out
    assert "another agent's memory, read-only" in out.message and "Claude Code's auto-memory" in out.message
    assert topic.read_text(encoding="utf-8") == TOPIC
    assert sorted(p.name for p in topic.parent.iterdir()) == ["deploy.md"]
    tc.app.close()


def test_a_fact_cannot_cite_another_agents_memory_that_graph_check_would_fail(machine, monkeypatch):
    """Walkthrough J: graph_create took a fact sourced in the project's .serena/memories (a source of
    its own), and `graph check` in the project then failed it as lying in a hidden folder."""
    from mcp.server.mcpserver.exceptions import ToolError
    from vault_index.services.graph import graph
    from vault_index.surfaces.tool_inputs import EntityIn
    from vault_index.surfaces.tools_graph import graph_create

    a, tmp = machine["a"], machine["tmp"]
    memory = write(a / ".serena" / "memories" / "build.md", "# Build\n\nmake all\n")
    tc = context(monkeypatch, a, tmp, a)
    assert str(memory) in {hit.path for hit in search_notes(tc, "make all", None, mode="keyword").hits}
    with pytest.raises(ToolError, match="hidden"):
        graph_create(tc, None, entities=[EntityIn(name="Build", entityType="t", source=str(memory))])
    assert graph.check_graph(tmp / "memory.jsonl", [a]) == []  # nothing written for `graph check` to fail
    tc.app.close()


def test_graph_check_in_the_home_folder_passes_a_fact_graph_create_took_there(machine, monkeypatch):
    """Walkthrough K: with the server started in $HOME, graph_create took a fact sourced in the
    personal notes (~/.mcp-memory/personal/notes), and `graph check` in $HOME failed it as lying in a
    hidden folder: it checked below the home folder only, where graph_create also took the content folder."""
    import subprocess

    from helpers import CLI, cli_env
    from vault_index.surfaces.tool_inputs import EntityIn
    from vault_index.surfaces.tools_graph import graph_create

    home, tmp = machine["home"], machine["tmp"]
    (home / ".git").mkdir()  # the home folder as a project, as CLAUDE_PROJECT_DIR=$HOME makes it
    note = write(home / ".mcp-memory" / "personal" / "notes" / "backups.md", "# Backups\n\nnightly\n")
    tc = context(monkeypatch, home, tmp, home)
    tc.app.index([str(note.parent)])  # the person's notes folder, a personal source (as setup registers it)
    made = graph_create(tc, None, entities=[EntityIn(name="Backups", entityType="t", source=str(note))])
    assert sum(made.added.values()) == 1
    tc.app.close()
    env = cli_env(tmp / "index.db", HOME=str(home), VAULT_INDEX_HOME=str(home / ".mcp-memory"),
                  CLAUDE_PROJECT_DIR=str(home))
    checked = subprocess.run([CLI, "graph", "check", "--memory-file", str(tmp / "memory.jsonl")], env=env,
                             cwd=home, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
