"""The PreCompact snapshot and /handoff keep no credential and commit nothing (issue 22, High).

The real scripts as Claude Code runs them, a real transcript file, a real curated vault with git.
"""

from __future__ import annotations

import json
import subprocess

from hookrun import hook_env, run_script
from vault_index.services.curation.scaffold import scaffold

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
PASSWORD = "Tr0ub4dor&3horse"
PROMPTS = [f"deploy with key {AWS_KEY} and secret {AWS_SECRET}",
           f"push using token {GITHUB} to the fork",
           f"the staging db: password: {PASSWORD}",
           "now fix the failing test in tests/services/test_write.py"]
SECRETS = (AWS_KEY, AWS_SECRET, GITHUB, PASSWORD)


def _transcript(path) -> str:
    records = [{"type": "user", "isSidechain": False, "sessionId": "s-1", "uuid": f"u{i}",
                "message": {"role": "user", "content": text}} for i, text in enumerate(PROMPTS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def test_the_snapshot_redacts_credentials_and_is_never_committed_in_a_curated_vault(tmp_path):
    vault = tmp_path / "vault"
    scaffold(vault)  # git.commit: true
    commits = _git(vault, "rev-list", "--count", "HEAD")
    payload = {"session_id": "5f0c2d1e-8a47", "transcript_path": _transcript(tmp_path / "t.jsonl"),
               "cwd": str(vault), "hook_event_name": "PreCompact", "trigger": "manual",
               "custom_instructions": f"keep {GITHUB} in mind"}
    done = run_script("precompact_snapshot.py", payload, hook_env(CLAUDE_PROJECT_DIR=str(vault)))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    (snapshot,) = (vault / "docs" / "handoffs" / "auto").glob("*.md")
    text = snapshot.read_text()
    assert not [s for s in SECRETS if s in text]  # old code: all four, verbatim
    assert "[redacted" in text and "tests/services/test_write.py" in text  # the rest is kept
    assert _git(vault, "rev-list", "--count", "HEAD") == commits  # old code: one commit more, secrets in it
    assert _git(vault, "log", "--all", "-p").count(AWS_KEY) == 0


def test_a_handoff_note_redacts_and_is_not_committed_either(tmp_path):
    vault = tmp_path / "vault"
    scaffold(vault)
    commits = _git(vault, "rev-list", "--count", "HEAD")
    done = run_script("handoff.py", "", hook_env(CLAUDE_PROJECT_DIR=str(vault)),
                      args=("new", "--topic", f"rotate {AWS_KEY}", "--session", "s-1", "--transcript",
                            _transcript(tmp_path / "t.jsonl")))
    assert done.returncode == 0, done.stderr
    note = vault / done.stdout.decode().splitlines()[0]
    assert not [s for s in SECRETS if s in note.read_text()]
    assert _git(vault, "rev-list", "--count", "HEAD") == commits


PROSE = ["the password for prod db is hunter2", "set the staging db password to Tr0ub4dor&3 before the demo",
         "the API key is sk-live-0042 so use it", "now fix the failing test in tests/services/test_write.py"]


def _snapshot(tmp_path, project, prompts, **env):
    records = [{"type": "user", "isSidechain": False, "sessionId": "s-1", "uuid": f"u{i}",
                "message": {"role": "user", "content": text}} for i, text in enumerate(prompts)]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    payload = {"session_id": "5f0c2d1e-8a47", "transcript_path": str(transcript), "cwd": str(project),
               "hook_event_name": "PreCompact", "trigger": "auto"}
    done = run_script("precompact_snapshot.py", payload, hook_env(CLAUDE_PROJECT_DIR=str(project), **env))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    (snapshot,) = (project / "docs" / "handoffs" / "auto").glob("*.md")
    return snapshot


def test_a_password_written_in_prose_is_redacted(tmp_path):
    """Issue 36 item 10: "the password for prod db is hunter2" has no `key: value` shape, and the old
    code copied it into docs/handoffs/auto/ verbatim."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    text = _snapshot(tmp_path, project, PROSE).read_text()
    assert not [s for s in ("hunter2", "Tr0ub4dor&3", "sk-live-0042") if s in text], text  # old code: all three
    assert "the password for prod db is [redacted" in text and "before the demo" in text
    assert "tests/services/test_write.py" in text  # the rest of what was said is kept


def test_auto_snapshots_stay_out_of_git_unless_the_person_opts_in(tmp_path):
    """Issue 36 item 10: never committed by us, but a person's `git add -A` took them, session text
    and all. The folder now ignores them; VAULT_SNAPSHOTS_IN_GIT=1 keeps them in the repository."""
    for opted in (False, True):
        project = tmp_path / f"project-{opted}"
        project.mkdir()
        _git(project, "init", "-q")
        snapshot = _snapshot(tmp_path, project, PROSE[-1:], **({"VAULT_SNAPSHOTS_IN_GIT": "1"} if opted else {}))
        seen = _git(project, "status", "--porcelain", "--untracked-files=all")
        assert (snapshot.name in seen) is opted, seen  # old code: listed, ready for `git add -A`
        assert (snapshot.parent / ".gitignore").exists() is not opted
