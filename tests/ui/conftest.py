"""A curated vault in git, indexed with the fake embedder, an agent's write in its history, another
project's source the vault's workspace must never show, and the page's routes over them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import FakeEmbedder, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.services.access.access import scope_for
from vault_index.services.app import App
from vault_index.services.writes.write import Caller, WriteRequest
from vault_index.surfaces.web import Principal

CONFIG = """\
version: 1
vault_name: ui
collections: [alpha, beta]
roles:
  admin: {read: ["*"], write: ["*"], promote: true}
  alpha_reader: {read: [alpha]}
git: {commit: true}
"""
HIDDEN_WORD = "quokkasecretword"  # in the other project's note and in beta: never on an alpha reader's page
MANY = 60
AGENT_TEXT = "The pump primes in ninety seconds, says the agent."


def note(title: str, words: str, status: str = "canonical") -> str:
    return (f"---\ntitle: {title}\nstatus: {status}\nconfidence: medium\ncreated: 2026-11-01\n"
            f"updated: 2026-11-01\nsources: [ui-test]\nttl_days: 90\n---\n# {title}\n\n{words}\n")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=Setup", "-c", "user.email=s@x", *args],
                          capture_output=True, text=True, check=True, timeout=30).stdout


@pytest.fixture
def site(tmp_path, monkeypatch):
    """(app, vault root, other project's note, principals by token)."""
    root = tmp_path / "vault"
    write(root, ".vault-index/config.yaml", CONFIG)
    write(root, "alpha/pump.md", note("Pump", "The pump primes in thirty seconds. See [[valve]]."))
    write(root, "alpha/valve.md", note("Valve", "The valve sits after the pump."))
    write(root, "alpha/idea.md", note("Idea", "A draft idea about the pump housing.", status="draft"))
    write(root, "beta/budget.md", note("Budget", f"The {HIDDEN_WORD} budget for the pump."))
    write(root, "secrets/keys.md", "# Keys\n\npump key 1234\n")
    for n in range(MANY):  # more notes that say "priming impeller" than either side's cut-off (50)
        words = f"Priming impeller pump, priming impeller pump {n}."
        write(root, f"beta/impeller-{n:02}.md", note(f"Impeller {n}", words))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    other = tmp_path / "other-project" / "docs"
    write(other, "plan.md", f"# Plan\n\nThe {HIDDEN_WORD} plan for the pump.\n")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    monkeypatch.delenv("VAULT_ROLE", raising=False)
    app = App.open(make_settings(tmp_path), models=Models.fixed(FakeEmbedder()), start=root)
    app.index([str(root)])
    app.store.add_source(str(other), scope=str(other.parent))  # another project's: hidden from this vault
    app.index([str(other)])
    agent = Caller("Claude <agent@x>", "admin", "claude-code")
    writer = app.writer(app.vault(root))
    view = writer.read(agent, "alpha/pump.md")
    body = view.body.replace("The pump primes in thirty seconds.", AGENT_TEXT)
    done = writer.write(agent, WriteRequest("replace", "alpha/pump.md", body=body, base_version=view.version,
                                            reason="the manual says ninety"))
    assert done.status == "written", done.message
    vault = app.vault(root)
    people = {role: Principal(Caller("Pat Person <pat@x>", role, "web page"), scope_for(vault, vault.grants(role)),
                              vault) for role in ("admin", "alpha_reader")}
    yield app, root, other / "plan.md", {"admin-token": people["admin"], "reader-token": people["alpha_reader"]}
    app.close()


@pytest.fixture
def authenticate(site):
    principals = site[3]

    async def check(token: str):
        return principals.get(token)

    return check
