"""The one boundary over the MCP tools (issue 36, ADR 0034): every tool and resource that takes a
path goes through services/boundary.resolve, and what the workspace does not see is answered as a
missing path is. Tools are called as functions (surfaces/tool_context.py), no server needed."""

from __future__ import annotations

import inspect
import json

import anyio
import pytest
from helpers import fresh_machine
from mcp.server.mcpserver.exceptions import ToolError
from vault_index.config import Settings
from vault_index.services import boundary
from vault_index.services.app import App
from vault_index.services.workspace import served_root
from vault_index.services.writes.write import Caller
from vault_index.surfaces import tools_graph, tools_notes, tools_search, tools_vault
from vault_index.surfaces.tool_context import ToolContext, _Vaults
from vault_index.surfaces.tool_inputs import EntityIn
from vault_index.surfaces.tool_table import TOOLS


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """~/notes is personal; project B lives in it and its docs/ are B's own source; the init vault
    ~/notes/team lives in it too (registered as the vault's); project A lies elsewhere."""
    home = fresh_machine(monkeypatch, tmp_path)
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


# --- every tool and resource goes through the boundary -------------------------------------------

# The tools that take a path, with the arguments that name one. A tool added to TOOLS must be put
# here or in PATH_FREE: the test below fails for an unclassified one.
PATH_CALLS = {
    "get_note": lambda tc, p: tools_search.get_note(tc, p, None),
    "index_paths": lambda tc, p: tools_search.index_paths(tc, None, paths=[p]),
    "remove_source": lambda tc, p: tools_search.remove_source(tc, p, None),
    "graph_create": lambda tc, p: tools_graph.graph_create(tc, None, entities=[
        EntityIn(name="Okapi", entityType="animal", source=p)]),
    "note_read": lambda tc, p: tools_notes.note_read(tc, p, None),
    "note_write": lambda tc, p: tools_notes.note_write(tc, "append", p, None, body="more\n"),
    "note_write(move)": lambda tc, p: tools_notes.note_write(tc, "move", "docs/a.md", None, new_path=p),
    "note_links": lambda tc, p: tools_notes.note_links(tc, None, "backlinks", path=p),
    "tension_log": lambda tc, p: tools_vault.tension_log(tc, p, "docs/a.md", "they disagree", None),
    "tension_log(b)": lambda tc, p: tools_vault.tension_log(tc, "docs/a.md", p, "they disagree", None),
}
# Tools that open no path of the caller's choosing: a query, a name, a fixed file of the vault (lessons.md,
# docs/adr/), the whole graph. graph_create's paths are its facts' sources (above).
PATH_FREE = {"search_notes", "list_sources", "graph_search", "graph_open", "recall", "lesson_add",
             "lesson_supersede", "lesson_retire", "adr_create", "vault_review"}


def test_every_registered_tool_is_classified():
    names = {fn.__name__ for fn, _ in TOOLS}
    path_tools = {name.split("(")[0] for name in PATH_CALLS}
    assert names == path_tools | PATH_FREE, names ^ (path_tools | PATH_FREE)
    assert not path_tools & PATH_FREE
    for fn, _ in TOOLS:  # a path-free tool takes no parameter that names a file (search_notes' path_prefix
        if fn.__name__ in PATH_FREE:  # only filters the hits' paths, which the search already limits)
            params = set(inspect.signature(fn).parameters)
            assert not params & {"path", "paths", "new_path", "a", "b"}, (fn.__name__, params)


def test_every_path_taking_tool_and_the_note_resource_resolve_through_the_boundary(machine, monkeypatch):
    tc, a = machine["tc"], machine["a"]
    asked: list[str] = []
    resolve = boundary.resolve

    def recorded(app, path, **how):
        asked.append(str(path))
        return resolve(app, path, **how)

    monkeypatch.setattr(boundary, "resolve", recorded)
    for name, call in PATH_CALLS.items():
        marker = str(a / "docs" / f"probe-{name.split('(')[0]}.md")
        asked.clear()
        try:
            call(tc, marker)
        except ToolError:
            pass  # a missing note is refused; what counts is that the boundary decided it
        assert marker in asked, name
    from vault_index.surfaces.tools import build_server

    server = build_server(tc.app, machine["tmp"] / "memory.jsonl", vault_root=a)
    asked.clear()
    marker = str(a / "docs" / "probe-resource.md")

    async def read():
        from mcp import Client

        async with Client(server) as client:
            try:
                await client.read_resource(f"vault-index://note/{marker.lstrip('/')}")
            except Exception:  # noqa: BLE001 - missing: refused; the boundary decided it
                pass

    anyio.run(read)
    assert any(p.endswith("probe-resource.md") for p in asked)


def test_a_move_rewrites_no_link_in_a_hidden_projects_notes(machine):
    """Issue 36 item 5: a move started in project A (of a note in the personal folder) rewrote the
    link inside project B's hidden note and named that note in its answer."""
    tc, notes, b = machine["tc"], machine["notes"], machine["b"]
    (notes / "hub.md").write_text("# Hub\n\nthe hub\n")
    linker = b / "docs" / "links-hub.md"
    linker.write_text("# B links\n\nsee [hub](../../hub.md)\n")
    (notes / "seen.md").write_text("# Seen\n\nsee [hub](hub.md)\n")
    before = linker.read_bytes()
    moved = tools_notes.note_write(tc, "move", str(notes / "hub.md"), None, new_path="hub-2.md")
    assert moved.status == "written", moved.message
    assert linker.read_bytes() == before  # old code: rewritten to ../../hub-2.md
    assert "links-hub" not in json.dumps(moved.model_dump())  # old code: named in links_rewritten
    assert (notes / "seen.md").read_text() == "# Seen\n\nsee [hub](hub-2.md)\n"  # what A sees follows


def test_a_roles_move_does_not_depend_on_notes_it_cannot_read(tmp_path):
    """Issue 36 item 5, curated vault: a note in a collection the role cannot read linked to the
    moved one, so the answer was denied (with it) or written (without it): an existence oracle."""
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes.move import MoveRequest
    from vault_index.services.writes.write import WriteService

    answers = {}
    for linked in (False, True):
        root = tmp_path / f"vault-{linked}"
        (root / ".vault-index").mkdir(parents=True)
        (root / ".vault-index" / "config.yaml").write_text(
            "version: 1\ncollections: [notes, private]\nroles:\n  editor: {read: [notes], write: [notes]}\n")
        (root / "notes").mkdir()
        (root / "private").mkdir()
        (root / "notes" / "plan.md").write_text("---\ntitle: plan\nstatus: draft\n---\n# Plan\n\nthe plan\n")
        if linked:
            (root / "private" / "secret.md").write_text("# Secret\n\nsee [plan](../notes/plan.md)\n")
        outcome = WriteService(Vault.open(root)).move(Caller("Ed <ed@example.org>", "editor"),
                                                      MoveRequest("notes/plan.md", "notes/plan-2.md"))
        answers[linked] = (outcome.status, outcome.result)
        if linked:
            assert (root / "private" / "secret.md").read_text().endswith("(../notes/plan.md)\n")
    assert answers[True] == answers[False] and answers[True][0] == "written", answers  # old code: denied
