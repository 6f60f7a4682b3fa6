"""Must-show 3: every role x every tool x a collection inside and outside its grant behaves as the
vault config says; the guest is denied everything; denied and missing give the same answer.

The bulk matrix runs in process through the real MCP SDK client against the server
surfaces/tools.py builds (one tools module for every transport), with a caller_factory that names
the role; a smaller pass spawns `python -m vault_index` over stdio with VAULT_ROLE set. Real
SQLite, real git; only the embedding model is absent (keyword search).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest
from helpers import REPO, make_settings, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.services.writes.write import Caller
from vault_index.surfaces.tools import build_server

from mcp import Client

TIMEOUT_S = 120
CONFIG = """\
version: 1
vault_name: acl
collections: [alpha, beta, docs]
roles:
  admin: {read: ["*"], write: ["*"], promote: true}
  alpha_editor: {read: [alpha, docs], write: [alpha, docs], promote: true}
  alpha_writer: {read: [alpha], write: [alpha]}
  alpha_reader: {read: [alpha]}
git: {commit: true}
"""
GRANTS = {  # role -> (read, write, promote); None and "nobody" are guests
    "admin": ({"*"}, {"*"}, True),
    "alpha_editor": ({"alpha", "docs"}, {"alpha", "docs"}, True),
    "alpha_writer": ({"alpha"}, {"alpha"}, False),
    "alpha_reader": ({"alpha"}, set(), False),
    None: (set(), set(), False),
    "nobody": (set(), set(), False),
}
ROLES = list(GRANTS)
COLLECTIONS = ("alpha", "beta")


def can(role, action: str, collection: str) -> bool:
    read, write_, promote = GRANTS[role]
    names = read if action == "read" else write_
    allowed = "*" in names or collection in names
    return allowed and promote if action == "promote" else allowed


def note(title: str, words: str, status: str = "draft") -> str:
    return (f"---\ntitle: {title}\nstatus: {status}\nconfidence: medium\ncreated: 2026-11-01\n"
            f"updated: 2026-11-01\nsources: [acl-test]\nttl_days: 90\n---\n# {title}\n\n{words}\n")


@pytest.fixture
def vault(tmp_path, monkeypatch):
    root = tmp_path / "vault"
    write(root, ".vault-index/config.yaml", CONFIG)
    for name in COLLECTIONS:
        # beta's notes rank above alpha's for "aardvark": a filter applied after the limit would
        # leave an alpha-only reader with nothing; one applied before it fills every slot
        words = "aardvark " * (3 if name == "beta" else 1)
        write(root, f"{name}/{name}-one.md", note(f"{name} one", f"{words}{name}word links [[{name}-two]]"))
        write(root, f"{name}/{name}-two.md", note(f"{name} two", f"{words}second {name}word [[{name}-one]]"))
    # declares another collection in its frontmatter: the folder decides, never this field
    spoof = note("spoof", "zebracrossing only here").replace("status:", "collection: alpha\nstatus:")
    write(root, "beta/spoof.md", spoof)
    write(root, "docs/readme.md", note("readme", "project documents"))
    memory = tmp_path / "memory.jsonl"
    facts = [{"type": "entity", "name": f"{c.title()} gizmo", "entityType": "x",
              "source": str(root / c / f"{c}-one.md"), "created": "2026-11-01T00:00:00Z"} for c in COLLECTIONS]
    memory.write_text("".join(json.dumps(f) + "\n" for f in facts))
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, timeout=30)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=Setup", "-c", "user.email=s@x", "commit", "-qm", "setup"],
                   check=True, timeout=30)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    monkeypatch.delenv("VAULT_ROLE", raising=False)
    return root


@pytest.fixture
def app(tmp_path, vault):
    opened = App.open(make_settings(tmp_path), models=Models.fixed(None))
    opened.index([str(vault)])
    yield opened
    opened.close()


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def denied(result) -> bool:
    """A refusal for want of a grant, in whichever form the tool gives it."""
    data = result.structured_content or {}
    if result.is_error:
        text = _text(result)
        return "denied: " in text or "is not a file in the index sources" in text
    return data.get("status") in ("denied", "not_found")


async def _run(server, calls):
    seen = []
    async with Client(server) as client:
        for name, args in calls:
            seen.append(await client.call_tool(name, args))
    return seen


def call_as(app, root, role, calls, tmp_path):
    factory = lambda vault, ctx: Caller("Tester <t@example.org>", role, "acl-test")  # noqa: E731
    server = build_server(app, tmp_path / "memory.jsonl", factory, vault_root=root)
    return anyio.run(_run, server, calls)


def versions(app, root) -> dict[str, str]:
    admin = Caller("Admin <a@x>", "admin", "setup")
    writer = app.writer(app.vault(root))
    paths = [f"{c}/{c}-{n}.md" for c in COLLECTIONS for n in ("one", "two")]
    return {path: writer.read(admin, path).version for path in paths}


def probes(root, role: str | None, collection: str, version: dict[str, str]) -> list[tuple[str, dict, str]]:
    """(tool, arguments, action) aimed at `collection`; action is the grant the call needs there."""
    one, two = f"{collection}/{collection}-one.md", f"{collection}/{collection}-two.md"
    tag = str(role)
    return [
        ("note_read", {"path": one}, "read"),
        ("note_read", {"path": one, "history": True}, "read"),
        ("get_note", {"path": str(root / one)}, "read"),
        ("note_write", {"op": "create", "path": f"{collection}/new-{tag}.md", "body": "# New\n\nfresh\n",
                        "frontmatter": {"title": "New"}}, "write"),
        ("note_write", {"op": "append", "path": two, "body": f"## From {tag}\n\nmore\n"}, "write"),
        ("note_write", {"op": "replace", "path": one, "body": "# Replaced\n\ntext\n", "base_version": version[one],
                        "frontmatter": {"title": "Replaced"}}, "write"),
        ("note_write", {"op": "promote", "path": one, "base_version": version[one]}, "promote"),
        ("note_write", {"op": "deprecate", "path": one, "base_version": version[one], "reason": "test"}, "write"),
        ("tension_log", {"a": one, "b": two, "description": f"{tag} sees a contradiction"}, "write"),
        ("graph_create", {"entities": [{"name": f"E {tag} {collection}", "entityType": "x",
                                        "source": str(root / one)}]}, "write"),
        ("index_paths", {"paths": [str(root / collection)]}, "write"),
        ("remove_source", {"path": str(root / collection)}, "write"),
    ]


def test_every_role_every_tool_inside_and_outside_its_grant(app, vault, tmp_path):
    """Path-aimed tools: allowed exactly where the config grants; denied otherwise."""
    problems = []
    for role in ROLES:
        for collection in COLLECTIONS:
            calls = probes(vault, role, collection, versions(app, vault))
            results = call_as(app, vault, role, [(n, a) for n, a, _ in calls], tmp_path)
            for (name, args, action), result in zip(calls, results, strict=True):
                expected = can(role, action, collection) if action != "promote" else can(role, "promote", collection)
                if action != "read" and not can(role, "read", collection):
                    expected = False
                if denied(result) == expected:
                    problems.append(f"{role} {name} {args.get('op', '')} in {collection}: expected "
                                    f"{'allowed' if expected else 'denied'}, got {_text(result)[:160]}")
    assert problems == []


def test_read_tools_show_only_granted_collections_before_the_limit(app, vault, tmp_path):
    for role in ROLES:
        results = call_as(app, vault, role, [
            ("search_notes", {"query": "aardvark", "limit": 2}),
            ("recall", {"query": "aardvark", "limit": 2}),
            ("graph_search", {"query": "gizmo"}),
            ("graph_open", {"names": ["Alpha gizmo", "Beta gizmo"]}),
            ("vault_review", {}),
            ("list_sources", {}),
        ], tmp_path)
        search, recall, graph, opened, review, sources = results
        readable = {c for c in COLLECTIONS if can(role, "read", c)}
        if not GRANTS[role][0]:  # the guest: every read tool refuses, none answers emptily
            assert all(denied(r) for r in results), role
            continue
        hits = search.structured_content["hits"]
        # limit 2 and four matching notes: the granted collection fills both slots
        assert len(hits) == 2 and {h["path"].split("/")[-2] for h in hits} <= readable, role
        assert {h["path"].split("/")[-2] for h in recall.structured_content["notes"]} <= readable, role
        assert len(recall.structured_content["notes"]) == 2, role
        shown = {e["name"] for e in graph.structured_content["entities"]}
        assert shown == {f"{c.title()} gizmo" for c in readable}, role
        assert {e["name"] for e in opened.structured_content["entities"]} == {f"{c.title()} gizmo" for c in readable}
        assert set(review.structured_content["data"]["collections"]) <= readable | {"docs"}
        assert denied(sources) == ("*" not in GRANTS[role][0]), role
        for hit in hits:
            assert "decay" in hit  # decay inline on every hit
        for hit in recall.structured_content["notes"]:  # and on recall's notes (each has ttl_days)
            assert hit["decay"]["state"] in ("fresh", "aging", "stale"), hit


def test_denied_and_missing_answer_alike(app, vault, tmp_path):
    """A caller without read on beta learns nothing about what beta holds."""
    for role in [r for r in ROLES if not can(r, "read", "beta")]:
        pairs = [
            ("note_read", {"path": "beta/beta-one.md"}, {"path": "beta/no-such-note.md"}),
            ("get_note", {"path": str(vault / "beta/beta-one.md")}, {"path": str(vault / "beta/no-such-note.md")}),
            ("note_write", {"op": "append", "path": "beta/beta-one.md", "body": "x"},
             {"op": "append", "path": "beta/no-such-note.md", "body": "x"}),
            ("tension_log", {"a": "beta/beta-one.md", "b": "beta/beta-two.md", "description": "d"},
             {"a": "beta/no-such-note.md", "b": "beta/beta-two.md", "description": "d"}),
            ("graph_open", {"names": ["Beta gizmo"]}, {"names": ["No such gizmo"]}),
        ]
        calls = [(name, args) for name, real, fake in pairs for args in (real, fake)]
        results = call_as(app, vault, role, calls, tmp_path)
        for index, (name, _real, _fake) in enumerate(pairs):
            first, second = results[2 * index], results[2 * index + 1]
            swap = lambda text: text.replace("beta-one.md", "X").replace("no-such-note.md", "X")  # noqa: E731
            swap_graph = lambda text: text.replace("Beta gizmo", "X").replace("No such gizmo", "X")  # noqa: E731
            assert first.is_error == second.is_error, (role, name)
            assert swap_graph(swap(_text(first))) == swap_graph(swap(_text(second))), (role, name)
            assert denied(first) or name == "graph_open", (role, name)


def test_frontmatter_cannot_widen_access_and_write_cannot_promote(app, vault, tmp_path):
    results = call_as(app, vault, "alpha_writer", [
        # a beta note that declares `collection: alpha` is still beta's
        ("search_notes", {"query": "zebracrossing", "collection": "alpha"}),
        ("note_read", {"path": "beta/spoof.md"}),
        # writing into beta while declaring alpha is refused
        ("note_write", {"op": "create", "path": "beta/sneak.md", "body": "x", "frontmatter": {"title": "S",
                                                                                          "collection": "alpha"}}),
        # status canonical through write is refused, for a role that could promote elsewhere too
        ("note_write", {"op": "create", "path": "alpha/canon.md", "body": "x",
                        "frontmatter": {"title": "C", "status": "canonical"}}),
    ], tmp_path)
    search, spoof, sneak, canon = results
    assert search.structured_content["hits"] == []
    assert denied(spoof) and denied(sneak)
    assert not (vault / "beta" / "sneak.md").exists()
    assert canon.structured_content["status"] in ("invalid", "refused"), _text(canon)
    assert not (vault / "alpha" / "canon.md").exists()
    admin_canon = call_as(app, vault, "admin", [
        ("note_write", {"op": "replace", "path": "alpha/alpha-one.md", "body": "x",
                        "base_version": versions(app, vault)["alpha/alpha-one.md"],
                        "frontmatter": {"title": "A", "status": "canonical"}})], tmp_path)[0]
    assert admin_canon.structured_content["status"] in ("invalid", "refused")  # even with the promote grant
    assert "status: canonical" not in (vault / "alpha" / "alpha-one.md").read_text()


def test_reindex_without_a_grant_is_refused(app, vault, tmp_path):
    before = app.sources()
    for role in ("alpha_reader", "alpha_writer", None):
        results = call_as(app, vault, role, [
            ("index_paths", {"paths": []}),
            ("index_paths", {"paths": [str(vault)]}),
            ("index_paths", {"paths": [str(vault / "beta")]}),
            ("index_paths", {"paths": [str(tmp_path)]}),  # outside the vault: only "*"
            ("remove_source", {"path": str(vault)}),
        ], tmp_path)
        assert all(denied(r) and r.is_error for r in results), (role, [_text(r)[:80] for r in results])
    assert app.sources() == before
    allowed = call_as(app, vault, "admin", [("index_paths", {"paths": []})], tmp_path)[0]
    assert not allowed.is_error and allowed.structured_content["unchanged"] >= 1


async def _stdio(params, calls):
    seen = []
    with anyio.fail_after(TIMEOUT_S):
        async with (stdio_client(params) as (read, write_stream),
                    ClientSession(read, write_stream, client_info=Implementation(name="acl-probe", version="1"))
                    as session):
            await session.initialize()
            for name, args in calls:
                seen.append(await session.call_tool(name, args))
    return seen


def test_stdio_roles_from_vault_role_and_the_agent_claim(app, vault, tmp_path):
    """The same rules over a spawned server; the role comes from VAULT_ROLE, the agent from clientInfo."""
    env = {"VAULT_INDEX_DB": str(tmp_path / "index.db"), "VAULT_EMBED_MODEL": "none", "VAULT_RERANK": "0",
           "VAULT_MEMORY_FILE": str(tmp_path / "memory.jsonl"), "CLAUDE_PROJECT_DIR": str(vault),
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "mcp"), "HOME": os.environ.get("HOME", str(tmp_path)),
           "PATH": os.environ.get("PATH", "")}
    app.close()  # the spawned server opens the same index file

    def run(role, calls):
        params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index"],
                                       env={**env, **({"VAULT_ROLE": role} if role else {})}, cwd=str(vault))
        return anyio.run(_stdio, params, calls)

    reader = run("alpha_reader", [("search_notes", {"query": "aardvark", "limit": 2}),
                                  ("note_read", {"path": "beta/beta-one.md"}),
                                  ("note_read", {"path": "beta/nothing.md"}),
                                  ("note_write", {"op": "create", "path": "alpha/r.md", "body": "x"}),
                                  ("index_paths", {"paths": []})])
    assert {h["path"].split("/")[-2] for h in reader[0].structured_content["hits"]} == {"alpha"}
    assert _text(reader[1]).replace("beta-one", "X") == _text(reader[2]).replace("nothing", "X")
    assert all(denied(r) for r in reader[1:])
    guest = run(None, [("search_notes", {"query": "aardvark"}), ("vault_review", {})])
    assert all(denied(r) for r in guest)
    editor = run("alpha_editor", [("note_write", {"op": "create", "path": "alpha/by-agent.md",
                                                  "body": "# By agent\n\ntext\n", "frontmatter": {"title": "B"}})])
    assert editor[0].structured_content["status"] == "written", _text(editor[0])
    log = subprocess.run(["git", "-C", str(vault), "log", "-1", "--format=%B"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    assert "Vault-Agent: acl-probe" in log and "Vault-Role: alpha_editor" in log


def test_lesson_and_adr_tools_need_write_on_docs(app, vault, tmp_path):
    for role in ROLES:
        results = call_as(app, vault, role, [
            ("lesson_add", {"lesson": f"Rule from {role}", "cause": "c", "detect": "d"}),
            ("lesson_retire", {"id": "L-9999", "reason": "r"}),
            ("adr_create", {"title": f"Decision by {role}", "context": "c", "options": "o", "decision": "d"}),
        ], tmp_path)
        expected = can(role, "write", "docs")
        assert [not denied(r) for r in results] == [expected] * 3, (role, [_text(r)[:100] for r in results])
    lessons_text = (vault / "docs" / "lessons.md").read_text()
    assert "Rule from admin" in lessons_text and "Rule from alpha_editor" in lessons_text
    assert "Rule from alpha_writer" not in lessons_text and "Rule from None" not in lessons_text


GUEST_CALLS = {  # one valid call per tool; a tool added without an entry here fails the next test
    "search_notes": {"query": "aardvark"}, "get_note": {"path": "alpha/alpha-one.md"}, "list_sources": {},
    "index_paths": {"paths": []}, "remove_source": {"path": "alpha"},
    "graph_create": {"entities": [{"name": "G", "entityType": "x", "source": "alpha/alpha-one.md"}]},
    "graph_search": {"query": "gizmo"}, "graph_open": {"names": ["Alpha gizmo"]}, "recall": {"query": "aardvark"},
    "lesson_add": {"lesson": "l", "cause": "c", "detect": "d"},
    "lesson_supersede": {"old_id": "L-0001", "lesson": "l", "cause": "c", "detect": "d"},
    "lesson_retire": {"id": "L-0001", "reason": "r"},
    "adr_create": {"title": "t", "context": "c", "options": "o", "decision": "d"},
    "note_read": {"path": "alpha/alpha-one.md"},
    "note_write": {"op": "append", "path": "alpha/alpha-one.md", "body": "x"},
    "tension_log": {"a": "alpha/alpha-one.md", "b": "alpha/alpha-two.md", "description": "d"},
    "vault_review": {}, "note_links": {"direction": "backlinks", "path": "alpha/alpha-one.md"},
}


@pytest.mark.parametrize("role", [None, "nobody"])
def test_the_guest_is_denied_every_tool(app, vault, tmp_path, role):
    server = build_server(app, tmp_path / "memory.jsonl", lambda v, ctx: Caller("G <g@x>", role, "t"),
                          vault_root=vault)
    listed = {t.name for t in anyio.run(server.list_tools)}
    assert listed == set(GUEST_CALLS)
    results = call_as(app, vault, role, list(GUEST_CALLS.items()), tmp_path)
    refused = {name for name, result in zip(GUEST_CALLS, results, strict=True) if denied(result)}
    assert refused == listed, [(n, _text(r)[:100]) for n, r in zip(GUEST_CALLS, results, strict=True)
                               if n not in refused]


def test_a_folder_differing_only_in_letter_case_is_another_collection(app, vault, tmp_path):
    """SQLite's LIKE ignores case: the exact per-path check must still keep `Alpha/` from `alpha` readers."""
    write(vault, "Alpha/hidden.md", note("hidden", "quetzalcoatl feathers"))
    app.index([str(vault)])
    reader, admin = (call_as(app, vault, role, [("search_notes", {"query": "quetzalcoatl"}),
                                                ("recall", {"query": "quetzalcoatl"})], tmp_path)
                     for role in ("alpha_reader", "admin"))
    assert reader[0].structured_content["hits"] == [] and reader[1].structured_content["notes"] == []
    assert [h["path"] for h in admin[0].structured_content["hits"]] == [str(vault / "Alpha" / "hidden.md")]
