"""Prompts and resources for hosts other than Claude Code, through the real MCP SDK client.

The prompts must say what the slash command files say (one source, no drift); a note resource
must refuse exactly what get_note refuses, in the same words, whether or not the target exists.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import anyio
import pytest
from helpers import CLI, REPO, cli_env, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from vault_index.engine.embedding.models import Models
from vault_index.services.app import MAX_NOTE_LINES, App
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.writes.write import Caller
from vault_index.surfaces import resources as resources_module
from vault_index.surfaces.prompt_host import runnable_here
from vault_index.surfaces.prompts import ARGUMENT_NAMES, MAX_ARGUMENT_CHARS
from vault_index.surfaces.resources import GUIDE_URI, NOTE_TEMPLATE, PAGE_SIZE, note_uri
from vault_index.surfaces.tools import build_server

from mcp import Client

COMMANDS_DIR = REPO / ".claude" / "commands"
TIMEOUT_S = 60
EVENT_WAIT_S = 15  # a notice is sent right after the request that caused it; this only bounds a hang
# Prompts and resource templates are listed once per connection by hosts that show them; they do
# not ride along with every turn as tools/list does, but they should stay small too.
PROMPTS_AND_TEMPLATES_TOKEN_BUDGET = 2000


def slash_command_text(name: str, arguments: str) -> str:
    """What Claude Code sends for `/name arguments`, read from .claude/commands, with its script calls
    as they run where the server runs (the prompt goes to projects that have no scripts/)."""
    text = (COMMANDS_DIR / f"{name}.md").read_text(encoding="utf-8")
    body = re.match(r"\A---\n.*?\n---\n(.*)\Z", text, re.S).group(1)
    # the script calls as they run where this server runs (surfaces/prompt_host.py, tests/surfaces/test_prompt_host.py)
    return runnable_here(body.strip().replace("$ARGUMENTS", arguments))


def _run(server, fn):
    async def run():
        with anyio.fail_after(TIMEOUT_S):
            async with Client(server) as client:
                return await fn(client)

    return anyio.run(run)


def _error(coroutine_fn):
    """The message of the MCPError a call raises (the test fails if it does not raise)."""

    async def run(client):
        with pytest.raises(MCPError) as caught:
            await coroutine_fn(client)
        return caught.value.error.message

    return run


@pytest.fixture
def served(tmp_path, vault, open_app):
    """An app indexing `vault` and the server over it; an outside note next to the vault."""
    app = open_app(None)
    app.index([str(vault)])
    write(tmp_path, "outside.md", "# Outside\n\nnot for the agent\n")
    return app, build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path)


# --- prompts -------------------------------------------------------------------------------------


def test_command_files_are_the_package_copies_byte_for_byte():
    sys.path.insert(0, str(REPO / "scripts"))
    from sync_commands import differences

    packaged = sorted(p.name for p in (REPO / "mcp" / "vault_index" / "surfaces" / "commands").glob("*.md"))
    assert packaged == sorted(f"{name}.md" for name in ARGUMENT_NAMES)
    assert differences() == [], "run: python3 scripts/sync_commands.py"
    check = subprocess.run([sys.executable, str(REPO / "scripts" / "sync_commands.py"), "--check"],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout


def test_sync_check_names_a_drifted_copy(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    from sync_commands import SOURCE, differences

    copy = tmp_path / "commands"
    copy.mkdir()
    for source in SOURCE.glob("*.md"):
        (copy / source.name).write_bytes(source.read_bytes())
    assert differences(SOURCE, copy) == []
    (copy / "learn.md").write_text("drifted\n", encoding="utf-8")
    (copy / "extra.md").write_text("x\n", encoding="utf-8")
    assert differences(SOURCE, copy) == ["extra.md", "learn.md"]


def test_each_prompt_is_its_slash_command_with_the_argument_in_place(served):
    app, server = served
    argument = "garden sensor battery life"

    async def fetch(client):
        listed = (await client.list_prompts()).prompts
        got = {p.name: await client.get_prompt(p.name, {p.arguments[0].name: argument}) for p in listed}
        return listed, got

    listed, got = _run(server, fetch)
    assert sorted(p.name for p in listed) == sorted(ARGUMENT_NAMES)
    for prompt in listed:
        [arg] = prompt.arguments
        assert arg.name == ARGUMENT_NAMES[prompt.name]
        hint = re.search(r"^argument-hint: (.*)$", (COMMANDS_DIR / f"{prompt.name}.md").read_text(), re.M).group(1)
        assert arg.required == hint.startswith("<"), prompt.name
        [message] = got[prompt.name].messages
        assert message.role == "user"
        assert message.content.text == slash_command_text(prompt.name, argument)
        assert "$ARGUMENTS" not in message.content.text and argument in message.content.text


def test_prompt_arguments_are_checked(served):
    app, server = served

    async def run(client):
        optional = await client.get_prompt("handoff", {})
        errors = [await _error(lambda c, a=args: c.get_prompt("recall", a))(client)
                  for args in ({}, {"topic": "x", "query": "y"}, {"topic": "x" * (MAX_ARGUMENT_CHARS + 1)},
                               {"topic": "   "})]
        return optional, errors

    optional, errors = _run(server, run)
    assert optional.messages[0].content.text == slash_command_text("handoff", "")
    missing, unknown, long, blank = errors
    assert "topic" in missing
    assert "topic" in unknown and "query" in unknown
    assert str(MAX_ARGUMENT_CHARS) in long
    assert "topic" in blank


# --- resources -----------------------------------------------------------------------------------


def test_a_note_resource_is_the_note_and_the_template_names_any_note(served, vault):
    app, server = served

    async def run(client):
        templates = (await client.list_resource_templates()).resource_templates
        listed = (await client.list_resources()).resources
        read = await client.read_resource(note_uri("kitchen/sourdough.md"))
        guide = await client.read_resource(GUIDE_URI)
        return templates, listed, read, guide

    templates, listed, read, guide = _run(server, run)
    assert [(t.uri_template, t.mime_type) for t in templates] == [(NOTE_TEMPLATE, "text/markdown")]
    uris = [r.uri for r in listed]
    assert uris[0] == GUIDE_URI
    # every indexed note, nothing under secrets/ or .hidden/
    assert sorted(uris[1:]) == sorted(note_uri(p) for p in
                                      ["garden.md", "bike.md", "kitchen/sourdough.md", "ops/old-runbook.md"])
    assert all(r.mime_type == "text/markdown" for r in listed)
    [content] = read.contents
    assert content.text == (vault / "kitchen" / "sourdough.md").read_text().rstrip("\n")
    assert content.mime_type == "text/markdown"
    text = guide.contents[0].text
    assert "4 markdown notes in 1 source" in text and str(vault) in text and NOTE_TEMPLATE in text


# Pairs: (a path that exists, one that does not) of each kind get_note refuses.
REFUSED_PAIRS = {
    "secrets": ("secrets/keys.md", "secrets/none.md"),
    "secrets, other case": ("SECRETS/keys.md", "Secrets/none.md"),
    "hidden": (".hidden/notes.md", ".hidden/none.md"),
    "outside, relative": ("../outside.md", "../nowhere.md"),
    "outside, absolute": ("{tmp}/outside.md", "{tmp}/nowhere.md"),
    "outside, through a subfolder": ("kitchen/../../outside.md", "kitchen/../../nowhere.md"),
}
MISSING_INSIDE = "kitchen/none.md"  # refused as missing: the resource must say what get_note says


def test_resource_read_refuses_what_get_note_refuses_in_its_words(served, tmp_path):
    app, server = served
    paths = [p.format(tmp=tmp_path) for pair in REFUSED_PAIRS.values() for p in pair] + [MISSING_INSIDE]

    async def run(client):
        answers = {}
        for path in paths:
            tool = await client.call_tool("get_note", {"path": path})
            assert tool.is_error, path
            resource = await _error(lambda c, p=path: c.read_resource(note_uri(p)))(client)
            # the SDK puts "Error executing tool get_note: " before a tool's refusal
            answers[path] = (tool.content[0].text.removeprefix("Error executing tool get_note: "), resource)
        return answers

    answers = _run(server, run)
    for path, (tool_text, resource_text) in answers.items():
        assert resource_text == tool_text, path
    for kind, pair in REFUSED_PAIRS.items():
        exists, missing = (p.format(tmp=tmp_path) for p in pair)
        # the same words, but for the path as given
        assert answers[exists][1].replace(exists, "<p>") == answers[missing][1].replace(missing, "<p>"), kind


def test_resources_follow_the_callers_read_grants(tmp_path, monkeypatch, open_app):
    root = tmp_path / "team"
    scaffold(root)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    write(root, "drafts/plan.md", "# Plan\n\ndraft only\n")
    app = open_app(None)
    app.index([str(root)])
    reader = build_server(app, tmp_path / "memory.jsonl", lambda vault, ctx: Caller("R <r@x>", "reader", "t"),
                          vault_root=root)

    async def run(client):
        listed = [r.uri for r in (await client.list_resources()).resources]
        denied = await _error(lambda c: c.read_resource(note_uri("drafts/plan.md")))(client)
        missing = await _error(lambda c: c.read_resource(note_uri("drafts/none.md")))(client)
        return listed, denied, missing

    listed, denied, missing = _run(reader, run)
    assert listed and not any("/drafts/" in uri for uri in listed)
    assert any("/research/" in uri for uri in listed)
    assert denied.replace("plan.md", "<p>") == missing.replace("none.md", "<p>")


def test_a_long_note_is_bounded_and_says_where_it_stops(tmp_path, open_app):
    root = tmp_path / "long"
    write(root, "long.md", "# Long\n" + "".join(f"line {i}\n" for i in range(2, MAX_NOTE_LINES + 500)))
    app = open_app(None)
    app.index([str(root)])
    server = build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path)
    text = _run(server, lambda c: c.read_resource(note_uri("long.md"))).contents[0].text
    lines = text.split("\n")
    assert lines[MAX_NOTE_LINES - 1] == f"line {MAX_NOTE_LINES}"
    assert f"start_line={MAX_NOTE_LINES + 1}" in lines[-1] and len(lines) == MAX_NOTE_LINES + 2


def test_resources_list_pages_with_a_cursor(tmp_path, open_app, monkeypatch):
    monkeypatch.setattr(resources_module, "PAGE_SIZE", 7)
    root = tmp_path / "many"
    for i in range(17):
        write(root, f"n{i:02}.md", f"# Note {i}\n")
    app = open_app(None)
    app.index([str(root)])
    server = build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path)

    async def run(client):
        pages, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor)
            pages.append([r.uri for r in page.resources])
            cursor = page.next_cursor
            if cursor is None or len(pages) > 10:
                return pages, await _error(lambda c: c.list_resources(cursor="not-a-cursor"))(client)

    pages, bad = _run(server, run)
    assert [len(p) for p in pages] == [8, 7, 3]  # the guide rides on the first page only
    notes = [uri for page in pages for uri in page if uri != GUIDE_URI]
    assert notes == [note_uri(f"n{i:02}.md") for i in range(17)]
    assert "cursor" in bad
    assert PAGE_SIZE == 100


def test_note_names_that_uris_reserve_come_back(tmp_path, open_app):
    root = tmp_path / "odd"
    names = ["q?x.md", "h#1.md", "pc%41.md", "a+b.md", "my note.md", "ü.md", "sub/x y/z.md"]
    for name in names:
        write(root, name, f"# {name}\n")
    app = open_app(None)
    app.index([str(root)])
    server = build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path)

    async def run(client):
        uris = [r.uri for r in (await client.list_resources()).resources if r.uri != GUIDE_URI]
        return {(await client.read_resource(u)).contents[0].text for u in uris}, uris

    texts, uris = _run(server, run)
    assert texts == {f"# {name}" for name in names}
    assert not any(c in uri.removeprefix("vault-index:") for uri in uris for c in "?# ")


def test_a_shadowed_relative_path_is_listed_by_its_absolute_path(tmp_path, open_app):
    first, second = tmp_path / "a", tmp_path / "b"
    write(first, "same.md", "# First\n")
    write(second, "same.md", "# Second\n")
    app = open_app(None)
    app.index([str(first), str(second)])
    server = build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path)

    async def run(client):
        uris = [r.uri for r in (await client.list_resources()).resources if r.uri != GUIDE_URI]
        return uris, [(await client.read_resource(u)).contents[0].text for u in uris]

    uris, texts = _run(server, run)
    # `same.md` names two notes (an error since issue 39 item 4): each is listed by its real path
    assert uris == [note_uri(str((first / "same.md").resolve())), note_uri(str((second / "same.md").resolve()))]
    assert texts == ["# First", "# Second"]


def test_prompts_and_templates_stay_small_and_tools_list_keeps_its_budget(tmp_path):
    from test_tools_surface import TOOLS_LIST_TOKEN_BUDGET, token_counter, tools_list

    count = token_counter()
    app = App.open(__import__("helpers").make_settings(tmp_path), models=Models.fixed(None))
    try:
        server = build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path)
        prompts = anyio.run(server.list_prompts)
        templates = anyio.run(server.list_resource_templates)
    finally:
        app.close()
    dump = lambda items: [i.model_dump(by_alias=True, exclude_none=True, mode="json") for i in items]  # noqa: E731
    wire = json.dumps({"prompts": dump(prompts), "resourceTemplates": dump(templates)}, separators=(",", ":"))
    assert count(wire) <= PROMPTS_AND_TEMPLATES_TOKEN_BUDGET, count(wire)
    tools = json.dumps({"tools": tools_list(tmp_path / "t")}, separators=(",", ":"))
    assert count(tools) <= TOOLS_LIST_TOKEN_BUDGET, count(tools)
    print(f"tools/list {count(tools)} tokens; prompts/list + resources/templates/list {count(wire)} tokens")


# --- list_changed over stdio (the handshake era, as most hosts speak it today) -------------------


async def _watch_list_changes(params, new_source, errlog) -> dict:
    seen: dict = {"notices": []}

    async def on_message(message):
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/resources/list_changed":
            seen["notices"].append(method)

    with anyio.fail_after(TIMEOUT_S):
        async with (
            stdio_client(params, errlog=errlog) as (read, write_stream),
            ClientSession(read, write_stream, message_handler=on_message) as session,
        ):
            init = await session.initialize()
            seen["capability"] = init.capabilities.resources.list_changed
            await session.call_tool("search_notes", {"query": "garden", "mode": "keyword"})
            await anyio.sleep(0.2)
            seen["after_search"] = len(seen["notices"])
            await session.call_tool("index_paths", {"paths": [str(new_source)]})
            await session.send_ping()
            seen["after_index"] = len(seen["notices"])
            seen["listed"] = [r.uri for r in (await session.list_resources()).resources]
    return seen


def test_list_changed_is_advertised_and_sent_when_a_source_is_added(tmp_path, vault):
    db = tmp_path / "mcp" / "index.db"
    env = cli_env(db)
    subprocess.run([CLI, "index", str(vault), "-s"], env=env, check=True, capture_output=True, timeout=60)
    new_source = tmp_path / "second"
    write(new_source, "spiny.md", "# Spiny\n\nThe echidna lays eggs.\n")
    server_env = {k: v for k, v in env.items() if k.startswith(("VAULT_", "HF_", "PYTHONPATH"))}
    server_env["VAULT_MEMORY_FILE"] = str(tmp_path / "memory.jsonl")
    params = StdioServerParameters(command=CLI, args=[], env=server_env, cwd=str(tmp_path))
    with open(tmp_path / "server-stderr.log", "w") as errlog:
        seen = anyio.run(_watch_list_changes, params, new_source, errlog)
    assert seen["capability"] is True
    assert seen["after_search"] == 0  # a search changes no list
    assert seen["after_index"] == 1
    assert note_uri(str((new_source / "spiny.md").resolve())) in seen["listed"] or \
        note_uri("spiny.md") in seen["listed"]


def test_list_changed_reaches_a_listen_stream_on_the_2026_protocol(served, tmp_path, monkeypatch):
    app, server = served
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))  # an agent may add sources inside its project
    new_source = tmp_path / "third"
    write(new_source, "wombat.md", "# Wombat\n\nCube-shaped droppings.\n")

    async def run(client):
        events = []
        async with client.listen(resources_list_changed=True) as stream:
            await client.call_tool("search_notes", {"query": "garden", "mode": "keyword"})
            with anyio.move_on_after(0.5):
                events.append(("after search", await stream.__anext__()))
            await client.call_tool("index_paths", {"paths": [str(new_source)]})
            with anyio.fail_after(EVENT_WAIT_S):
                events.append(("after index", await stream.__anext__()))
        return events

    events = _run(server, run)
    assert [(when, type(event).__name__) for when, event in events] == [("after index", "ResourcesListChanged")]
