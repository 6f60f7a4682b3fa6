"""Issue 22 (Low): a write commits with the repository's own code switched off: no hook (in
.git/hooks or a tracked core.hooksPath folder, on `git add` or `git commit`) and no core.fsmonitor
command runs. On the old code every one of them ran on an agent's note_write."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

CONFIG = "roles: {owner: {read: ['*'], write: ['*'], promote: true}}\nlocal_role: owner\ngit: {commit: true}\n"
HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-index-change",
         "reference-transaction")


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                          timeout=60).stdout


def script(path: Path, marker: Path, name: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexit 0\n")
    path.chmod(0o755)


@pytest.fixture
def repo(tmp_path) -> tuple[Path, Path]:
    root, marker = tmp_path / "vault", tmp_path / "ran.txt"
    (root / "notes").mkdir(parents=True)
    (root / ".vault-index").mkdir()
    (root / ".vault-index" / "config.yaml").write_text(CONFIG)
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
    return root, marker


@pytest.mark.parametrize("where", ["dot-git", "tracked-hooks-path"])
def test_no_hook_and_no_fsmonitor_runs_on_a_write(repo, where):
    root, marker = repo
    folder = root / ".git" / "hooks" if where == "dot-git" else root / ".githooks"
    for name in HOOKS:
        script(folder / name, marker, name)
    if where == "tracked-hooks-path":  # what husky or a README's `git config core.hooksPath .githooks` does
        git(root, "config", "core.hooksPath", ".githooks")
    script(root / ".git" / "fsmonitor.sh", marker, "fsmonitor")
    git(root, "config", "core.fsmonitor", str(root / ".git" / "fsmonitor.sh"))
    marker.unlink(missing_ok=True)  # the hooks may have run for the set-up's own commands

    service = WriteService(Vault.open(root))
    outcome = service.write(Caller("Agent <a@example.org>", "owner", "claude-code"),
                            WriteRequest("create", "notes/a.md", body="# A\n", frontmatter={"title": "A"}))
    assert outcome.status == "written" and outcome.commit, outcome
    assert not marker.exists(), marker.read_text()  # old code: every hook and the fsmonitor ran
    assert git(root, "log", "-1", "--format=%s").strip() == "vault: create notes/a.md"
    # the person's own git still runs them: only our commands switch them off
    (root / "notes" / "b.md").write_text("b\n")
    git(root, "add", "notes/b.md")
    assert marker.exists() and os.path.getsize(marker) > 0


def test_a_clone_brings_filter_names_but_never_their_commands(repo, tmp_path):
    """Filters stay on (an LFS note must be stored as its pointer), which is safe because a clone
    carries `.gitattributes` (the filter's name) but never `.git/config` (its command)."""
    origin, marker = repo
    script(tmp_path / "evil-clean.sh", marker, "clean-filter")
    git(origin, "config", "filter.evil.clean", str(tmp_path / "evil-clean.sh"))
    (origin / ".gitattributes").write_text("*.md filter=evil\n")
    git(origin, "add", ".gitattributes", ".vault-index/config.yaml")
    git(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "attributes")
    marker.unlink(missing_ok=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True, timeout=60)
    (clone / "notes").mkdir(exist_ok=True)
    outcome = WriteService(Vault.open(clone)).write(
        Caller("Agent <a@example.org>", "owner", "claude-code"),
        WriteRequest("create", "notes/a.md", body="# A\n", frontmatter={"title": "A"}))
    assert outcome.status == "written" and outcome.commit
    assert not marker.exists()
