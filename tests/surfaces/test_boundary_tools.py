"""The one boundary over the MCP tools (issue 36, ADR 0034): every tool and resource that takes a
path goes through services/boundary.resolve, and what the workspace does not see is answered as a
missing path is. Tools are called as functions (surfaces/tool_context.py), no server needed."""

from __future__ import annotations

import json

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.services.workspace import served_root
from vault_index.services.writes.write import Caller
from vault_index.surfaces import tools_graph, tools_notes, tools_search
from vault_index.surfaces.tool_context import ToolContext, _Vaults
from vault_index.surfaces.tool_inputs import EntityIn


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """~/notes is personal; project B lives in it and its docs/ are B's own source; the init vault
    ~/notes/team lives in it too (registered as the vault's); project A lies elsewhere."""
    for name in ("VAULT_PROJECT", "CLAUDE_PROJECT_DIR", "VAULT_CONTENT_DIR", "VAULT_ROLE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("VAULT_INDEX_HOME", str(home / ".mcp-memory"))
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "index.db"))
    monkeypatch.setenv("VAULT_EMBED_MODEL", "none")
    monkeypatch.chdir(home)
    notes, a = home / "notes", tmp_path / "A"
    b = notes / "B"
    team = notes / "team"
    for folder in (b / ".git", b / "docs", a / ".git", a / "docs", team / ".vault-index", team / "notes"):
        folder.mkdir(parents=True)
    (notes / "mine.md").write_text("# Mine\n\nmy own okapi, see [plan](B/docs/plan.md)\n")
    (b / "docs" / "plan.md").write_text("# Plan\n\nbeta private okapi plan\n")
    (a / "docs" / "a.md").write_text("# A\n\nalpha okapi\n")
    (team / ".vault-index" / "config.yaml").write_text(
        "version: 1\nroles:\n  reader: {read: [research]}\nlocal_role: reader\n")
    (team / "notes" / "v.md").write_text("# V\n\nthe team's okapi\n")
    (notes / "to-b").symlink_to(b / "docs")
    (notes / "to-team").symlink_to(team / "notes")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(b))
    App.open(Settings.from_env()).adopt_workspace()
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    person = App.open(Settings.from_env())
    person.index([str(notes)])
    person.index([str(team)])  # as `init` registers it: the vault's own
    person.close()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(a))
    app = App.open(Settings.from_env())
    tc = ToolContext(app, tmp_path / "memory.jsonl", lambda vault, ctx: Caller.local(vault, agent="test"),
                     _Vaults(app, served_root(app.workspace)))
    yield {"tc": tc, "notes": notes, "a": a, "b": b, "team": team, "tmp": tmp_path}
    app.close()


def test_note_read_and_write_judge_a_personal_path_by_where_its_symlink_leads(machine):
    """Issue 36 item 4: old code checked a personal-folder path as written, so through a symlink A's
    agent read B's hidden note and wrote into the init vault ~/notes/team past its roles, schema and
    commit. Now both answer as a missing note does, and nothing is written."""
    tc, notes, team = machine["tc"], machine["notes"], machine["team"]
    missing = tools_notes.note_read(tc, str(notes / "nothing.md"), None)
    assert missing.status == "not_found"
    through = tools_notes.note_read(tc, str(notes / "to-b" / "plan.md"), None)  # old code: ok, B's text
    assert (through.status, through.message.replace("to-b/plan.md", "nothing.md")) == ("not_found", missing.message)
    direct = tools_notes.note_read(tc, str(machine["b"] / "docs" / "plan.md"), None)
    assert direct.status == "not_found" and "okapi" not in str(direct.data)
    planted = tools_notes.note_write(tc, "create", str(notes / "to-team" / "planted.md"), None, body="x\n")
    assert planted.status == "not_found"  # old code: written, as a plain note inside the vault
    assert not (team / "notes" / "planted.md").exists()
    into = tools_notes.note_write(tc, "create", str(notes / "fine.md"), None, body="x\n")
    assert into.status == "written"  # the personal folder itself stays writable from the project
    moved = tools_notes.note_write(tc, "move", str(notes / "fine.md"), None, new_path="to-team/moved.md")
    assert moved.status == "not_found" and (notes / "fine.md").exists()
    assert not (team / "notes" / "moved.md").exists()


def test_get_note_note_links_and_the_resource_path_answer_hidden_as_missing(machine):
    tc, notes = machine["tc"], machine["notes"]
    said = []
    for path in (str(notes / "to-b" / "plan.md"), str(notes / "nothing.md"), "to-team/v.md"):
        for call in (lambda p: tools_search.get_note(tc, p, None),
                     lambda p: tools_notes.note_links(tc, None, "backlinks", path=p)):
            with pytest.raises(ToolError) as refused:
                call(path)
            said.append(str(refused.value).replace(path, "PATH"))
    assert len(set(said)) == 1, said


def test_graph_create_confirms_nothing_of_a_hidden_projects_graph(machine):
    """Issue 36 item 6: graph_create checked names and duplicates against the whole memory file, so
    project A's agent learned that B's entity exists ("already in the graph") and the exact text of
    its observations, and could name B's hidden note as a fact's source. Now a hidden fact is as
    absent as one never written, and a hidden source is "not an existing file" as a missing one is."""
    from vault_index.surfaces.tool_inputs import ObservationIn

    tc, b, a = machine["tc"], machine["b"], machine["a"]
    hidden = b / "docs" / "plan.md"
    facts = [{"type": "entity", "name": "Beta Plan", "entityType": "plan"},
             {"type": "observation", "entity": "Beta Plan", "text": "launch code 4471"}]
    tc.memory_file.write_text("".join(json.dumps({**f, "source": str(hidden), "created": "2026-01-01T00:00:00Z"})
                                      + "\n" for f in facts))
    mine = str(a / "docs" / "a.md")
    with pytest.raises(ToolError) as unknown:  # old code: added 1 (the hidden entity exists)
        tools_graph.graph_create(tc, None, observations=[ObservationIn(entity="Beta Plan", text="x", source=mine)])
    with pytest.raises(ToolError) as never:
        tools_graph.graph_create(tc, None, observations=[ObservationIn(entity="Gamma Plan", text="x", source=mine)])
    assert str(unknown.value).replace("Beta", "Gamma") == str(never.value)
    made = tools_graph.graph_create(tc, None, entities=[EntityIn(name="Beta Plan", entityType="plan", source=mine)],
                                    observations=[ObservationIn(entity="Beta Plan", text="launch code 4471",
                                                                source=mine)])
    assert made.added == {"entity": 1, "observation": 1, "relation": 0} and made.skipped == []  # old: both skipped
    said = []
    for source in (str(hidden), str(machine["notes"] / "to-b" / "plan.md"), str(b / "docs" / "nothing.md")):
        with pytest.raises(ToolError) as refused:  # old code: the hidden note was taken as a source
            tools_graph.graph_create(tc, None, entities=[EntityIn(name="Probe", entityType="x", source=source)])
        said.append(str(refused.value).replace(source, "PATH").split(" (")[0])
    assert len(set(said)) == 1, said
