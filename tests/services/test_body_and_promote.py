"""A frontmatter-only replace keeps the body; promote refuses an empty body and a missing successor,
and says when the canonical note stays in drafts/ (issue 22, High). Real CLI, MCP SDK and git."""

from __future__ import annotations

import json

import anyio
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService
from vault_index.surfaces.cli import main
from vault_index.surfaces.tools import build_server

from mcp import Client

ED = Caller("Ed <ed@example.org>", "editor", "test")
BODY = "# Wombat\n\nWombats dig burrows.\n"
FIELDS = {"title": "Wombat", "confidence": "high", "sources": ["field notes"], "ttl_days": 30}


def _cli(capsys, *argv) -> dict:
    code = main([*argv, "--json"])
    out = json.loads(capsys.readouterr().out)
    out["exit"] = code
    return out


def test_cli_replace_with_only_set_keeps_the_body(tmp_path, capsys, monkeypatch):
    root = tmp_path / "vault"
    scaffold(root)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    made = _cli(capsys, "write", "drafts/w.md", "--vault", str(root), "--body", BODY, "--set", "title=Wombat")
    changed = _cli(capsys, "write", "drafts/w.md", "--vault", str(root), "--base-version", made["version"],
                   "--set", "confidence=low")
    assert changed["status"] == "written"
    text = (root / "drafts" / "w.md").read_text()
    assert "confidence: low" in text and text.endswith(BODY)  # old code: the body was gone
    emptied = _cli(capsys, "write", "drafts/w.md", "--vault", str(root), "--base-version", changed["version"],
                   "--body", "")
    assert emptied["status"] == "written" and (root / "drafts" / "w.md").read_text().endswith("---\n")


def test_mcp_replace_with_only_frontmatter_keeps_the_body(tmp_path, monkeypatch, open_app):
    root = tmp_path / "vault"
    scaffold(root)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    app = open_app(None)
    server = build_server(app, tmp_path / "memory.jsonl", lambda v, ctx: ED, vault_root=root)

    async def run():
        async with Client(server) as client:
            made = await client.call_tool("note_write", {"op": "create", "path": "drafts/w.md", "body": BODY,
                                                         "frontmatter": FIELDS})
            return await client.call_tool("note_write", {
                "op": "replace", "path": "drafts/w.md", "base_version": made.structured_content["version"],
                "frontmatter": {**FIELDS, "tags": ["animal"]}})

    replaced = anyio.run(run)
    assert replaced.structured_content["status"] == "written"
    assert (root / "drafts" / "w.md").read_text().endswith(BODY)


def _draft(root, body, **extra):
    service = WriteService(Vault.open(root))
    made = service.write(ED, WriteRequest("create", "research/w.md", body=body, frontmatter={**FIELDS, **extra}))
    assert made.status == "written", made
    return service, made.version


def test_promote_refuses_an_empty_body_and_a_successor_that_does_not_exist(tmp_path):
    root = tmp_path / "vault"
    scaffold(root)
    service, version = _draft(root, "\n")
    empty = service.write(ED, WriteRequest("promote", "research/w.md", base_version=version))
    assert empty.status == "invalid" and [p["field"] for p in empty.problems] == ["body"]  # old code: written
    (root / "research" / "w.md").unlink()
    service, version = _draft(root, BODY, superseded_by="research/nowhere.md")
    dangling = service.write(ED, WriteRequest("promote", "research/w.md", base_version=version))
    assert dangling.status == "invalid" and [p["field"] for p in dangling.problems] == ["superseded_by"]
    assert "status: draft" in (root / "research" / "w.md").read_text()


def test_promote_in_drafts_says_the_note_stayed_there(tmp_path):
    root = tmp_path / "vault"
    scaffold(root)
    service = WriteService(Vault.open(root))
    made = service.write(ED, WriteRequest("create", "drafts/w.md", body=BODY, frontmatter=FIELDS))
    promoted = service.write(ED, WriteRequest("promote", "drafts/w.md", base_version=made.version))
    assert promoted.status == "written"
    assert any("still in drafts/" in n for n in promoted.notices)  # old code: no word about it
