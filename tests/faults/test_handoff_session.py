"""Fault suite, handoff: the session argument must not walk out of the transcript folder.

Before: `handoff.py new --session ../../x` looked up `projects/*/../../x.jsonl`, so any .jsonl on
the machine had its requests and touched files copied into a note in the project.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

TIMEOUT_S = 60
LONG = REPO / "tests" / "hooks" / "fixtures" / "long_session.jsonl"
LEAK = "/recall garden sensor battery"  # a request in LONG: in a note, it came from that transcript


def run_handoff(project: Path, claude: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "VAULT_"))}
    env.update(CLAUDE_PROJECT_DIR=str(project), CLAUDE_CONFIG_DIR=str(claude))
    return subprocess.run([sys.executable, str(REPO / "scripts" / "handoff.py"), "new", "--json", *args],
                          capture_output=True, text=True, env=env, timeout=TIMEOUT_S)


@pytest.fixture
def places(tmp_path):
    """(project, claude config folder, its projects folder); a transcript lies OUTSIDE projects/."""
    project, claude = tmp_path / "project", tmp_path / "claude"
    project.mkdir()
    (claude / "projects" / "-some-project").mkdir(parents=True)
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "diary.jsonl").write_bytes(LONG.read_bytes())
    return project, claude, claude / "projects"


@pytest.mark.parametrize("session", ["../../private/diary", "../../../private/diary", "*/../../../private/diary",
                                     "..", "a/b", "x*", "?"])
def test_a_session_id_that_is_not_an_id_is_not_used_to_find_a_transcript(places, session):
    project, claude, _ = places
    done = run_handoff(project, claude, "--session", session)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    out = json.loads(done.stdout)
    assert "is not a session id" in done.stderr and out["session_id"] is None
    assert LEAK not in (project / out["path"]).read_text(encoding="utf-8")


def test_a_transcript_linked_from_the_projects_folder_to_outside_is_not_read(places, tmp_path):
    project, claude, projects = places
    session = "5f0c2d1e-8a47-4b2e-9c3d-0a1b2c3d4e5f"
    (projects / "-some-project" / f"{session}.jsonl").symlink_to(tmp_path / "private" / "diary.jsonl")
    mine = projects / re.sub(r"[^A-Za-z0-9]", "-", str(project.resolve()))
    mine.mkdir()
    (mine / "newest.jsonl").symlink_to(tmp_path / "private" / "diary.jsonl")
    for args in (("--session", session), ()):
        done = run_handoff(project, claude, *args)
        assert done.returncode == 0 and "Traceback" not in done.stderr
        note = project / json.loads(done.stdout)["path"]
        assert LEAK not in note.read_text(encoding="utf-8")


def test_a_real_session_id_still_finds_its_transcript(places):
    project, claude, projects = places
    session = "5f0c2d1e-8a47-4b2e-9c3d-0a1b2c3d4e5f"
    (projects / "-some-project" / f"{session}.jsonl").write_bytes(LONG.read_bytes())
    done = run_handoff(project, claude, "--session", session)
    out = json.loads(done.stdout)
    assert out["session_id"] == session and done.stderr == ""
    assert LEAK in (project / out["path"]).read_text(encoding="utf-8")
