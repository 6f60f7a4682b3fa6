"""Issue 39 item 4: every path-taking tool takes every form a person or a tool gives (absolute,
relative to the project, relative to a source), decided once in services/boundary.resolve; the paths
tools answer are taken back by every tool; a relative search path filter is found or refused by name.
Tools are called as functions (surfaces/tool_context.py); the CLI through a real process."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from helpers import CLI, fresh_machine
from mcp.server.mcpserver.exceptions import ToolError
from vault_index.config import Settings
from vault_index.services.app import App
from vault_index.services.workspace import served_root
from vault_index.services.writes.write import Caller
from vault_index.surfaces import tools_graph, tools_notes, tools_search
from vault_index.surfaces.tool_context import ToolContext, _Vaults


@pytest.fixture
def project(monkeypatch, tmp_path):
    """Project P with its own docs/ (and docs/postmortems/); the person's ~/notes (with research/)
    registered as personal; `dup.md` lies both in P/docs and in ~/notes."""
    home = fresh_machine(monkeypatch, tmp_path)
    notes, p = home / "notes", tmp_path / "P"
    for folder in (notes / "research", p / ".git", p / "docs" / "postmortems"):
        folder.mkdir(parents=True)
    (p / "docs" / "guide.md").write_text("# Guide\n\nthe okapi guide, see [dup](dup.md)\n")
    (p / "docs" / "postmortems" / "outage.md").write_text("# Outage\n\nthe okapi outage\n")
    (p / "docs" / "dup.md").write_text("# Dup P\n\nokapi twin one\n")
    (notes / "research" / "r.md").write_text("# Research\n\nokapi research\n")
    (notes / "dup.md").write_text("# Dup N\n\nokapi twin two\n")
    monkeypatch.chdir(home)
    person = App.open(Settings.from_env())
    person.index([str(notes)])
    person.close()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(p))
    monkeypatch.chdir(p)
    app = App.open(Settings.from_env())
    app.adopt_workspace()
    tc = ToolContext(app, tmp_path / "memory.jsonl", lambda vault, ctx: Caller.local(vault, agent="test"),
                     _Vaults(app, served_root(app.workspace)))
    yield {"tc": tc, "notes": notes, "p": p, "home": home, "tmp": tmp_path}
    app.close()


def _reads(tc, path: str) -> dict:
    """What each reading tool answers for `path`: the note's real path, or the error."""
    out = {}
    for name, call in (("get_note", lambda: tools_search.get_note(tc, path, None).path),
                       ("note_read", lambda: tools_notes.note_read(tc, path, None)),
                       ("note_links", lambda: tools_notes.note_links(tc, None, "links", path).path)):
        try:
            out[name] = call()
        except ToolError as exc:
            out[name] = f"error: {exc}"
    read = out["note_read"]
    out["note_read"] = read if isinstance(read, str) else (read.status, read.path)
    return out


def test_every_note_tool_takes_absolute_project_and_source_relative_paths(project):
    """Old code: get_note and note_links refused `docs/guide.md` (project-relative: no source holds
    docs/docs/guide.md) and note_read answered not_found for `guide.md` and `research/r.md` (taken
    relative to the project only)."""
    tc, p, notes = project["tc"], project["p"], project["notes"]
    guide, research = str(p / "docs" / "guide.md"), str(notes / "research" / "r.md")
    for form in (guide, "docs/guide.md", "guide.md"):
        got = _reads(tc, form)
        assert got["get_note"] == guide and got["note_links"] == guide, (form, got)
        assert got["note_read"][0] == "ok", (form, got)
    for form in (research, "research/r.md", "notes/research/r.md"):
        got = _reads(tc, form)
        assert got["get_note"] == research and got["note_links"] == research, (form, got)
        assert got["note_read"][0] == "ok", (form, got)
    appended = tools_notes.note_write(tc, "append", "guide.md", None, body="more okapi\n")
    assert appended.status == "written", appended.message
    assert "more okapi" in (p / "docs" / "guide.md").read_text()


