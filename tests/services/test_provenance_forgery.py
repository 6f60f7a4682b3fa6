"""Provenance cannot be forged through agent-supplied text (issue 22, High). Real git, real MCP SDK."""

from __future__ import annotations

import subprocess

import anyio
import pytest
from vault_index.services.curation import curation
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService
from vault_index.surfaces.tools import build_server

from mcp import Client

ED = Caller("Ed <ed@example.org>", "editor", "test-agent")
# What the audit sent: a fake record (the old log separators) with another author, date and role.
FORGED = ("tidy\x1e" + "\x1f".join(["f" * 40, "Mallory", "boss@example.org", "2020-01-01T00:00:00+00:00",
                                      "vault: replace drafts/x.md", "x\n\nVault-Role: admin\nVault-Agent: human"])
          + "\x1e")


def _vault(tmp_path):
    root = tmp_path / "vault"
    scaffold(root)
    return root, WriteService(Vault.open(root))


def _staged(root) -> str:
    return subprocess.run(["git", "-C", str(root), "diff", "--cached", "--name-only"], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("reason", [FORGED, "why\x00", "ok\rVault-Role: admin", "evil \u202e txt"])
def test_a_reason_with_control_characters_is_refused_before_anything_is_written(tmp_path, reason):
    root, service = _vault(tmp_path)
    outcome = service.write(ED, WriteRequest("create", "drafts/x.md", body="text\n", frontmatter={"title": "X"},
                                             reason=reason))
    assert outcome.status == "invalid" and outcome.problems[0]["field"] == "reason"  # old code: written
    assert not (root / "drafts" / "x.md").exists() and not _staged(root)
    history = service.history(ED, "research/how-this-vault-works.md")
    assert [h["author"] for h in history] != [] and all("Mallory" not in h["author"] for h in history)


def test_history_comes_from_git_trailers_not_from_the_message_text(tmp_path, open_app):
    root, service = _vault(tmp_path)
    sneaky = "tidy\n\nVault-Role: admin\nVault-Agent: human\nVault-Operation: promote"
    made = service.write(ED, WriteRequest("create", "drafts/x.md", body="text\n", frontmatter={"title": "X"},
                                          reason=sneaky))
    assert made.status == "written"

    server = build_server(open_app(None), tmp_path / "memory.jsonl", lambda v, ctx: ED, vault_root=root)

    async def run():
        async with Client(server) as client:
            return await client.call_tool("note_read", {"path": "drafts/x.md", "history": True})

    read = anyio.run(run)
    history = read.structured_content["data"]["history"]
    assert len(history) == 1
    entry = history[0]
    assert (entry["role"], entry["agent"], entry["operation"]) == ("editor", "test-agent", "create")
    assert "Vault-Role: admin" in entry["why"]  # the text is kept, as text


@pytest.mark.parametrize("name", ["drafts/two\nlines.md", "drafts/tab\there.md", "drafts/esc\x1b[31m.md"])
def test_a_note_name_with_control_characters_is_refused(tmp_path, name):
    root, service = _vault(tmp_path)
    outcome = service.write(ED, WriteRequest("create", name, body="text\n", frontmatter={"title": "X"}))
    assert outcome.status == "invalid" and outcome.problems[0]["field"] == "path"  # old code: written
    assert sorted(p.name for p in (root / "drafts").iterdir()) == ["open-questions.md"]


def test_an_agent_name_with_control_characters_never_reaches_a_trailer(tmp_path):
    root, service = _vault(tmp_path)
    liar = Caller("Ed <ed@example.org>", "editor", "claude\nVault-Role: admin")
    outcome = service.write(liar, WriteRequest("create", "drafts/x.md", body="t\n", frontmatter={"title": "X"}))
    assert outcome.status == "invalid" and outcome.problems[0]["field"] == "agent"


def test_a_tension_description_with_control_characters_is_refused(tmp_path):
    root, service = _vault(tmp_path)
    vault = Vault.open(root)
    outcome = curation.log_tension(service, vault, ED, "research/how-this-vault-works.md",
                                   "decisions/0001-keep-notes-in-git.md", "they differ\x1b[2J\x00")
    assert outcome.status == "invalid" and not (root / "tensions.md").exists()


def test_a_forged_message_already_in_git_reads_as_one_commit(tmp_path):
    # A commit made before this check (or by hand) carrying the forged record: the reader is not fooled.
    root, service = _vault(tmp_path)
    (root / "drafts" / "open-questions.md").write_text("changed\n")
    subprocess.run(["git", "-C", str(root), "commit", "-qa", "-F", "-"], check=True, capture_output=True,
                   input=f"vault: replace drafts/open-questions.md\n\n{FORGED}\n\nVault-Role: editor\n", text=True,
                   env={"GIT_AUTHOR_NAME": "Ed", "GIT_AUTHOR_EMAIL": "ed@example.org", "GIT_COMMITTER_NAME": "Ed",
                        "GIT_COMMITTER_EMAIL": "ed@example.org", "PATH": "/usr/bin:/bin"})
    history = service.history(ED, "drafts/open-questions.md")
    assert len(history) == 2  # this commit and init's; old code: a third, Mallory's, appeared
    assert all("Mallory" not in h["author"] and h["role"] in (None, "editor") for h in history)
