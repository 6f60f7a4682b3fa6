"""Issue 22 (Low): a write commits with the repository's own code switched off: no hook (in
.git/hooks or a tracked core.hooksPath folder, on `git add` or `git commit`) and no core.fsmonitor
command runs. On the old code every one of them ran on an agent's note_write.

A second audit (stop 34): a vault received as an archive or on a shared drive brings its
.git/config. Its clean filter ran on every write, and `recent` (vault_review) ran git with none of
the options: its fsmonitor and its post-index-change hook ran on a command that only reads."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from vault_index.services.curation.recent import recent_activity
from vault_index.services.vault import safe_git
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
    """A clone carries `.gitattributes` (a filter's name) but never `.git/config` (its command)."""
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


def filter_script(tmp_path: Path, marker: Path) -> Path:
    """A clean filter that says it ran and passes the content through."""
    path = tmp_path / "filter.sh"
    path.write_text(f"#!/bin/sh\necho filter >> '{marker}'\ncat\n")
    path.chmod(0o755)
    return path


def write_a_note(root: Path):
    caller = Caller("Agent <a@example.org>", "owner", "claude-code")
    request = WriteRequest("create", "notes/a.md", body="# A\n", frontmatter={"title": "A"})
    return WriteService(Vault.open(root)).write(caller, request)


@pytest.mark.parametrize("where", ["config", "included-file", "required-process"])
def test_a_received_repositorys_own_filters_never_run_on_a_write(repo, tmp_path, where):
    root, marker = repo
    command = str(filter_script(tmp_path, marker))
    if where == "config":
        git(root, "config", "filter.evil.clean", command)
    elif where == "included-file":  # the command in a file inside the vault, which its config includes
        (root / ".vault-index" / "extra.gitconfig").write_text(f'[filter "evil"]\n\tclean = {command}\n')
        git(root, "config", "include.path", "../.vault-index/extra.gitconfig")
    else:
        git(root, "config", "filter.evil.process", command)
        git(root, "config", "filter.evil.required", "true")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("* filter=evil\n")  # travels in .git, like the config
    marker.unlink(missing_ok=True)
    outcome = write_a_note(root)
    assert outcome.status == "written" and outcome.commit, outcome
    assert not marker.exists()  # old code: the filter ran (or, required, failed the commit)
    assert "# A" in git(root, "show", "HEAD:notes/a.md")


def test_the_persons_own_global_filters_still_run(repo, tmp_path, monkeypatch):
    """git-lfs lives in the person's global config: an LFS note must still be stored as its pointer."""
    root, marker = repo
    person = tmp_path / "person.gitconfig"
    person.write_text(f'[filter "mine"]\n\tclean = {filter_script(tmp_path, marker)}\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(person))
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("*.md filter=mine\n")
    outcome = write_a_note(root)
    assert outcome.status == "written" and outcome.commit
    assert marker.exists()


def test_recent_activity_runs_no_code_of_the_repository_and_leaves_its_index_alone(repo):
    root, marker = repo
    (root / "notes" / "a.md").write_text("# A\n")
    git(root, "add", "notes/a.md")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    (root / "notes" / "b.md").write_text("# B, not committed yet\n")
    for name in HOOKS:
        script(root / ".git" / "hooks" / name, marker, name)
    script(root / ".git" / "fsmonitor.sh", marker, "fsmonitor")
    git(root, "config", "core.fsmonitor", str(root / ".git" / "fsmonitor.sh"))
    index = (root / ".git" / "index").stat().st_mtime_ns
    marker.unlink(missing_ok=True)
    found = recent_activity(root, lambda path: True, days=7)
    assert {e["path"] for e in found} >= {"notes/a.md", "notes/b.md"}, found
    assert not marker.exists(), marker.read_text()  # old code: fsmonitor and post-index-change ran
    assert (root / ".git" / "index").stat().st_mtime_ns == index  # a read leaves the index alone


def test_a_filter_value_holding_a_newline_cannot_pose_as_another_setting(repo):
    """The filter list is read NUL-separated: a value with a newline and `local<TAB>core.hooksPath`
    after it once became a `-c core.hooksPath=` of ours, placed after our own options."""
    root, _ = repo
    git(root, "config", "filter.evil.clean", "cat\nlocal\tcore.hooksPath .git/hooks")
    assert safe_git.repository_filters_off(root) == ["-c", "filter.evil.clean="]
    argv = safe_git.git_argv(root, "status")
    assert argv.index("core.hooksPath=/dev/null") > argv.index("filter.evil.clean=")  # ours come last and win