def test_a_relative_path_naming_two_files_is_an_error_listing_both(project):
    tc, p, notes = project["tc"], project["p"], project["notes"]
    for name, answer in _reads(tc, "dup.md").items():
        text = str(answer)
        assert str(p / "docs" / "dup.md") in text and str(notes / "dup.md") in text, (name, answer)
    with pytest.raises(ToolError, match="2 different files"):
        tools_notes.note_write(tc, "append", "dup.md", None, body="x\n")
    assert _reads(tc, "docs/dup.md")["get_note"] == str(p / "docs" / "dup.md")  # one form picks one


def test_missing_and_hidden_still_answer_alike(project, tmp_path):
    """A note of a folder this workspace does not see, named relative to where it lies, reads as missing."""
    tc = project["tc"]
    other = tmp_path / "Q" / "docs"
    other.mkdir(parents=True)
    (other / "secret.md").write_text("# S\n\nhidden okapi\n")
    with pytest.raises(ToolError) as missing:
        tools_search.get_note(tc, "nothing.md", None)
    with pytest.raises(ToolError) as hidden:
        tools_search.get_note(tc, str(other / "secret.md"), None)
    assert "is not a file in the index sources" in str(missing.value)
    assert str(hidden.value).replace(str(other / "secret.md"), "nothing.md") in (
        str(missing.value), boundary_outside("nothing.md"))


def boundary_outside(path: str) -> str:
    from vault_index.services import boundary

    return boundary.outside(path)


def test_every_path_a_tool_answers_is_taken_back_by_every_path_taking_tool(project):
    tc, p = project["tc"], project["p"]
    answered: set[str] = set()
    answered |= {h.path for h in tools_search.search_notes(tc, "okapi", None, mode="keyword", limit=20).hits}
    recall = tools_graph.recall(tc, "okapi", None)
    answered |= {item["path"] for item in recall.notes if item.get("path")}
    links = tools_notes.note_links(tc, None, "links", str(p / "docs" / "guide.md"))
    answered |= {links.path} | {r["path"] for r in links.data["results"] if r.get("path")}
    written = tools_notes.note_write(tc, "create", "docs/new.md", None, body="# New\n\nokapi new\n")
    assert written.status == "written", written.message
    answered.add(written.path)
    answered.add(tools_notes.note_read(tc, str(p / "docs" / "guide.md"), None).path)
    assert len(answered) >= 5, answered
    assert all(os.path.isabs(path) for path in answered), answered  # one form: every tool answers absolute paths
    for path in sorted(answered):
        got = _reads(tc, path)
        assert not any(str(v).startswith("error") for v in got.values()) and got["note_read"][0] == "ok", (path, got)
        out = tools_notes.note_write(tc, "append", path, None, body="seen\n")
        assert out.status == "written", (path, out.message)
    folders = [s["path"] for s in tools_search.list_sources(tc, None).sources]
    for folder in folders:  # a source's folder is taken back as a search filter and by index_paths
        tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix=folder)
        tools_search.index_paths(tc, None, [folder])


def test_a_relative_search_path_filter_is_found_or_refused_by_name(project):
    """Old code: `path_prefix: "research"` matched no stored (absolute) path and answered no hits."""
    tc, notes, p = project["tc"], project["notes"], project["p"]
    hits = tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix="research").hits
    assert [h.path for h in hits] == [str(notes / "research" / "r.md")]
    for prefix in ("postmortems", "docs/postmortems"):
        hits = tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix=prefix).hits
        assert [h.path for h in hits] == [str(p / "docs" / "postmortems" / "outage.md")], prefix
    with pytest.raises(ToolError, match="names no folder or note.*tried"):
        tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix="nowhere")


def test_an_absolute_path_filter_this_workspace_does_not_see_is_refused_by_name(project, tmp_path):
    """Walkthrough H: `path_prefix: "/tmp/nowhere"`, or another project's docs/, answered no hits and no
    word (a relative one already said so). A folder holding the sources, a folder in one and a note
    stay filters; a filter matches whole names, so a name begun (`docs/post`) names nothing."""
    tc, p = project["tc"], project["p"]
    other = tmp_path / "other" / "docs"
    other.mkdir(parents=True)
    (other / "o.md").write_text("# O\n\nokapi elsewhere\n")
    for unseen in (tmp_path / "nowhere", other, other / "o.md", p / "docs" / "post"):
        with pytest.raises(ToolError, match="names no folder or note this workspace sees"):
            tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix=str(unseen))
    outage = str(p / "docs" / "postmortems" / "outage.md")
    for seen_prefix in (p, p / "docs" / "postmortems", outage):
        hits = tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix=str(seen_prefix)).hits
        assert outage in [h.path for h in hits], seen_prefix
    unknown = _cli(project, "search", "okapi", "--path", str(tmp_path / "nowhere"))
    assert unknown.returncode == 3 and "names no folder or note" in unknown.stderr, unknown


