"""A refusal names what is served: a plain project (no .vault-index/config.yaml) is "the project",
a curated vault "the vault", on every surface that shares the write service's check (note_read and
note_write over MCP, the CLI's read and write). Walkthrough A: a project's note_read said "the vault"."""

from __future__ import annotations

import os

import pytest
from helpers import fresh_machine
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.vault.vault import Vault
from vault_index.services.workspace import served_root
from vault_index.services.writes.write import Caller, WriteRequest, WriteService
from vault_index.surfaces import tools_notes
from vault_index.surfaces.cli import main
from vault_index.surfaces.tool_context import ToolContext, _Vaults

OUT = ("../outside.md", "docs/out/x.md")  # up through '..', and through a symlink that leads out


def _project(tmp_path):
    root = tmp_path / "my-project"
    for folder in (root / ".git", root / "docs", root / "notes"):
        folder.mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Guide\n\nthe okapi guide\n")
    (tmp_path / "elsewhere").mkdir()
    (root / "docs" / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    return root


@pytest.fixture(params=["project", "vault"])
def served(request, tmp_path, monkeypatch):
    """(root, the words its refusals must use, the words they must not)."""
    fresh_machine(monkeypatch, tmp_path)
    root = _project(tmp_path)
    if request.param == "vault":
        scaffold(root)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    monkeypatch.chdir(root)
    other = "vault" if request.param == "project" else "project"
    return root, f"leads out of the {request.param} {root}", f"the {other}"


def test_the_write_service_names_a_project_or_a_vault(served):
    root, says, never = served
    caller = Caller.local(Vault.open(root), agent="test")
    for path in OUT:
        for outcome in (WriteService(Vault.open(root)).read(caller, path),
                        WriteService(Vault.open(root)).write(caller, WriteRequest("append", path, "more"))):
            assert outcome.status == "refused" and says in outcome.message and never not in outcome.message


def test_mcp_note_read_and_note_write_name_what_is_served(served):
    root, says, never = served
    app = App.open(Settings.from_env())
    app.adopt_workspace()
    try:
        tc = ToolContext(app, root.parent / "memory.jsonl", lambda vault, ctx: Caller.local(vault, agent="test"),
                         _Vaults(app, served_root(app.workspace)))
        outside = str(root.parent / "elsewhere" / "x.md")  # MCP answers a relative way out as not found
        for path in (outside, "/x.md"):
            for out in (tools_notes.note_read(tc, path, None),
                        tools_notes.note_write(tc, "append", path, None, body="more")):
                assert out.status == "refused" and says in out.message and never not in out.message
    finally:
        app.close()


@pytest.mark.parametrize("command", [("read",), ("write", "--body", "x"), ("append", "--body", "x")])
def test_cli_read_and_write_name_what_is_served(served, capsys, command):
    root, says, never = served
    for path in OUT:
        assert main([command[0], path, *command[1:]]) != 0
        said = capsys.readouterr().err
        assert says in said and never not in said


def test_a_hard_link_refusal_does_not_call_a_project_a_vault(tmp_path, monkeypatch):
    fresh_machine(monkeypatch, tmp_path)
    root = _project(tmp_path)
    os.link(root / "docs" / "guide.md", tmp_path / "elsewhere" / "twin.md")
    outcome = WriteService(Vault.open(root)).write(Caller.local(Vault.open(root), agent="test"),
                                                   WriteRequest("append", "docs/guide.md", "more"))
    assert outcome.status == "refused" and "hard links" in outcome.message and "vault" not in outcome.message
