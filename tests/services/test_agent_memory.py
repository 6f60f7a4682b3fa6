"""Other agents' memory in a project (issue 37, services/access/agent_memory.py): Cline's memory-bank/
and Serena's .serena/memories/ are searched in their project only, and every write path refuses them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CLI, REPO, fresh_machine
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.services.curation import adr, lessons
from vault_index.services.writes.edit_ops import write_op
from vault_index.services.writes.write import Caller

BANK = "# Product context\n\nThe billing service talks to the quokka gateway. See [[docs/gateway]].\n"
SERENA = "# Style\n\nSerena remembers: quokka modules use tabs.\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def env(monkeypatch, tmp_path):
    home = fresh_machine(monkeypatch, tmp_path, rerank=False)
    a = tmp_path / "code" / "A"
    (a / ".git").mkdir(parents=True)
    (tmp_path / "code" / "B" / ".git").mkdir(parents=True)
    files = {"bank": write(a / "memory-bank" / "productContext.md", BANK),
             "serena": write(a / ".serena" / "memories" / "style.md", SERENA),
             "cache": write(a / ".cache" / "quokka.md", "# Cache\n\nquokka in another hidden folder\n"),
             "config": write(a / ".serena" / "project.md", "# Serena config\n\nquokka outside memories/\n"),
             "gateway": write(a / "docs" / "gateway.md", "# Gateway\n\nThe gateway itself.\n")}
    monkeypatch.chdir(home)
    return {"home": home, "a": a, "b": tmp_path / "code" / "B", "code": tmp_path / "code", **files}


def opened(monkeypatch, project: Path | None) -> App:
    if project is None:
        monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    else:
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    app = App.open(Settings.from_env())
    app.adopt_workspace()
    return app


def found(app: App) -> set[str]:
    return {hit.path for hit in app.search("quokka", "keyword", 20).hits}


def test_a_memory_bank_and_serena_memories_are_the_projects_only_even_inside_a_personal_folder(env, monkeypatch):
    """The person indexed ~/code (which holds project A): old code showed A's memory-bank to every
    workspace, and never indexed .serena/memories. Now both are A's, named by kind, and no other
    hidden folder of A is indexed."""
    personal = opened(monkeypatch, None)
    personal.index([str(env["code"])])
    personal.close()
    app = opened(monkeypatch, env["a"])
    assert found(app) == {str(env["bank"]), str(env["serena"])}  # not .cache/ nor .serena/project.md
    kinds = {s["kind"]: s["name"] for s in app.sources() if "kind" in s}
    owner = env["a"].name  # named after the project too: a second project's were `memory-bank-2` (walkthrough I)
    assert kinds == {"memory-bank": f"{owner}/memory-bank", "serena-memories": f"{owner}/serena-memories"}
    assert app.store.source_scopes()[str(env["bank"].parent)] == str(env["a"])
    assert "tabs" in app.get_note(str(env["serena"]))["content"]  # served, though ~/code's walk skips .serena
    app.close()
    for project in (env["b"], None):  # another project, and the personal workspace
        other = opened(monkeypatch, project)
        assert found(other) == set(), project
        other.close()


def test_every_write_path_refuses_a_target_in_another_agents_memory(env, monkeypatch):
    app = opened(monkeypatch, env["a"])
    vault = app.vault(env["a"])
    writer, caller = app.writer(vault), Caller.local(vault, agent="test")
    bank, serena = env["bank"], env["serena"]
    before = {p: p.read_bytes() for p in (bank, serena)}
    outcomes = [write_op(writer, caller, op, str(path), body="planted", base_version="0" * 16, find="quokka",
                         heading="Style", new_path="docs/moved.md")
                for path in ("memory-bank/productContext.md", ".serena/memories/style.md", str(bank))
                for op in ("replace", "append", "prepend", "replace_section", "find_replace", "move")]
    outcomes.append(write_op(writer, caller, "create", "memory-bank/new.md", body="planted"))
    outcomes.append(write_op(writer, caller, "move", "docs/gateway.md", new_path="memory-bank/gateway.md"))
    outcomes.append(lessons.add_outcome(bank.parent / "lessons.md", "l", "c", "d", writer=writer, caller=caller))
    outcomes.append(adr.record(serena.parent / "adr", "T", "c", "o", "d", writer=writer, caller=caller))
    outcomes.append(writer.update_file(caller, str(bank.parent / "handoff.md"), lambda _old: "x", why="handoff",
                                       exclusive=True, collection_check=False, operation="handoff", commit=False))
    for outcome in outcomes:
        assert outcome.status == "refused" and "another agent's memory, read-only" in outcome.message, outcome
    assert {p: p.read_bytes() for p in (bank, serena)} == before
    assert sorted(p.name for p in bank.parent.iterdir()) == ["productContext.md"]
    assert (env["a"] / "docs" / "gateway.md").exists()
    bank.write_text(BANK + "\nquokka billing moved to v2.\n", encoding="utf-8")  # Cline's own edit
    assert app.reindex_file(str(bank)).indexed == 1  # indexing a file there is fine
    app.close()


def test_a_move_leaves_the_links_in_a_memory_bank_alone_and_says_so(env, monkeypatch):
    app = opened(monkeypatch, env["a"])
    vault = app.vault(env["a"])
    out = write_op(app.writer(vault), Caller.local(vault, agent="test"), "move", "docs/gateway.md",
                   new_path="docs/gateway-v2.md")
    assert out.status == "written", out
    assert env["bank"].read_text(encoding="utf-8") == BANK  # old code: rewritten to [[docs/gateway-v2]]
    assert any("memory-bank/productContext.md" in n and "read-only" in n for n in out.notices), out.notices
    app.close()


def test_the_cli_and_learn_refuse_a_memory_bank_target(env):
    """The terminal in project A: `vault-index write`, `move` and scripts/learn.py --file."""
    environ = {k: v for k, v in os.environ.items() if k not in {"CLAUDE_PROJECT_DIR", "VAULT_PROJECT"}}
    a = env["a"]

    def run(*args):
        return subprocess.run(list(args), cwd=a, env=environ, capture_output=True, text=True, timeout=60)

    wrote = run(CLI, "write", "memory-bank/new.md", "--body", "planted", "--set", "title=x")
    moved = run(CLI, "move", "docs/gateway.md", "memory-bank/gateway.md")
    learned = run(sys.executable, str(REPO / "scripts" / "learn.py"), "--file", "memory-bank/lessons.md", "add",
                  "--lesson", "l", "--cause", "c", "--detect", "d")
    for proc in (wrote, moved, learned):
        assert proc.returncode != 0 and "another agent's memory, read-only" in proc.stderr, proc.stderr
    assert sorted(p.name for p in (a / "memory-bank").iterdir()) == ["productContext.md"]
    sources = run(CLI, "sources")
    assert "[memory-bank: another agent's memory, read-only]" in sources.stdout, sources.stdout