def test_a_path_filter_the_project_holds_is_the_projects_whatever_a_source_holds(project):
    """The walkthrough: `search --path docs` failed as ambiguous in every project, since setup makes
    a personal `docs/` too; the workspace's own folder is what a person means."""
    tc, notes, p = project["tc"], project["notes"], project["p"]
    (notes / "docs").mkdir()
    (notes / "docs" / "n.md").write_text("# N\n\nokapi personal docs\n")
    tc.app.index([str(notes)])
    hits = tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix="docs").hits
    assert hits and all(h.path.startswith(str(p / "docs") + os.sep) for h in hits), [h.path for h in hits]


def _cli(project, *args) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], cwd=project["p"], env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


def test_the_cli_takes_every_form_and_resolves_a_relative_path_filter(project):
    """Old code: `vault-index get docs/guide.md` in the project was not found, and `search --path
    postmortems` printed no hits."""
    p, notes = project["p"], project["notes"]
    for form in ("docs/guide.md", "guide.md", str(p / "docs" / "guide.md")):
        got = _cli(project, "get", form, "--json")
        assert got.returncode == 0 and json.loads(got.stdout)["path"] == str(p / "docs" / "guide.md"), (form, got)
    read = _cli(project, "read", "guide.md", "--json")  # relative to the docs source
    assert read.returncode == 0 and json.loads(read.stdout)["status"] == "ok", read
    found = _cli(project, "search", "okapi", "--mode", "keyword", "--path", "postmortems", "--json")
    assert found.returncode == 0, found.stderr
    assert [h["path"] for h in json.loads(found.stdout)["hits"]] == [str(p / "docs" / "postmortems" / "outage.md")]
    unknown = _cli(project, "search", "okapi", "--path", "nowhere")
    assert unknown.returncode != 0 and "nowhere" in unknown.stderr and "tried" in unknown.stderr, unknown
    assert str(notes) not in unknown.stdout


def test_a_new_note_named_by_a_bare_name_goes_to_the_projects_notes_folder(project):
    """Issue 39 (the fresh walkthrough): `note_write create x.md` landed at the project root, outside
    every indexed folder, and nothing said so. A bare name goes under the project's notes/ (what it
    indexes; where CLAUDE.md tells agents to write), found by the next search; a path that still
    lands outside the indexed folders is written, and the answer says search will not find it."""
    tc, p = project["tc"], project["p"]
    written = tools_notes.note_write(tc, "create", "idea.md", None, body="# Idea\n\nthe zebu idea\n")
    assert written.status == "written" and written.path == str(p / "notes" / "idea.md"), written
    assert (p / "notes" / "idea.md").is_file() and not (p / "idea.md").exists()
    assert not written.data["notices"], written.data
    hits = tools_search.search_notes(tc, "zebu", None, mode="keyword").hits
    assert [h.path for h in hits] == [str(p / "notes" / "idea.md")]
    again = tools_notes.note_write(tc, "append", "idea.md", None, body="more zebu\n")  # the same name finds it
    assert again.status == "written" and again.path == written.path, again
    outside = tools_notes.note_write(tc, "create", "scratch/loose.md", None, body="# Loose\n\nthe gnu note\n")
    assert outside.status == "written" and outside.path == str(p / "scratch" / "loose.md"), outside
    assert any("search does not find it" in n for n in outside.data["notices"]), outside.data


