"""Every hook script exits 0 with no traceback, whatever arrives on stdin."""

from __future__ import annotations

import json

import pytest
from hookrun import answer, hook_env, run_script

HOOKS = ("reindex_hook.py", "context_guard.py", "precompact_snapshot.py", "capture_hook.py")
BAD_STDIN = [
    b"", b"   \n", b"not json", b"\xff\xfe\x00garbage", b"[1, 2, 3]", b'"a string"', b"null", b"{",
    b'{"tool_input": "not an object", "tool_response": 5, "cwd": 7, "transcript_path": ["x"]}',
    b'{"tool_input": {"file_path": 12}, "prompt": {"x": 1}, "session_id": null, "trigger": false}',
    b'{"tool_input": {"file_path": "a\\u0000b.md"}, "transcript_path": "\\u0000", "cwd": "\\u0000"}',
    b'{"unknown_field": {"deep": [1, {"x": null}]}, "hook_event_name": "Mystery"}',
]


@pytest.mark.parametrize("script", HOOKS)
@pytest.mark.parametrize("stdin", BAD_STDIN, ids=range(len(BAD_STDIN)))
def test_bad_stdin_exits_zero_without_a_traceback(script, stdin, project):
    done = run_script(script, stdin, hook_env(CLAUDE_PROJECT_DIR=str(project)))
    assert answer(done) is None  # asserts exit 0 and no traceback
    assert len(done.stderr.decode().splitlines()) <= 1
    assert not (project / "docs").exists()  # no session, no transcript: no snapshot of nothing


@pytest.mark.parametrize("stdin", BAD_STDIN, ids=range(len(BAD_STDIN)))
def test_session_start_invariants_hook_exits_zero_on_bad_stdin(stdin, project):
    done = run_script("invariants.py", stdin, hook_env(CLAUDE_PROJECT_DIR=str(project)), ("--hook",))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    if done.stdout.strip():  # this bare project is not wired, so it reports; the shape must hold
        report = json.loads(done.stdout)
        assert report["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        assert report["systemMessage"].startswith("vault-index:")


def test_an_unwritable_project_is_one_line_on_stderr(tmp_path):
    blocker = tmp_path / "docs"
    blocker.write_text("a file where the docs folder should be")
    done = run_script("precompact_snapshot.py", {"session_id": "s", "trigger": "auto"},
                      hook_env(CLAUDE_PROJECT_DIR=str(tmp_path)))
    assert answer(done) is None
    assert len(done.stderr.decode().strip().splitlines()) == 1 and "precompact_snapshot" in done.stderr.decode()


def test_a_closed_stdin_is_handled(project):
    import shlex
    import subprocess
    import sys

    from hookrun import SCRIPTS

    for script in HOOKS:  # `<&-`: no file descriptor 0 at all, so sys.stdin is None
        command = f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPTS / script))} <&-"
        done = subprocess.run(command, shell=True, capture_output=True,
                              env=hook_env(CLAUDE_PROJECT_DIR=str(project)), timeout=60)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr


def test_handoff_with_bad_arguments_exits_zero(project):
    done = run_script("handoff.py", "", hook_env(CLAUDE_PROJECT_DIR=str(project)), args=("bogus", "--nope"))
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert not (project / "docs").exists()
