"""The edit operations on the surfaces: MCP note_write (op=prepend|replace_section|find_replace|move)
through the real SDK client, vault_review's recent_days, and the CLI commands as subprocesses, on a
plain notes folder and in a vault made by `vault-index init`."""

from __future__ import annotations

import json
import subprocess

import anyio
import pytest
from helpers import CLI, cli_env, write
from vault_index.surfaces.tools import build_server

from mcp import Client

NOTE = "# Trip\n\n## Packing\n\nboots\n\n## Route\n\nnorth ridge\n"


@pytest.fixture(params=["plain", "vault"])
def folder(request, tmp_path, monkeypatch):
    """(root, collection folder): a person's notes folder, or a vault from the real `init` command."""
    env = cli_env(tmp_path / "cli" / "index.db")
    if request.param == "plain":
        root = tmp_path / "notes"
        write(root, "trips/alps.md", NOTE)
        write(root, "index.md", "Trips: [[alps]] and [the alps](trips/alps.md).\n")
        sub = "trips"
    else:
        root = tmp_path / "vault"
        subprocess.run([CLI, "init", str(root), "--no-index"], env=env, check=True, capture_output=True)
        sub = "research"
        head = "---\ntitle: Trip\nstatus: draft\ncreated: 2026-01-02\nupdated: 2026-01-02\n---\n"
        write(root, "research/alps.md", head + NOTE)
        write(root, "drafts/index.md", head.replace("Trip", "Index") + "Trips: [[alps]] and [the alps]"
                                                                       "(../research/alps.md).\n")
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(root), "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-q", "-m",
                        "notes"], check=True)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    return root, sub, request.param


def _outcomes(server, calls):
    async def run():
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            results = [await client.call_tool(name, args) for name, args in calls]
            return tools, [r.structured_content for r in results]

    return anyio.run(run)


def test_note_write_offers_every_edit_op_and_they_write_through_the_service(folder, tmp_path, open_app):
    root, sub, kind = folder
    app = open_app(None)
    app.index([str(root)])
    server = build_server(app, tmp_path / "memory.jsonl", vault_root=root)
    path = f"{sub}/alps.md"
    tools, (read, prepended, stale, section, counted, moved, recent, misplaced, nowhere) = _outcomes(server, [
        ("note_read", {"path": path}),
        ("note_write", {"op": "prepend", "path": path, "body": "Two days."}),
        ("note_write", {"op": "replace_section", "path": path, "heading": "Route", "body": "south face",
                        "base_version": "0000000000000000"}),
        ("note_write", {"op": "replace_section", "path": path, "heading": "## Route", "body": "south face",
                        "base_version": None}),
        ("note_write", {"op": "find_replace", "path": path, "find": "boots", "body": "crampons", "count": 2}),
        ("note_write", {"op": "move", "path": path, "new_path": f"{sub}/alps-2026.md"}),
        ("vault_review", {"lint": False, "recent_days": 1}),
        ("note_write", {"op": "prepend", "path": f"{sub}/alps-2026.md", "body": "x", "frontmatter": {"a": 1}}),
        ("note_write", {"op": "move", "path": f"{sub}/alps-2026.md"}),
    ])
    ops = tools["note_write"].input_schema["properties"]["op"]["enum"]
    assert {"prepend", "replace_section", "find_replace", "move"} <= set(ops)
    assert read["status"] == "ok" and prepended["status"] == "written", prepended
    assert stale["status"] == "stale"
    assert section["status"] == "invalid" and section["data"]["problems"][0]["field"] == "base_version"
    assert counted["status"] == "invalid" and "occurs 1 time" in counted["data"]["problems"][0]["message"]
    assert moved["status"] == "written" and moved["path"] == str(root / sub / "alps-2026.md"), moved  # absolute
    linker = root / ("index.md" if kind == "plain" else "drafts/index.md")
    assert "[[alps-2026]]" in linker.read_text() and "alps-2026.md)" in linker.read_text()
    body = (root / sub / "alps-2026.md").read_text()
    assert "Two days.\n\n# Trip\n\n## Packing\n\nboots\n\n## Route\n\nnorth ridge\n" in body
    assert f"{sub}/alps-2026.md" in {entry["path"] for entry in recent["data"]["recent"]}
    assert misplaced["status"] == "invalid" and "frontmatter" in misplaced["message"]
    assert nowhere["status"] == "invalid" and "new_path" in nowhere["message"]
    # the moved note is found at its new path by the next search (re-indexed in the write)
    assert app.search("north ridge", "keyword", 3).hits[0].path == str(root / sub / "alps-2026.md")


def test_the_edit_commands_on_the_command_line(folder, tmp_path):
    root, sub, kind = folder
    env = {**cli_env(tmp_path / "cli" / "index.db"), "CLAUDE_PROJECT_DIR": str(root)}
    env.pop("VAULT_ROLE", None)
    path = f"{sub}/alps.md"

    def run(*args, code=0):
        proc = subprocess.run([CLI, *args, "--json"], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        return json.loads(proc.stdout)

    version = run("read", path)["version"]
    out = run("replace-section", path, "Packing", "--body", "rope\nharness", "--base-version", version)
    assert out["status"] == "written"
    assert (root / path).read_text().endswith("## Packing\n\nrope\nharness\n\n## Route\n\nnorth ridge\n")
    assert run("replace-section", path, "Packing", "--body", "x", "--base-version", version, code=11)["status"] \
        == "stale"
    assert run("replace-section", path, "Gear", "--body", "x", "--base-version", out["version"], code=2)[
        "data"]["problems"][0]["rule"] == "missing"
    assert run("find-replace", path, "ridge", "face")["status"] == "written"
    assert run("find-replace", path, "ridge", "face", code=2)["status"] == "invalid"
    assert run("prepend", path, "--body", "Summer.")["status"] == "written"
    moved = run("move", path, f"{sub}/alps-summer.md")
    assert moved["status"] == "written" and moved["data"]["result"]["from"] == path
    assert run("move", f"{sub}/alps-summer.md", "index.md" if kind == "plain" else "drafts/index.md",
               code=2)["status"] == "refused"
    recent = run("recent", "--days", "1")["data"]["recent"]
    assert f"{sub}/alps-summer.md" in {entry["path"] for entry in recent}
    assert path not in {entry["path"] for entry in recent}  # the old name is gone, not recent
    if kind == "vault":  # every edit is one commit with its operation
        log = subprocess.run(["git", "-C", str(root), "log", "--format=%(trailers:key=Vault-Operation,valueonly)"],
                             capture_output=True, text=True, check=True).stdout.split()
        assert log[:4] == ["move", "prepend", "find_replace", "replace_section"]