def test_the_cli_answers_json_paths_in_the_one_form_every_tool_takes(project):
    """Issue 39 item 4: `write --json` and `read --json` printed vault-relative paths, where every
    MCP tool answers absolute ones."""
    p = project["p"]
    wrote = _cli(project, "write", "docs/cli-new.md", "--body", "# CLI\n\nokapi from the terminal\n", "--json")
    assert wrote.returncode == 0 and json.loads(wrote.stdout)["path"] == str(p / "docs" / "cli-new.md"), wrote
    read = _cli(project, "read", "guide.md", "--json")
    assert read.returncode == 0 and json.loads(read.stdout)["path"] == str(p / "docs" / "guide.md"), read
    found = json.loads(_cli(project, "recall", "okapi", "--json").stdout)
    paths = [item["path"] for item in found["notes"] + found["lessons"]]
    assert paths and all(os.path.isabs(path) for path in paths), paths


def test_provenance_takes_every_form_and_a_missing_note_is_not_found(project):
    """Walkthrough B (item 4): `provenance decisions/x.md` (relative to the source docs/) printed
    nothing with exit 0, as did a note that does not exist."""
    import shutil
    import subprocess as sp

    p = project["p"]
    shutil.rmtree(p / ".git")  # the fixture's marker folder: a real repository here
    sp.run(["git", "init", "-q", str(p)], check=True, capture_output=True)
    sp.run(["git", "-C", str(p), "add", "docs/guide.md"], check=True, capture_output=True)
    sp.run(["git", "-C", str(p), "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm",
            "guide"], check=True, capture_output=True)
    for form in ("guide.md", "docs/guide.md", str(p / "docs" / "guide.md")):
        shown = _cli(project, "provenance", form, "--json")
        assert shown.returncode == 0, shown
        answer = json.loads(shown.stdout)
        assert answer["path"] == str(p / "docs" / "guide.md") and len(answer["data"]["history"]) == 1, form
    missing = _cli(project, "provenance", "docs/no-such-note.md")
    assert missing.returncode == 3 and "no note docs/no-such-note.md" in missing.stderr, missing
    new = _cli(project, "provenance", "docs/dup.md")  # there, never committed
    assert new.returncode == 0 and "no commit holds" in new.stderr, new


def test_a_path_under_a_sources_name_as_sources_shows_it_is_taken_by_every_tool(project):
    """Walkthrough C: `P/docs/guide.md`, the form `sources`, list_sources and the pending notices
    name things in, was taken by note_read and refused by get_note, note_links and path_prefix."""
    tc, p = project["tc"], project["p"]
    app = tc.app
    name = next(n for n, path in app.store.source_names().items() if path == str(p / "docs"))
    assert name == "P/docs"
    guide = str(p / "docs" / "guide.md")
    got = _reads(tc, f"{name}/guide.md")
    assert got["get_note"] == guide and got["note_links"] == guide and got["note_read"][0] == "ok", got
    hits = tools_search.search_notes(tc, "okapi", None, mode="keyword", path_prefix=f"{name}/postmortems").hits
    assert [h.path for h in hits] == [str(p / "docs" / "postmortems" / "outage.md")]
    shown = _cli(project, "get", f"{name}/guide.md")
    assert shown.returncode == 0 and "okapi guide" in shown.stdout, shown
    links = _cli(project, "links", f"{name}/guide.md", "--json")
    assert links.returncode == 0 and str(p / "docs" / "dup.md") in links.stdout, links


def test_index_paths_and_a_new_note_take_source_relative_and_source_name_forms(project):
    """Walkthrough D: index_paths refused `postmortems/outage.md` and `P/docs/postmortems/outage.md`
    ("not a file in the index sources"), and `note_write create P/docs/postmortems/new.md` wrote
    P/P/docs/postmortems/new.md, `postmortems/new2.md` P/postmortems/new2.md, outside every source."""
    tc, p = project["tc"], project["p"]
    sources = set(tc.app.store.source_names())
    for form in ("postmortems/outage.md", "P/docs/postmortems/outage.md"):
        answer = tools_search.index_paths(tc, None, [form])
        assert not answer.problems, (form, answer)
        assert answer.notices and "lies in the source P/docs: re-indexed there" in answer.notices[0], (form, answer)
    assert set(tc.app.store.source_names()) == sources  # neither form made a source of its own
    for form, where in (("P/docs/postmortems/new.md", p / "docs" / "postmortems" / "new.md"),
                        ("postmortems/new2.md", p / "docs" / "postmortems" / "new2.md")):
        made = tools_notes.note_write(tc, "create", form, None, body="# New\n\nokapi again\n")
        assert made.status == "written" and made.path == str(where), (form, made)
        assert where.is_file() and not (p / "P").exists() and not (p / "postmortems").exists()


def test_a_folder_of_the_projects_own_source_is_synced_there_never_made_personal(project):
    """Walkthrough E: `vault-index index docs/postmortems` in a project registered a personal source,
    "seen in every project", and another project's search then returned its notes; index_paths
    added an empty source. Both sync the folder within the project's own source now."""
    tc, p, home = project["tc"], project["p"], project["home"]
    sources = set(tc.app.store.source_names())
    answer = tools_search.index_paths(tc, None, ["postmortems"])
    assert answer.notices and "lies in the source P/docs: re-indexed there" in answer.notices[0], answer
    typed = _cli(project, "index", "docs/postmortems")
    assert typed.returncode == 0 and "personal" not in typed.stdout + typed.stderr, typed
    assert set(tc.app.store.source_names()) == sources
    personal = dict(os.environ, CLAUDE_PROJECT_DIR="")  # the person's own workspace, outside P
    elsewhere = subprocess.run([CLI, "search", "okapi outage", "--json"], cwd=home, env=personal,
                               capture_output=True, text=True, timeout=120)
    assert str(p / "docs" / "postmortems" / "outage.md") not in elsewhere.stdout, elsewhere.stdout[:400]


def test_the_cli_reads_a_personal_note_from_a_project_as_note_read_does(project):
    """Walkthrough I: `vault-index read notes/backups.md` in a project was refused as leading out of
    it, and `provenance` too, where MCP note_read answered; the note is read in its own folder."""
    notes = project["notes"]
    for form in ("research/r.md", str(notes / "research" / "r.md")):
        read = _cli(project, "read", form, "--json")
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout)["path"] == str(notes / "research" / "r.md"), read.stdout
        history = _cli(project, "provenance", form, "--json")
        assert history.returncode == 0 and json.loads(history.stdout)["path"] == str(notes / "research" / "r.md")
    outside = _cli(project, "read", "/etc/hostname")
    assert outside.returncode != 0 and "r.md" not in outside.stdout


def test_graph_create_takes_a_facts_source_in_every_form(project):
    """Walkthrough I: graph_create looked for a relative source in the project folder alone, so a
    personal note (`research/r.md`) or a source-name path was "not an existing file"."""
    from vault_index.surfaces.tool_inputs import EntityIn

    tc, notes, p = project["tc"], project["notes"], project["p"]
    names = {path: name for name, path in tc.app.store.source_names().items()}
    forms = {"research/r.md": notes / "research" / "r.md",  # relative to the personal source
             "postmortems/outage.md": p / "docs" / "postmortems" / "outage.md",  # relative to P/docs
             f"{names[str(p / 'docs')]}/guide.md": p / "docs" / "guide.md",  # the name `sources` prints
             "docs/guide.md": p / "docs" / "guide.md"}  # relative to the project, as before
    for n, (form, real) in enumerate(forms.items()):
        made = tools_graph.graph_create(tc, None, entities=[EntityIn(name=f"E{n}", entityType="t", source=form)])
        assert sum(made.added.values()) == 1 and not made.skipped, (form, made)
        [entity] = tools_graph.graph_open(tc, [f"E{n}"], None).entities
        assert entity["source"] == str(real), (form, entity)
    with pytest.raises(ToolError, match="not an existing file"):
        tools_graph.graph_create(tc, None, entities=[EntityIn(name="Ghost", entityType="t", source="nowhere.md")])


def test_an_entity_with_a_field_graph_create_does_not_take_is_refused_not_dropped(project):
    """Walkthrough L: observations nested in an entity (the reference memory server's form) were
    dropped with `skipped: []`; the entity's unknown field is now an error naming it, nothing written."""
    import pydantic
    from vault_index.surfaces.tool_inputs import EntityIn

    with pytest.raises(pydantic.ValidationError, match="observations"):
        EntityIn(name="X", entityType="t", source="docs/guide.md", observations=["nightly at 02:00"])
